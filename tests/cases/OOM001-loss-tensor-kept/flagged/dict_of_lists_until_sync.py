# Per-step statistics kept with their graphs in a dict of lists, reduced only at the
# end of the epoch.
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
