# The image encoder is frozen: its outputs carry no graph, so caching them per batch
# keeps only the tensors.
import torch


def cache_latents(image_encoder, loader):
    image_encoder.eval().requires_grad_(False)
    cached = []
    for images in loader:
        cached.append(image_encoder(images))
    return cached
