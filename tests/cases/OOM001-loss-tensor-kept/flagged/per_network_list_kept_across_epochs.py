# The same side-by-side comparison of two networks, but the list is made once before the
# epochs: every epoch adds one graph per network and none is ever dropped.
import torch
import torch.nn as nn

wide = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 1))
narrow = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
networks = [wide, narrow]
optimizers = [torch.optim.SGD(n.parameters(), lr=0.1) for n in networks]
probe = torch.randn(32, 4)
batches = [(torch.randn(16, 4), torch.randn(16, 1)) for _ in range(10)]

predictions = []
for epoch in range(20):
    for network in networks:
        predictions.append(network(probe))
    for inputs, targets in batches:
        for network, optimizer in zip(networks, optimizers):
            loss = nn.functional.mse_loss(network(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
