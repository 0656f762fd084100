# Paths kept for PyTorch releases without `torch.amp`: the modern spelling would break
# exactly the release each branch is for.
from typing import Optional

import torch

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split(".")[:2])


def make_scaler(device="cuda"):
    try:
        return torch.amp.GradScaler(device)
    except AttributeError:
        return torch.cuda.amp.GradScaler()


def autocast_context():
    if TORCH_VERSION < (2, 3):
        return torch.cuda.amp.autocast()
    return torch.amp.autocast("cuda")


def pick_autocast():
    if hasattr(torch, "amp") and hasattr(torch.amp, "autocast"):
        return torch.amp.autocast
    else:
        return torch.cuda.amp.autocast


class Stepper:
    def __init__(self, scaler: Optional[torch.cuda.amp.GradScaler] = None):
        self.scaler = scaler
