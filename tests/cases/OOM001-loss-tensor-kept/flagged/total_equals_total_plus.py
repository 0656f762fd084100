import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Linear(8, 2)
criterion = nn.CrossEntropyLoss()
running = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    running = running + loss
print(running)
