# A diffusion training script loading its EMA weights to the CPU first.
import torch
from diffusers import UNet2DConditionModel


def load_ema(unet: UNet2DConditionModel, path: str, accelerator):
    ema_state = torch.load(path, map_location="cpu", weights_only=True)
    unet.load_state_dict(ema_state)
    return accelerator.prepare(unet)
