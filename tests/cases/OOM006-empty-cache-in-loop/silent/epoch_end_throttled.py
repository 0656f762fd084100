# Once every few epochs, and once per epoch: the cost is paid once per thousands of steps.
import torch


def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        for batch in loader:
            optimizer.zero_grad()
            model(batch).mean().backward()
            optimizer.step()
        if epoch % 5 == 0:
            torch.cuda.empty_cache()
        torch.cuda.empty_cache()
