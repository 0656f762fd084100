# None of these calls initializes CUDA: releasing the cache and reading the counters do
# nothing before the first allocation, and the CUDA seed is queued until then. The
# setting below is still read when the model is first moved to the device.
import os
import random

import torch


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


seed_everything(0)
torch.cuda.empty_cache()
print(f"{torch.cuda.memory_allocated() / 2**20:.0f} MiB allocated")
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"

model = torch.nn.Linear(1024, 1024).cuda()
