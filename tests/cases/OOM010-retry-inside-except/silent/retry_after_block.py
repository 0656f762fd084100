import torch


def train_step(model, images, labels, criterion):
    oom = False
    try:
        loss = criterion(model(images), labels)
        loss.backward()
    except torch.OutOfMemoryError:
        oom = True
    if oom:
        half = images.size(0) // 2
        loss = criterion(model(images[:half]), labels[:half])
        loss.backward()
    return loss
