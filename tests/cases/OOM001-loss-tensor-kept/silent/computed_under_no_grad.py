import torch
import torch.nn as nn
import torch.nn.functional as F

def validate(model, val_loader):
    outputs = []
    for x, _ in val_loader:
        with torch.no_grad():
            out = model(x)
        outputs.append(out)
    return outputs
