# The latent update keeps the graph, and the sampler calls it once per step: nothing
# differentiates through that graph again before the next step's forward pass.
import torch


def nudge(latents, loss, step_size):
    grad = torch.autograd.grad(loss, [latents], retain_graph=True)[0]
    return latents - step_size * grad


def sample(unet, latents, timesteps, target, step_size):
    for t in timesteps:
        latents = latents.detach().requires_grad_(True)
        noise = unet(latents, t)
        loss = (noise - target).pow(2).mean()
        latents = nudge(latents, loss, step_size)
    return latents
