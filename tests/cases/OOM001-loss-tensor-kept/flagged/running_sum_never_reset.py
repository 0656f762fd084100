# A running sum made once before millions of steps and never reset: each step's loss,
# backpropagated or not, chains its autograd nodes onto the sum for the whole run. On the
# CPU as on the GPU, memory grows with every step.
import torch
import torch.nn as nn

net = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
total, count = 0, 0

for step in range(1, 5_000_000):
    x = torch.rand(128, 1)
    loss = (net(x) - x.sin()).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += loss
    count += 1
    if step % 1000 == 0:
        print(step, float(total) / count)
