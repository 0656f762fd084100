import logging

import torch


def train(model, loader, criterion, optimizer):
    for images, labels in loader:
        try:
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
        except torch.OutOfMemoryError:
            logging.warning("out of memory on a batch of %d; skipping it", len(images))
            optimizer.zero_grad(set_to_none=True)
            continue
