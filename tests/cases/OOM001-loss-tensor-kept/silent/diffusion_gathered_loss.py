# A diffusion training step: the loss gathered across processes and kept as a number.
import torch


def diffusion_step(unet, noise_scheduler, batch, accelerator, losses):
    latents = batch["latents"]
    noise = torch.randn_like(latents)
    timesteps = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
    noisy = noise_scheduler.add_noise(latents, noise, timesteps)
    pred = unet(noisy, timesteps, batch["encoder_hidden_states"]).sample
    loss = torch.nn.functional.mse_loss(pred.float(), noise.float(), reduction="mean")
    avg_loss = accelerator.gather(loss.repeat(latents.shape[0])).mean()
    accelerator.backward(loss)
    losses.append(avg_loss.item())
    return loss
