import torch
import torch.nn as nn
import torch.nn.functional as F

def gather(model, val_loader):
    all_logits = []
    for x, _ in val_loader:
        logits = model(x)
        all_logits.append(logits.cpu())
    return torch.cat(all_logits).argmax(-1)
