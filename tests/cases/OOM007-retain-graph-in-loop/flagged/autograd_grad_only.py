import torch


def meta_step(model, tasks, criterion, lr=0.01):
    for x, y in tasks:
        loss = criterion(model(x), y)
        grads = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                p -= lr * g
