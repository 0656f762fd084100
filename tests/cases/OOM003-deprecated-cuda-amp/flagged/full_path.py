import torch

with torch.cuda.amp.autocast(enabled=True):
    out = model(x)
with torch.cpu.amp.autocast():
    out = model(x)
