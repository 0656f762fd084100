# A small script that never touches an accelerator: one function trains a regressor and
# writes it to a fixed file name, another reads that same file back. Everything it ever
# saved lives on the CPU, so the load cannot land on a GPU.
import torch

points = torch.linspace(-2, 2, 200).unsqueeze(1)
targets = points.sin()


def fit_and_store():
    regressor = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.Adam(regressor.parameters(), lr=0.01)
    for _ in range(300):
        loss = torch.nn.functional.mse_loss(regressor(points), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(regressor, "regressor.pt")
    torch.save(regressor.state_dict(), "regressor_weights.pt")


def reuse_whole_module():
    regressor = torch.load("regressor.pt")
    return regressor(points)


def reuse_weights():
    regressor = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    regressor.load_state_dict(torch.load("regressor_weights.pt"))
    return regressor(points)


fit_and_store()
reuse_whole_module()
reuse_weights()
