def train(model, loader, optimizer, criterion, keep_graph):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward(retain_graph=keep_graph)
        optimizer.step()
