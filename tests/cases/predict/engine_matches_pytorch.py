"""The emulated device's backward pass (src/measure/fake_cuda.py) on real CPU tensors gives
the gradients PyTorch's own engine gives: run by tests/predict.rs.

Covered: a parameter used twice (gradients summed), a branch whose output is unused, a
broadcast (gradient reduced to the parameter's shape), fp16 autocast-style dtype changes
(gradient cast back to the parameter's dtype), a custom autograd.Function, non-reentrant
checkpointing (each region recomputed once), `torch.autograd.grad` with and without
`create_graph`, `backward(inputs=...)`, and a second backward over a freed graph failing
as PyTorch's does.
"""

import sys

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, sys.argv[1])
import fake_cuda  # noqa: E402


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)
        self.scale = nn.Parameter(torch.randn(1, 6))
        self.unused = nn.Linear(6, 6)

    def forward(self, x):
        h = torch.relu(self.a(x))
        h = checkpoint(lambda t: torch.tanh(self.b(t)) * self.scale, h, use_reentrant=False)
        h = self.a(h.to(torch.float64).to(torch.float32))  # `a` used twice
        _ = self.unused(x)  # a branch no loss reaches
        return Square.apply(h).mean() + (h * self.scale).sum()


def gradients(engine_is_emulated):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(4, 6, requires_grad=True)
    context = fake_cuda.FakeCudaAutograd() if engine_is_emulated else None
    run = context.run_backward if context else None
    hooks = context.saved_tensors_hooks() if context else torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
    with hooks:
        loss = net(x)
        if run:
            run((loss,), (torch.ones_like(loss),), False, False, None)
        else:
            loss.backward()
        first = {name: p.grad.clone() for name, p in net.named_parameters() if p.grad is not None}
        first["x"] = x.grad.clone()
        # torch.autograd.grad with create_graph, then a gradient of the gradient.
        y = (net.a(x) ** 3).sum()
        if run:
            (gx,) = run((y,), (torch.ones_like(y),), True, True, (x,), False, False)
            g2 = (gx**2).sum()
            (gxx,) = run((g2,), (torch.ones_like(g2),), False, False, (x,), False, False)
        else:
            (gx,) = torch.autograd.grad(y, x, create_graph=True)
            (gxx,) = torch.autograd.grad((gx**2).sum(), x)
        first["grad_x"] = gx.detach().clone()
        first["grad_grad_x"] = gxx.clone()
        # backward(inputs=...): only the named leaves accumulate.
        net.zero_grad(set_to_none=True)
        z = net(x)
        if run:
            run((z,), (torch.ones_like(z),), False, False, (net.scale,))
        else:
            z.backward(inputs=[net.scale])
        first["inputs_only_scale"] = net.scale.grad.clone()
        first["inputs_only_a_is_none"] = torch.tensor(float(net.a.weight.grad is None))
        # A second backward over a freed graph fails.
        w = net(x)
        if run:
            run((w,), (torch.ones_like(w),), False, False, None)
        else:
            w.backward()
        try:
            if run:
                run((w,), (torch.ones_like(w),), False, False, None)
            else:
                w.backward()
            first["second_backward_failed"] = torch.tensor(0.0)
        except RuntimeError as error:
            first["second_backward_failed"] = torch.tensor(float("second time" in str(error)))
    return first


pytorch = gradients(engine_is_emulated=False)
emulated = gradients(engine_is_emulated=True)
assert pytorch.keys() == emulated.keys(), (sorted(pytorch), sorted(emulated))
for name in pytorch:
    assert torch.allclose(pytorch[name], emulated[name], atol=1e-6), (name, pytorch[name], emulated[name])
assert pytorch["second_backward_failed"].item() == 1.0
assert pytorch["inputs_only_a_is_none"].item() == 1.0
print("gradients match:", ", ".join(sorted(pytorch)))
