import torch
from torch.amp import GradScaler, autocast

scaler = GradScaler("cuda")
with autocast("cuda"):
    pass
with torch.autocast("cuda", dtype=torch.bfloat16):
    pass
with torch.amp.autocast(device_type="cuda"):
    pass


@torch.amp.custom_fwd(device_type="cuda")
def f(x):
    return x
