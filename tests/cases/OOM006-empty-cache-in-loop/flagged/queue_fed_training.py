# Training batches come from a prefetch thread through a queue: every iteration is still
# a training step, and emptying the cache after each one makes the next step refill it.
import torch


def train_from_prefetcher(model, optimizer, batch_queue):
    while True:
        batch = batch_queue.get()
        if batch is None:
            break
        loss = model(batch["x"].cuda()).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
