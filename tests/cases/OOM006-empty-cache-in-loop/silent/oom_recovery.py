# Searching for the largest batch that fits: each try is its own experiment, and the
# cache is released after a failed one.
import torch


def largest_batch(model, make_batch, start=256):
    size = start
    while size > 1:
        try:
            model(make_batch(size)).sum().backward()
            return size
        except torch.OutOfMemoryError:
            size //= 2
        finally:
            model.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
    return size


def train(model, loader, optimizer):
    for batch in loader:
        try:
            model(batch).mean().backward()
            optimizer.step()
        except RuntimeError as error:
            if "out of memory" not in str(error):
                raise
            torch.cuda.empty_cache()
