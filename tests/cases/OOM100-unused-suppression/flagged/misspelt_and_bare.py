# A misspelt code suppresses nothing; a bare directive on a clean line neither.
import torch


def train(model, loader, optimizer, criterion):
    history = []
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # oomlint: ignore[OOM01]
    torch.save(model.state_dict(), "model.pt")  # oomlint: ignore
    return history
