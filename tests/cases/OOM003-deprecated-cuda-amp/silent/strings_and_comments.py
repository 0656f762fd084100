import torch

# torch.cuda.amp.autocast() is deprecated; we use torch.amp.autocast("cuda")
MESSAGE = "torch.cuda.amp.autocast is deprecated"
DOC = """from torch.cuda.amp import autocast"""
with torch.amp.autocast("cuda"):
    pass
