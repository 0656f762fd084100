import torch
import torch.nn as nn
import torch.nn.functional as F

def collect(loader, tokenizer):
    batches, names, sizes = [], [], []
    for batch in loader:
        batches.append(batch)
        names.append("step")
        sizes.append(len(batch))
        encoded = tokenizer(batch)
        batches.append(encoded)
