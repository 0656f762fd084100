# What stays is small or holds no graph: CPU copies of the logits after a backward that
# frees the graph, images of a frozen copy of the generator made through a traced helper,
# and floats returned by an evaluation helper run under no_grad.
import copy

import torch


def compare_runs(model, train_loader, optimizer):
    kept = []
    for batch in train_loader:
        out = model(**batch)
        kept.append(out.logits.to("cpu"))
        out.loss.backward()
        optimizer.step()
    return kept


def sample_images(generator, batches, device):
    frozen = copy.deepcopy(generator).eval().requires_grad_(False).to(device)

    def run_generator(z):
        return (frozen(z) * 127.5 + 128).clamp(0, 255).to(torch.uint8)

    run_generator = torch.jit.trace(run_generator, [torch.zeros(1, 8)])
    images = []
    for z in batches:
        images.append(run_generator(z))
    return images


def evaluate_loss(model, loader):
    with torch.no_grad():
        total = sum(model(x).mean().item() for x in loader)
    return {"loss": total}


def track(model, loaders, history):
    for step, loader in enumerate(loaders):
        res = evaluate_loss(model, loader)
        history["loss"].append(res["loss"])
