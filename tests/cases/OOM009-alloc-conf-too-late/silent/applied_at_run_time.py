# Switching expandable segments off around a colocated inference engine: the running
# allocator takes the setting through `_set_allocator_settings`, and the variable is
# written only so that the engine's worker processes start with the same setting.
import os

import torch


def toggle_expandable_segments(model, enable):
    model.cuda()
    torch.cuda.memory._set_allocator_settings(f"expandable_segments:{enable}")
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = f"expandable_segments:{enable}"
