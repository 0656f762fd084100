# A network written from scratch as functions: forward, cost and backward pass by
# hand, weights updated in place. No autograd backward anywhere, so the costs kept for
# the learning curve hold no graph.
import torch


def forward_pass(x, w1, w2):
    hidden = torch.sigmoid(x @ w1)
    return hidden, torch.sigmoid(hidden @ w2)


def cross_entropy_loss(prediction, target):
    return -(target * torch.log(prediction) + (1 - target) * torch.log(1 - prediction)).mean()


def manual_backward_pass(x, hidden, out, target, w2):
    delta_out = out - target
    delta_hidden = (delta_out @ w2.t()) * hidden * (1 - hidden)
    return x.t() @ delta_hidden, hidden.t() @ delta_out


def fit(loader, w1, w2, epochs, lr=0.01):
    curve = []
    for _ in range(epochs):
        for x, y in loader:
            hidden, out = forward_pass(x, w1, w2)
            cost = cross_entropy_loss(out, y)
            g1, g2 = manual_backward_pass(x, hidden, out, y, w2)
            w1 -= lr * g1
            w2 -= lr * g2
            curve.append(cost)
    return curve
