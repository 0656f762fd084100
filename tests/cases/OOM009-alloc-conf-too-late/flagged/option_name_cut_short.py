# `roundup_power2` is the start of an option's name, not an option.
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:64,roundup_power2:True"

import torch

model = torch.nn.Linear(512, 512).to("cuda")
