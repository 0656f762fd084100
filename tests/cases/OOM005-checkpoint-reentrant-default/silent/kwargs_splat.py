from torch.utils.checkpoint import checkpoint


def forward(self, x):
    # The options come from the config, which sets use_reentrant.
    return checkpoint(self.block, x, **self.checkpoint_kwargs)
