# The check at the bottom of a model file: build the network, push one made-up batch
# through it and print the output's shape. One forward pass on two random samples.
import torch
import torch.nn as nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    def forward(self, x):
        return self.body(x)


def test():
    net = TinyNet()
    net.eval()
    sample = torch.randn(2, 3, 32, 32)
    print(net(sample).shape)
    print(net((torch.rand(1, 3, 32, 32))).shape)
