import torch


def train(cell, head, loader, optimizer, criterion):
    for sequence, target in loader:
        h = torch.zeros(sequence.size(0), cell.hidden_size)
        # Backpropagation through the time steps of one sequence: intended.
        for t in range(sequence.size(1)):
            h = cell(sequence[:, t], h)
        loss = criterion(head(h), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
