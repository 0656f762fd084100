# A switch the user sets to trade speed for memory, and a network's own forward pass that
# offloads per-frame features to the host.
import torch
from torch import nn


def guided_denoise(unet, latents, steps, clear_cache=False):
    for t in steps:
        latents = unet(latents, t)
        if clear_cache:
            torch.cuda.empty_cache()
    return latents


class VideoNet(nn.Module):
    def forward(self, frames):
        features = []
        for frame in frames:
            features.append(self.extract(frame).cpu())
            torch.cuda.empty_cache()
        return features
