# The sum is reset every epoch, but each epoch's average is appended to a history made
# once: every epoch's chain of autograd nodes (and its scalar on the GPU) stays alive for
# the whole run.
import torch


def fit(model, loader, optimizer, criterion, epochs):
    history = {"loss": []}
    for epoch in range(epochs):
        epoch_cost = 0.0
        for x, y in loader:
            cost = criterion(model(x), y)
            optimizer.zero_grad()
            cost.backward()
            optimizer.step()
            epoch_cost += cost
        epoch_cost /= len(loader)
        history["loss"].append(epoch_cost)
    return history
