# The forward pass happens inside a decoding helper; the evaluation loop calling it has
# autograd on.
import torch


def greedy_decode(model, source, steps):
    tokens = source[:, :1]
    for _ in range(steps):
        logits = model(source, tokens)
        tokens = torch.cat([tokens, logits[:, -1:].argmax(-1)], dim=1)
    return tokens


def evaluate(model, val_loader, steps):
    model.eval()
    hits = 0
    for source, target in val_loader:
        hits += (greedy_decode(model, source, steps) == target).sum().item()
    return hits
