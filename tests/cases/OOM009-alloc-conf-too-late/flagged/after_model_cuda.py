import os

import torch
from torch import nn

model = nn.Linear(1024, 1024).cuda()
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"  # against fragmentation
optimizer = torch.optim.AdamW(model.parameters())
