# A DDP validation loop under inference_mode, counts all-reduced.
import torch


def validate_ddp(model, loader, device):
    model.eval()
    correct = torch.zeros(1, device=device)
    with torch.inference_mode():
        for images, labels in loader:
            correct += (model.module(images.to(device)).argmax(1) == labels.to(device)).sum()
    torch.distributed.all_reduce(correct)
    return correct.item()
