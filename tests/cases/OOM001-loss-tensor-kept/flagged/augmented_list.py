import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, optimizer):
    losses = []
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses += [loss]
