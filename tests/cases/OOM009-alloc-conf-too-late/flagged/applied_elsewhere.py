# The runtime switch lives in another function; this one only writes the variable after
# the model is already on the GPU, which the allocator never reads again.
import os

import torch


def apply_allocator_setting(setting):
    torch.cuda.memory._set_allocator_settings(setting)


def prepare(model):
    model.cuda()
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    return model
