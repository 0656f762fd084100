import torch
import torch.nn as nn
import torch.nn.functional as F

def train_and_validate(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()


def evaluate_and_finetune(model, val_loader, optimizer, criterion):
    for x, y in val_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
