def fit(model, batches, optimizer, criterion, h, c):
    for x, y in batches:
        out, (h, c) = model(x, (h, c))
        loss = criterion(out, y)
        loss.backward(retain_graph=True)
        optimizer.step()
