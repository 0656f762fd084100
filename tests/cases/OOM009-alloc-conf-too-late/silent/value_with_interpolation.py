# Adjacent strings with an interpolated part: the value is known only when it runs, so
# its options are not read (the text `{growth}` is not an option name).
import os

import torch

growth = "expandable_segments" if torch.version.hip is None else "max_split_size_mb"
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = (
    f"{growth}:True,"
    "garbage_collection_threshold:0.8"
)

batch = torch.zeros(16, 1024, device="cuda")
