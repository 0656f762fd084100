# The helper hands back a detached copy next to the loss; only that copy is kept.
import torch.nn.functional as F


def compute_loss(model, x, y):
    loss = F.cross_entropy(model(x), y)
    return loss, loss.detach()


def train(model, loader, optimizer):
    kept = []
    for x, y in loader:
        loss = compute_loss(model, x, y)[0]
        loss.backward()
        optimizer.step()
        kept.append(compute_loss(model, x, y)[1])
    return kept
