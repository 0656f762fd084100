# Only the backbone is frozen: the head's parameters still require gradients, so the
# evaluation forward records a graph through the head.
import torch


def evaluate(classifier, val_loader):
    for name, weight in classifier.named_parameters():
        if name.startswith("backbone."):
            weight.requires_grad = False
    classifier.eval()
    hits = 0
    for x, y in val_loader:
        hits += (classifier(x).argmax(1) == y).sum().item()
    return hits
