"""An emulated CUDA device that trains: fake CUDA tensors through forward, backward and
the optimizer step, with CUDA's own autocast policy.

Under `FakeTensorMode` a tensor on `device="cuda"` carries CUDA's dispatch keys, so the
forward pass already takes CUDA's paths (cuDNN batch norm, CUDA's autocast kernels) with no
GPU. Two things stop a training step on a machine without one:

- `torch.autocast("cuda")` switches itself off when CUDA is unavailable. It is a Python
  check (`amp_definitely_not_available`); the autocast kernels themselves are C++ and run on
  fake tensors. `enable()` answers that check (and `is_bf16_supported`) as a GPU would.
- PyTorch's autograd engine syncs CUDA streams around a backward pass and asks the CUDA
  driver about the device's primary context, which fails without a GPU ("hasPrimaryContext
  expects a valid device index"); it cannot be told otherwise from Python. So a backward
  pass over fake CUDA tensors is run here by `run_backward`, which does what the engine does
  on one device: count each node's dependencies, run the ready node with the highest
  sequence number first (the engine's CPU queue order, gradient accumulation first), sum
  the gradients arriving at a node's input, cast and reduce each to the dtype and shape the
  next node expects, accumulate into `.grad`, and free each node's saved tensors once it has
  run (unless `retain_graph`). The saved tensors are kept through `saved_tensors_hooks` so
  that they can be freed: the engine frees them the same way, and activations held until the
  end of backward would overstate its peak.

Not emulated: hooks registered on tensors and autograd nodes (`register_hook`,
`retain_grad`, post-accumulate-grad hooks) do not run; streams and events do not exist.
"""

import heapq
import itertools

import torch
from torch.autograd.graph import get_gradient_edge


class SavedTensor:
    """What a node saved for backward: freed (set to None) once the node has run."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class FakeCudaAutograd:
    def __init__(self, on_saved=None, around_backward=None, on_accumulated=None):
        # The saved tensors unpacked by the node now running.
        self.unpacked = None
        # Observers (for `oomlint predict`): a tensor saved for backward, each backward
        # pass as a whole, a leaf whose `.grad` a node has just accumulated into.
        self.on_saved = on_saved
        self.around_backward = around_backward or (lambda run: run())
        self.on_accumulated = on_accumulated

    def pack(self, tensor):
        if self.on_saved is not None:
            self.on_saved(tensor)
        # Detached: the same storage, without the autograd metadata that would make a saved
        # output hold its own node alive.
        return SavedTensor(tensor.detach())

    def unpack(self, saved):
        if saved.tensor is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors "
                "after they have already been freed). Specify retain_graph=True if you need to backward "
                "through the graph a second time."
            )
        if self.unpacked is not None:
            self.unpacked.append(saved)
        return saved.tensor

    def saved_tensors_hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def run_backward(self, *args, **kwargs):
        # A backward pass is one graph task to checkpointed regions: each recomputes once.
        # (The engine's own task id is not set outside the engine.)
        if torch._C._get_graph_exec_group() is not None:
            return self.around_backward(lambda: self.run_graph_task(*args, **kwargs))
        from torch.utils.checkpoint import GraphExecGroup

        with GraphExecGroup():
            return self.around_backward(lambda: self.run_graph_task(*args, **kwargs))

    def run_graph_task(
        self,
        outputs,
        grad_outputs,
        retain_graph,
        create_graph,
        inputs=(),
        allow_unreachable=True,
        accumulate_grad=True,
    ):
        roots = []
        for index, (output, grad) in enumerate(zip(outputs, grad_outputs)):
            edge = output if isinstance(output, torch.autograd.graph.GradientEdge) else get_gradient_edge(output)
            if edge.node is None:
                raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn")
            roots.append((edge.node, edge.output_nr, grad))
        inputs = tuple(inputs or ())
        targets = {}
        for index, value in enumerate(inputs):
            edge = value if isinstance(value, torch.autograd.graph.GradientEdge) else get_gradient_edge(value)
            targets.setdefault((edge.node, edge.output_nr), []).append(index)
        target_nodes = {node for node, _ in targets}

        # Dependencies: how many edges from nodes reachable from the roots lead to each node.
        dependencies = {}
        children = {}
        stack = [node for node, _, _ in roots]
        seen = set(stack)
        while stack:
            node = stack.pop()
            nexts = [(n, nr) for n, nr in node.next_functions if n is not None]
            children[node] = nexts
            for child, _ in nexts:
                dependencies[child] = dependencies.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        needed = self.needed_nodes(children, target_nodes) if targets else None

        buffers = {}
        for node, nr, grad in roots:
            self.add(buffers, node, nr, grad)
        captured = [None] * len(inputs)
        order = itertools.count()
        ready = [(-node._sequence_nr(), next(order), node) for node in {node for node, _, _ in roots}]
        ready = [entry for entry in ready if dependencies.get(entry[2], 0) == 0]
        heapq.heapify(ready)
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node, None) or [None] * len(node._input_metadata)
            for nr, grad in enumerate(grads):
                for index in targets.get((node, nr), ()):
                    captured[index] = grad
            if not self.should_run(node, targets, needed, accumulate_grad):
                continue
            results = self.call(node, grads, retain_graph, create_graph)
            if self.on_accumulated is not None and type(node).__name__ == "AccumulateGrad":
                self.on_accumulated(node.variable)
            for (child, nr), grad in zip(node.next_functions, results):
                if child is None:
                    continue
                if grad is not None:
                    self.add(buffers, child, nr, self.validated(grad, child._input_metadata[nr]))
                dependencies[child] -= 1
                if dependencies[child] == 0 and (needed is None or child in needed or child in target_nodes):
                    heapq.heappush(ready, (-child._sequence_nr(), next(order), child))
        if accumulate_grad:
            for index, value in enumerate(inputs):
                grad = captured[index]
                if grad is not None and value.grad_fn is not None:
                    value.grad = grad if value.grad is None else value.grad + grad
            return ()
        for index, grad in enumerate(captured):
            if grad is None and not allow_unreachable:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
        return tuple(captured)

    @staticmethod
    def needed_nodes(children, target_nodes):
        """The nodes from which some target can be reached through another node."""
        needed = set()
        done = set()
        for start in children:
            stack = [(start, False)]
            while stack:
                node, expanded = stack.pop()
                if node in done:
                    continue
                if expanded:
                    done.add(node)
                    if any(child in needed or child in target_nodes for child, _ in children.get(node, ())):
                        needed.add(node)
                    continue
                stack.append((node, True))
                stack.extend((child, False) for child, _ in children.get(node, ()) if child not in done)
        return needed

    @staticmethod
    def should_run(node, targets, needed, accumulate_grad):
        accumulates = type(node).__name__ == "AccumulateGrad"
        if not targets:
            return True
        if accumulates:
            return accumulate_grad and any(n is node for n, _ in targets)
        return node in needed

    @staticmethod
    def add(buffers, node, nr, grad):
        slots = buffers.get(node)
        if slots is None:
            slots = buffers[node] = [None] * len(node._input_metadata)
        slots[nr] = grad if slots[nr] is None else slots[nr] + grad

    @staticmethod
    def validated(grad, metadata):
        """The gradient as the next node expects it: its dtype, reduced to its shape."""
        shape = tuple(metadata.shape)
        if tuple(grad.shape) != shape and not metadata.is_nested_tensor:
            grad = grad.sum_to_size(shape)
        if grad.dtype != metadata.dtype:
            grad = grad.to(metadata.dtype)
        return grad

    def call(self, node, grads, retain_graph, create_graph):
        self.unpacked, outer = [], self.unpacked
        try:
            # Backward runs in the dtypes forward chose: autocast applies to forward only.
            with torch.set_grad_enabled(create_graph), torch.autocast("cuda", enabled=False):
                if hasattr(node, "_forward_cls"):
                    # A Python autograd.Function: undefined gradients become zeros first, as
                    # its default `materialize_grads` asks.
                    grads = [
                        torch.zeros(list(m.shape), dtype=m.dtype, device=m.device) if g is None else g
                        for g, m in zip(grads, node._input_metadata)
                    ]
                    results = node.apply(*grads)
                else:
                    results = node(*grads)
        finally:
            unpacked, self.unpacked = self.unpacked, outer
        if not retain_graph:
            for saved in unpacked:
                saved.tensor = None
        if not isinstance(results, tuple):
            results = (results,)
        return results


def enable(**observers):
    """Makes fake CUDA tensors train; returns the context to run the script in."""
    autograd = FakeCudaAutograd(**observers)

    def engine_run_backward(outputs, *args, **kwargs):
        return autograd.run_backward(outputs, *args, **kwargs)

    torch.autograd.graph._engine_run_backward = engine_run_backward
    torch.autograd._engine_run_backward = engine_run_backward
    torch.cuda.amp.common.amp_definitely_not_available = lambda: False
    torch.cuda.is_bf16_supported = lambda *args, **kwargs: True
    return autograd.saved_tensors_hooks()
