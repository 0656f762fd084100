import torch


def train(model, data_loader, optimizer, eval_points, evaluate):
    for i, batch in enumerate(data_loader):
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
        if i % 500 == 0:
            torch.cuda.empty_cache()
        if i in eval_points:
            evaluate(model)
            torch.cuda.empty_cache()
