import torch
import torch.nn as nn
import torch.nn.functional as F

def evaluate(model, loader):
    history = {}
    for step, (x, y) in enumerate(loader):
        history[step] = F.mse_loss(model(x), y)
    return {k: v.item() for k, v in history.items()}
