# The loss is turned into a Python number before it is weighted and summed: the in-place
# product is a float, and nothing of the graph outlives the step.
import torch


def train_epoch(model, loader, optimizer, criterion, device):
    model.train()
    running = 0.0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs.to(device)), targets.to(device))
        loss.backward()
        optimizer.step()
        batch_loss = loss.item()
        batch_loss *= inputs.size(0)
        running += batch_loss
    return running
