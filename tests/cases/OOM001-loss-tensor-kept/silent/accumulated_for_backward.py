import torch
import torch.nn as nn
import torch.nn.functional as F

def train_step(model, batches, optimizer, criterion):
    total = 0
    for x, y in batches:
        loss = criterion(model(x), y)
        total = total + loss
    total.backward()
    optimizer.step()


def multitask(model, heads, x, ys, criterion):
    losses = []
    for head, y in zip(heads, ys):
        losses.append(criterion(head(model(x)), y))
    torch.stack(losses).sum().backward()


def amp_step(model, batches, scaler, criterion):
    total_loss = 0
    for x, y in batches:
        total_loss += criterion(model(x), y)
    scaler.scale(total_loss).backward()
