# A suppression on a line of its own suppresses nothing: it applies to its own line.
import torch


def evaluate(model, loader):
    model.eval()
    outputs = []
    for batch in loader:
        # oomlint: ignore[OOM002]
        outputs.append(model(batch).argmax(-1).cpu())
    return outputs
