import torch


def run(model, loader, optimizer, criterion, test):
    for images, labels in loader:
        loss = criterion(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # Training is over: hand the cache back before evaluation builds its own tensors.
    torch.cuda.empty_cache()
    test(model)
