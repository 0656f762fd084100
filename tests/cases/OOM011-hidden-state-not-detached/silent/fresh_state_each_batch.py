def train_epoch(model, batches, optimizer, criterion):
    for data, targets in batches:
        hidden = model.init_hidden(data.size(0))
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        optimizer.step()
