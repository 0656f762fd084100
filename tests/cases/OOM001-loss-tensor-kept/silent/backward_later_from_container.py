import torch
import torch.nn.functional as F


def accumulate_then_backward(model, batches, accelerator):
    losses = []
    for x, y in batches:
        losses.append(F.mse_loss(model(x), y))
    for iteration in range(len(losses)):
        loss = losses[iteration]
        accelerator.backward(loss)
