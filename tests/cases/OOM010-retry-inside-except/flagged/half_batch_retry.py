import torch


def train_step(model, images, labels, criterion, optimizer):
    try:
        loss = criterion(model(images), labels)
        loss.backward()
    except torch.OutOfMemoryError:
        optimizer.zero_grad()
        half = images.size(0) // 2
        loss = criterion(model(images[:half]), labels[:half])
        loss.backward()
    optimizer.step()
    return loss.item()
