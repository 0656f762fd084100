# The code picks the device on each branch: CPU runs map to the CPU, GPU runs keep the
# GPU placement on purpose.
import torch


def restore(path, on_cpu):
    if on_cpu:
        state = torch.load(path, map_location=torch.device("cpu"))
    else:
        state = torch.load(path)
    return state["model"]
