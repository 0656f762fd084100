# At module level, a list made anew each epoch but filled once per batch: it is dropped
# at the next epoch, yet within one epoch it keeps every batch's graph.
import torch
import torch.nn as nn

network = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 1))
val_loader = [(torch.randn(16, 4), torch.randn(16, 1)) for _ in range(100)]

for epoch in range(20):
    val_losses = []
    for inputs, targets in val_loader:
        val_losses.append(nn.functional.mse_loss(network(inputs), targets))
    print(epoch, sum(v.item() for v in val_losses) / len(val_losses))
