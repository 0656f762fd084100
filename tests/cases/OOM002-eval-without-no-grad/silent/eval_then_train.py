import torch
import torch.nn as nn
import torch.nn.functional as F

model.eval()
print(model(sample))
model.train()
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
