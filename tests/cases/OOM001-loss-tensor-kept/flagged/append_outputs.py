import torch
import torch.nn as nn
import torch.nn.functional as F

def predict(model, test_loader):
    outputs = []
    for x in test_loader:
        out = model(x)
        outputs.append(out)
    return torch.cat(outputs).argmax(1)
