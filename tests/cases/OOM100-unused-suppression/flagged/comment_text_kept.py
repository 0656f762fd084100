# Removing a directive keeps the words around it as a comment.
import torch


def train_step(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch).mean()  # oomlint: ignore[OOM002] the loss is backpropagated below
    loss.backward()  # clears the graph  # noqa: OOM007
    optimizer.step()  # oomlint: ignore[OOM999]  # type: ignore
    return loss.item()
