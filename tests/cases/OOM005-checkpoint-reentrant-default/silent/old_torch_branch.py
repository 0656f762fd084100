# A block that checkpoints its layers on every PyTorch release it supports: the modern
# branch passes use_reentrant=False, the branch for releases before 1.11 cannot (the
# argument does not exist there, and those releases do not warn).
import torch
import torch.utils.checkpoint
from packaging import version


def run_layers(layers, hidden, training):
    for layer in layers:
        if training:
            if version.parse(torch.__version__) >= version.parse("1.11.0"):
                hidden = torch.utils.checkpoint.checkpoint(layer, hidden, use_reentrant=False)
            else:
                hidden = torch.utils.checkpoint.checkpoint(layer, hidden)
        else:
            hidden = layer(hidden)
    return hidden


def run_blocks(blocks, x):
    try:
        from torch.utils.checkpoint import checkpoint_sequential
        return checkpoint_sequential(blocks, 2, x, use_reentrant=False)
    except TypeError:
        return checkpoint_sequential(blocks, 2, x)
