import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segment:True,max_split_size_mb:256"

import torch

weights = torch.zeros(1024, device="cuda")
