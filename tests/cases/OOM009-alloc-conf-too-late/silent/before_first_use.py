import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:512"

import torch

if torch.cuda.is_available() and torch.cuda.device_count() > 0:
    device = torch.device("cuda")
    model = torch.nn.Linear(8, 8).to(device)
