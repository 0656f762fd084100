import torch

autocast_ctx = torch.cuda.amp.autocast
with autocast_ctx():
    out = model(x)
