import os

import torch

model = torch.nn.Linear(8, 8).cuda()
os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
settings["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
