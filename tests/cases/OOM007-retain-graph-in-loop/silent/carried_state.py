def train(model, loader, optimizer, criterion, hidden):
    # The kept graph is backpropagated through next iteration via `hidden` (OOM011's case).
    for x, y in loader:
        out, hidden = model(x, hidden)
        loss = criterion(out, y)
        loss.backward(retain_graph=True)
    optimizer.step()
