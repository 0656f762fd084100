# `model` is first a module of the project, then the network loaded from disk: the
# evaluation function runs the network.
import model
import torch


def evaluate(data_source, hidden):
    model.eval()
    total = 0.0
    for batch in data_source:
        output, hidden = model(batch, hidden)
        total += output.sum().item()
    return total


with open("best.pt", "rb") as f:
    model = torch.load(f, map_location="cpu")
evaluate(test_data, None)
