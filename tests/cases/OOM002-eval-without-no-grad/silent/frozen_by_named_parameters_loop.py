# A restorer frozen parameter by parameter before it is run on test images: nothing it
# computes needs a gradient, so its forward saves no activations even with autograd on.
import torch


def restore_folder(restorer, images, device):
    restorer.eval()
    for _, weight in restorer.named_parameters():
        weight.requires_grad = False
    restorer = restorer.to(device)
    outputs = []
    for image in images:
        outputs.append(restorer(image.to(device)).clamp(0, 1).cpu())
    return outputs
