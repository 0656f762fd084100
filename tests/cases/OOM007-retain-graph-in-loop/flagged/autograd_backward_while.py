import torch


def train(model, stream, optimizer, criterion):
    while stream.has_next():
        x, y = stream.next()
        loss = criterion(model(x), y)
        torch.autograd.backward(loss, retain_graph=True)
        optimizer.step()
        optimizer.zero_grad()
