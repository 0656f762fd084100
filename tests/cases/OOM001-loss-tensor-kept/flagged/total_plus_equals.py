import torch
import torch.nn as nn
import torch.nn.functional as F

def train_epoch(model, loader, optimizer, loss_fn):
    epoch_loss = 0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_loss += loss
    print(epoch_loss.item() / len(loader))
