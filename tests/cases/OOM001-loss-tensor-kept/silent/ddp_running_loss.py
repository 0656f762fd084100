# A DDP training epoch summing `loss.item()` weighted by the batch size.
import torch


def train_ddp(model, loader, optimizer, criterion, sampler, epoch):
    sampler.set_epoch(epoch)
    running_loss, seen = 0.0, 0
    for images, labels in loader:
        loss = criterion(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * images.size(0)
        seen += images.size(0)
    return running_loss / seen
