# A script with no accelerator in sight still cannot vouch for a file it did not write:
# weights downloaded or produced by a GPU run come back on the GPU that saved them.
import torch


def restore(regressor):
    regressor.load_state_dict(torch.load("pretrained_weights.pt"))
    return regressor
