import torch
import torch.nn as nn
import torch.nn.functional as F

@torch.no_grad()
def helper(x):
    return x * 2


def test(model, test_loader):
    model.eval()
    for x, _ in test_loader:
        print(model(x).shape)
