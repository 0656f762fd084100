# The epoch's sum is local to the training function, but a closure made there reads it,
# and the closure may outlive the pass (handed to a logger, kept in a list of callbacks).
def train_epoch(model, loader, optimizer, criterion, callbacks):
    epoch_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss
    callbacks.append(lambda: epoch_loss)
