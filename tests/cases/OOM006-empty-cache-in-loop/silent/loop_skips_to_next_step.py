# The loop skips to the next batch unless the step is a multiple of `log_every`: what
# follows the `continue`, the cache release included, runs on those steps only.
import torch


def train(model, loader, optimizer, log_every=200):
    for step, (inputs, targets) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(inputs.cuda()), targets.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % log_every:
            continue
        print(f"step {step}: {loss.item():.4f}, {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
        torch.cuda.empty_cache()
