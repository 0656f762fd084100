import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, criterion):
    losses = []
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        value = loss.item()
        losses.append(value)
        total += value
        loss = loss.detach()
        losses.append(loss)
