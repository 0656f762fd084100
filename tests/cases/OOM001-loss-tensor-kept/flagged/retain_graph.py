import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward(retain_graph=True)
        optimizer.step()
        losses.append(loss)
