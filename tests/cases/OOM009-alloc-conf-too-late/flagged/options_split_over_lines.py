# A long value written as adjacent strings, one option per line with its reason: the
# allocator still reads the whole value, and one of the names is not an option.
import os


def configure_allocator():
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = (
        "max_split_size_mb:256,"  # keep large blocks whole
        "garbage_collection_threshold:0.7,"  # reclaim cached blocks earlier
        "expandable_segment:True"  # grow segments instead of adding new ones
    )


configure_allocator()

import torch

features = torch.empty(8, 3, 224, 224, device="cuda")
