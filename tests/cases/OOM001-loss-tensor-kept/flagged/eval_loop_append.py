import torch
import torch.nn as nn
import torch.nn.functional as F

def validate(model, val_loader, criterion):
    model.eval()
    losses = []
    for x, y in val_loader:
        loss = criterion(model(x), y)
        losses.append(loss)
    return sum(l.item() for l in losses) / len(losses)
