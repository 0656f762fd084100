import torch
import torch.nn as nn
import torch.nn.functional as F

def infer(encoder, batch):
    encoder.eval()
    return encoder.forward(batch).argmax(-1)
