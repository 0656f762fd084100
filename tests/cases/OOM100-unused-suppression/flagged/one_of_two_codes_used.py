# Two codes on one line: OOM002 is reported there, OOM001 is not.
import torch


def evaluate(model, loader):
    model.eval()
    scores = []
    for batch in loader:
        scores.append(model(batch).softmax(-1).max().item())  # oomlint: ignore[OOM001, OOM002]
    return scores
