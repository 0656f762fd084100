def train_epoch(model, batches, optimizer, criterion, hidden):
    for data, targets in batches:
        for h in hidden:
            h.detach_()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        optimizer.step()
