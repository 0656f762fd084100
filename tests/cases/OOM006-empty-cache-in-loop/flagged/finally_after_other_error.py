# The `try` only handles bad samples; its `finally` runs after every step, so the cache is
# emptied on every iteration even though nothing here recovers from running out of memory.
import torch


def train(model, loader, optimizer):
    for batch in loader:
        try:
            loss = model(batch).mean()
            loss.backward()
            optimizer.step()
        except ValueError:
            print("skipped a sample that would not fit: not an out of memory error")
        finally:
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
