"""A small training step and an evaluation that keeps every batch's graph alive.

tests/snapshot/make_snapshots.py runs it under PyTorch's profiler; `oomlint explain`
must find that `forward` holds the most memory (the activations the kept losses' graphs
hold) and that the evaluation's loop is what OOM001 flags.
"""

import torch
import torch.nn.functional as F

WIDTH = 2048


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(256, WIDTH)
        self.fc2 = torch.nn.Linear(WIDTH, 10)

    def forward(self, x):
        # In place, so the activation the graph keeps is the only one: no transient copy.
        hidden = torch.relu_(self.fc1(x))
        return self.fc2(hidden)


def train_step(model, optimizer, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    return loss.item()


def evaluate(model, batches):
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        losses.append(loss)
    return losses


def run(batch_size=512, eval_batches=4):
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    x = torch.randn(batch_size, 256)
    y = torch.randint(0, 10, (batch_size,))
    train_step(model, optimizer, x, y)
    batches = [(torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))) for _ in range(eval_batches)]
    # The optimizer and the training batch are returned too, so the peak is the end of the
    # run and the figures at the peak can be compared with _memory_viz's, which describe
    # the end.
    return evaluate(model, batches), (optimizer, x, y)
