import torch
import torch.nn as nn
import torch.nn.functional as F

def compute_loss(model, chunks, criterion):
    total = 0
    for x, y in chunks:
        total += criterion(model(x), y)
    return total / len(chunks)


def per_chunk_losses(model, chunks, criterion):
    losses = []
    for x, y in chunks:
        losses.append(criterion(model(x), y))
    return torch.stack(losses)
