# Per-step terms of the loss kept in a dict of lists made for this one epoch: the
# backward of the loss they feed frees their buffers every step, and only numbers leave.
import torch


def train_epoch(model, loader, optimizer, kl_weight):
    stats = {"kl": [], "recon": []}
    for x in loader:
        recon, kl = model(x)
        loss = recon + kl_weight * kl
        loss.backward()
        optimizer.step()
        stats["kl"].append(kl)
        stats["recon"].append(recon)
    return {k: torch.stack(v).mean().item() for k, v in stats.items()}
