# A helper named for the backward pass that calls autograd's backward itself: the step
# does use autograd, and the loss it keeps still holds its graph's nodes.
def backward_step(loss, optimizer):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def train(model, criterion, optimizer, train_loader):
    losses = []
    for x, y in train_loader:
        loss = criterion(model(x), y)
        backward_step(loss, optimizer)
        losses.append(loss)
    return losses
