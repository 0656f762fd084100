def train(model, loader, optimizer, heads):
    for x, targets in loader:
        features = model(x)
        losses = [head.loss(features, t) for head, t in zip(heads, targets)]
        optimizer.zero_grad()
        for loss in losses[:-1]:
            loss.backward(retain_graph=True)
        losses[-1].backward()
        optimizer.step()
