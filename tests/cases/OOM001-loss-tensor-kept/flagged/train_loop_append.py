import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, optimizer, criterion):
    history = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss)
    return history
