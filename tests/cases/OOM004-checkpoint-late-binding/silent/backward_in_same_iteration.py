from torch.utils.checkpoint import checkpoint


def train(model, loader, optimizer):
    for x, mask in loader:
        out = checkpoint(lambda t: model(t, mask), x, use_reentrant=False)
        out.sum().backward()
        optimizer.step()
