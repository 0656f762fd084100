def repackage_hidden(h):
    if isinstance(h, tuple):
        return tuple(repackage_hidden(v) for v in h)
    return h.detach()


def train_epoch(model, batches, optimizer, criterion, batch_size):
    hidden = model.init_hidden(batch_size)
    for data, targets in batches:
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        optimizer.step()
