def fine_tune_once(model, batch, criterion, optimizer):
    loss = criterion(model(batch[0]), batch[1])
    loss.backward(retain_graph=True)
    optimizer.step()
    return loss
