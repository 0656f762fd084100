# A running sum local to one epoch's function: each step's backward frees the buffers
# its graph saved, and the chain of small autograd nodes the sum keeps goes when the
# function returns. Only a number leaves it.
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
