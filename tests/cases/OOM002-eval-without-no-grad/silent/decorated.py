import torch
import torch.nn as nn
import torch.nn.functional as F

@torch.no_grad()
def evaluate(model, val_loader):
    model.eval()
    return [model(x).argmax(1) for x, _ in val_loader]


@torch.inference_mode()
def predict(model, batch):
    return model(batch)


@torch.no_grad
def validate(model, batch):
    return model(batch)
