import torch
import torch.nn as nn
import torch.nn.functional as F

def validate(model, val_loader, criterion):
    model.eval()
    losses, outputs = [], []
    with torch.no_grad():
        for x, y in val_loader:
            out = model(x)
            losses.append(criterion(out, y))
            outputs.append(out)
    return losses, outputs
