import torch


def critic_step(critic, real, fake, optimizer, weight=10.0):
    for _ in range(5):
        mixed = (0.5 * real + 0.5 * fake).requires_grad_(True)
        scores = critic(mixed)
        grads = torch.autograd.grad(scores.sum(), mixed, create_graph=True, retain_graph=True)[0]
        penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + weight * penalty
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
