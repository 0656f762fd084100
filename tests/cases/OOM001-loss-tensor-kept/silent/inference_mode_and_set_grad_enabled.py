import torch
import torch.nn as nn
import torch.nn.functional as F

@torch.inference_mode()
def predict(model, loader):
    outs = []
    for x in loader:
        outs.append(model(x))
    return outs


def score(model, loader):
    torch.set_grad_enabled(False)
    outs = []
    for x in loader:
        outs.append(model(x))
    return outs


def score_with(model, loader):
    outs = []
    with torch.set_grad_enabled(False):
        for x in loader:
            outs.append(model(x))
    return outs
