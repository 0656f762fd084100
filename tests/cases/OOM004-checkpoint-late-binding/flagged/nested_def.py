import torch
from torch.utils.checkpoint import checkpoint


def run_blocks(blocks, x):
    for block in blocks:
        def run(t):
            return block(t)
        x = checkpoint(run, x, use_reentrant=False)
    return x
