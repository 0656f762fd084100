import torch
from torch.cuda.amp import autocast, GradScaler

scaler = GradScaler()
with autocast():
    loss = model(x).sum()
scaler.scale(loss).backward()
