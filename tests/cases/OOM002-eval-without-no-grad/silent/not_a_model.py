import torch
import torch.nn as nn
import torch.nn.functional as F

def evaluate(scheduler, metrics, val_loader):
    for batch in val_loader:
        scheduler.step()
        compute_metrics(batch)
        ResNet(batch)
        get_default_generator()
