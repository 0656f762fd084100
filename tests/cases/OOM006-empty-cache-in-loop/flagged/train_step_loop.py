import torch


def train(model, loader, optimizer, criterion):
    model.train()
    for images, labels in loader:
        loss = criterion(model(images.cuda()), labels.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
