import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, optimizer, criterion, accumulation=4):
    seen = []
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accumulation
        scaled = loss * 2
        loss.backward()
        seen.append(scaled)
