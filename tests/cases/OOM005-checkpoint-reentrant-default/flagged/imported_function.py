import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x)
        return x
