import torch
import torch.nn.functional as F


def train_step(unet, noise_scheduler, latents, encoder_hidden_states, optimizer):
    noise = torch.randn_like(latents)
    timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],), device=latents.device)
    noisy = noise_scheduler.add_noise(latents, noise, timesteps)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        pred = unet(noisy, timesteps, encoder_hidden_states).sample
        loss = F.mse_loss(pred.float(), noise.float())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()
