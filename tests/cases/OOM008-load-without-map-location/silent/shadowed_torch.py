# `torch` here is a project module, not PyTorch.
from myproject import torch


def restore(path):
    return torch.load(path)
