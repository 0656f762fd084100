# Importing torch, asking whether a GPU exists and building a device object do not
# initialize the allocator.
import os

import torch

print(torch.cuda.is_available(), torch.cuda.device_count())
target = torch.device("cuda:0")
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"
tensor = torch.ones(4, device=target)
