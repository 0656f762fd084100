def train(model, loader, optimizer, criterion):
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward(retain_graph=True)
        optimizer.step()
