# The helper keeps the graph for a second gradient through it, taken right after.
import torch


def two_gradients(latents, loss_a, loss_b):
    first = torch.autograd.grad(loss_a, [latents], retain_graph=True)[0]
    second = torch.autograd.grad(loss_b, [latents])[0]
    return first + second


def sample(unet, latents, timesteps):
    for t in timesteps:
        latents = latents.detach().requires_grad_(True)
        out = unet(latents, t)
        latents = latents - two_gradients(latents, out.mean(), out.std())
    return latents
