from torch.utils.checkpoint import checkpoint


def forward(self, x, layers):
    x = checkpoint(lambda t: self.block(t), x, use_reentrant=False)
    for layer in layers:
        x = checkpoint(lambda t: self.block(t) * 2, x, use_reentrant=False)
    return x
