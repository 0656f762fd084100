import torch
import torch.nn as nn
import torch.nn.functional as F

def evaluate(model, val_loader):
    model.eval()
    total = 0
    with torch.no_grad():
        for x, y in val_loader:
            total += (model(x).argmax(1) == y).sum().item()
    return total
