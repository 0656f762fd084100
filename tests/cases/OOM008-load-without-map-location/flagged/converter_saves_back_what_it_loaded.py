# A command-line converter with no accelerator in sight: it reads a training checkpoint
# that some other run wrote, keeps only the weights and writes them back under the same
# name. The save comes after the load, so it says nothing about where the tensors were.
import sys

import torch

path = sys.argv[1]
state = torch.load(path)
if "weights" in state:
    state = state["weights"]
torch.save(state, path)
