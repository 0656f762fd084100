# The loss is weighted by the batch size in place after its backward, then summed into a
# tensor made at the top of the function: the sum chains one epoch's autograd nodes (their
# buffers already freed by each backward) and the function hands back only a number.
import torch


def train_epoch(model, loader, optimizer, criterion, device):
    model.train()
    running = torch.zeros((), device=device)
    seen = 0
    for inputs, targets in loader:
        optimizer.zero_grad()
        prediction = model(inputs.to(device))
        loss = criterion(prediction, targets.to(device))
        loss.backward()
        optimizer.step()
        loss *= inputs.size(0)
        running += loss
        seen += inputs.size(0)
    return running.item() / seen
