import torch


def forward(self, x):
    # The reentrant variant, on purpose, said explicitly.
    return torch.utils.checkpoint.checkpoint(self.body, x, use_reentrant=True)
