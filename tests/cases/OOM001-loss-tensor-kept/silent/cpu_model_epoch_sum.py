# The same per-epoch running sum for a small model trained on the CPU: bounded by one
# epoch like any other, and holding no GPU memory at all.
import torch
import torch.nn as nn

net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).to("cpu")
loss_function = nn.CrossEntropyLoss()
sgd = torch.optim.SGD(net.parameters(), lr=0.05)

for epoch in range(3):
    running = 0
    for features, target in loader:
        features, target = features.to("cpu"), target.to("cpu")
        loss = loss_function(net(features), target)
        running += loss
        sgd.zero_grad()
        loss.backward()
        sgd.step()
    running /= len(loader)
    print(f"{epoch}: {running:.3f}")
