# The list is made once, before the loop over batches: an inner loop over encoders does
# not make it local to one step.
import torch


def collect(encoders, loader):
    outputs = []
    for batch in loader:
        for encoder in encoders:
            outputs.append(encoder(batch))
    return outputs
