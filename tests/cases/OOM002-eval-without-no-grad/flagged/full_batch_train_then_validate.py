# Full-batch training (one graph, no loop): the training step, then a validation forward
# after `model.eval()` with autograd still on.
import torch.nn.functional as F


def train(model, graph, optimizer):
    model.train()
    optimizer.zero_grad()
    out = model(graph.x, graph.edge_index)
    loss = F.nll_loss(out[graph.train_mask], graph.y[graph.train_mask])
    loss.backward()
    optimizer.step()
    model.eval()
    out = model(graph.x, graph.edge_index)
    correct = (out.argmax(1)[graph.val_mask] == graph.y[graph.val_mask]).sum().item()
    return loss.item(), correct
