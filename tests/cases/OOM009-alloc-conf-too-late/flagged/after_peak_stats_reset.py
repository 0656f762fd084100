# The peak counters are reset before the setting is written: with no device given, the
# reset asks for the current device, and that first question initializes CUDA.
import gc
import os

import torch


def main(steps):
    gc.collect()
    torch.cuda.reset_peak_memory_stats()
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    weights = torch.randn(4096, 4096, device="cuda")
    for _ in range(steps):
        weights = weights @ weights.T
    return torch.cuda.max_memory_allocated()
