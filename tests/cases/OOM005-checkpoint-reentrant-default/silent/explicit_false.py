from torch.utils.checkpoint import checkpoint


def forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x
