# A network written by hand for teaching: plain tensors, its own backward method, no
# autograd anywhere, so the costs it keeps for the plot hold no graph. A cost computed
# from a prediction cut from its graph (`.data`) holds none either.
import torch


class TinyPerceptron:
    def __init__(self, inputs, outputs):
        self.weight = torch.zeros(outputs, inputs).normal_(0.0, 0.1)
        self.bias = torch.zeros(outputs)

    def forward(self, x):
        hidden = x @ self.weight.t() + self.bias
        return hidden, torch.sigmoid(hidden)

    def backward(self, x, out, target):
        delta = (out - target) * out * (1 - out)
        return delta.t() @ x, delta.sum(0)


def mse_loss_by_hand(target, prediction):
    return ((target - prediction) ** 2).mean()


def fit(net, loader, epochs, lr=0.1):
    costs, logged = [], []
    for _ in range(epochs):
        for x, y in loader:
            _, out = net.forward(x)
            grad_w, grad_b = net.backward(x, out, y)
            net.weight -= lr * grad_w
            net.bias -= lr * grad_b
            costs.append(mse_loss_by_hand(y, out))
            logged.append(mse_loss_by_hand(out.data.cpu(), y))
    return costs, logged


def track_costs(model, criterion, loader):
    costs = []
    for x, y in loader:
        costs.append(criterion(model(x).data, y))
    return costs
