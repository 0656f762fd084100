# The same round trip through a fixed file name, but the regressor is trained on the GPU:
# the file holds CUDA tensors, and a later run (or another rank) loads them onto GPU 0.
import torch

points = torch.linspace(-2, 2, 200).unsqueeze(1).cuda()
targets = points.sin()


def fit_and_store():
    regressor = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).cuda()
    optimizer = torch.optim.Adam(regressor.parameters(), lr=0.01)
    for _ in range(300):
        loss = torch.nn.functional.mse_loss(regressor(points), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(regressor.state_dict(), "regressor_weights.pt")


def reuse_weights():
    regressor = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    regressor.load_state_dict(torch.load("regressor_weights.pt"))
    return regressor.cuda()(points)
