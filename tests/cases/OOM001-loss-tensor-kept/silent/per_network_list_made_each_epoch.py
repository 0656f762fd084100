# A script at module level compares two networks once per epoch: the snapshot lists are
# made anew at the top of each epoch and get one entry per network, so they never hold
# more than two graphs, however many epochs run.
import torch
import torch.nn as nn

wide = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 1))
narrow = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
networks = [wide, narrow]
optimizers = [torch.optim.SGD(n.parameters(), lr=0.1) for n in networks]
probe = torch.randn(32, 4)
batches = [(torch.randn(16, 4), torch.randn(16, 1)) for _ in range(10)]


def show(first, second):
    print(first.data.norm().item(), second.data.norm().item())


for epoch in range(20):
    hidden_outputs, predictions = [], []
    for network in networks:
        predictions.append(network(probe))
        hidden_outputs.append(network[0](probe))
    show(*predictions)
    show(*hidden_outputs)
    for inputs, targets in batches:
        for network, optimizer in zip(networks, optimizers):
            loss = nn.functional.mse_loss(network(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
