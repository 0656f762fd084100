import os

import torch
import torch.distributed as dist
from torch.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP


def main(model, loader, optimizer, criterion):
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    model = DDP(model.to(rank), device_ids=[rank])
    scaler = GradScaler("cuda")
    for x, y in loader:
        with autocast("cuda"):
            loss = criterion(model(x.to(rank)), y.to(rank))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
