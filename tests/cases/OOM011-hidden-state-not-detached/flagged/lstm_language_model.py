import torch
from torch import nn


def train_epoch(model, train_data, optimizer, criterion, batch_size, bptt=35):
    model.train()
    hidden = model.init_hidden(batch_size)
    for i in range(0, train_data.size(0) - 1, bptt):
        data, targets = get_batch(train_data, i, bptt)
        optimizer.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, output.size(-1)), targets)
        loss.backward(retain_graph=True)
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
