import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_grad_enabled(False)
model = nn.Linear(4, 2)
model.eval()
for x in loader:
    print(model(x))
