"""Steps `oomlint predict` cannot predict, each for its own reason (tests/predict.rs)."""

import torch
from torch import nn


def fails(batch_size):
    model = nn.Linear(10, 10)
    x = torch.randn(batch_size, 10)
    raise ValueError(f"bad config for batch {batch_size}")


def needs_data(batch_size):
    x = torch.randn(batch_size, 10)
    kept = x[x > 0]
    return kept.sum()


def reads_values(batch_size):
    x = torch.randn(batch_size, 10)
    return x.cpu().numpy()


def host_memory(batch_size):
    buffer = bytearray(1 << 50)
    return buffer
