# Backward runs only on every fourth step: the losses of the other steps keep their whole
# graphs, buffers included, chained onto the epoch's sum.
def train_epoch(model, loader, optimizer, criterion):
    epoch_loss = 0
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        epoch_loss += loss
        if i % 4 == 3:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    print(epoch_loss.item() / len(loader))
