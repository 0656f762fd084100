"""Runs one fixture script under PyTorch and prints one JSON record of what it cost.

Usage: python runner.py --backend cuda|cpu|fake --script PATH [-- SCRIPT ARGS...]
       python runner.py --preflight    (PyTorch's version and whether CUDA is usable)

The script must define `main()`; it is called with `sys.argv` set to the script's
arguments. The record (the last line of standard output, after `OOMLINT-RECORD `) holds:

- peak_bytes: the most memory live at once during `main()`;
- end_bytes: the memory live when `main()` returns, its locals still alive;
- step_bytes: the memory live each time a batch is drawn from one of
  `reference_model`'s `*_batches` generators, and once more when the batches run out; from these,
  growth_per_step_bytes (the mean growth from the first step on);
- step_seconds: seconds since main() started each time a batch is drawn (on cuda, after
  synchronizing the device, so each step's kernels are counted in it);
- step_driver_bytes (cuda only): the bytes the caching allocator has obtained from the
  driver with cudaMalloc so far (`reserved_bytes.all.allocated`), at the same moments: its
  growth per step is what the allocator had to get back after releasing its cache;
- wall_s, torch, python, device, backend, warnings (category and message of every
  warning), stdout (what the script printed).

Backends:
- cuda: `torch.cuda.max_memory_allocated()` / `memory_allocated()`. Refused when no CUDA
  device is usable: on a CUDA build without a GPU they silently return 0.
- cpu: real compute; memory counted by a live-storage tracker (below).
- fake: the same tracker inside `FakeTensorMode`: shapes and dtypes flow, no arithmetic
  runs, so it is fast and deterministic. Reading a value (`.item()`, formatting a tensor)
  returns 1 (False for booleans): good enough for loops and prints, meaningless as a value.

The tracker sees every tensor an operator returns, counts its untyped storage once (keyed
by the StorageImpl, since fake tensors have no data pointer), rounds its size up to 512
bytes as the CUDA caching allocator does, and subtracts it when the storage is freed (a
weakref finalizer on the storage, whose Python object lives as long as the storage). The
script runs entirely inside it, so parameters, gradients and optimizer state are counted
as they are created.

Exit status: 0 with a record; 3 when the backend is not usable here (the record says why);
anything else when the script failed (its traceback on standard error).
"""

import argparse
import contextlib
import io
import json
import os
import pathlib
import platform
import runpy
import sys
import time
import traceback
import warnings
import weakref

RECORD_PREFIX = "OOMLINT-RECORD "
ALLOCATOR_ROUNDING = 512


def emit(record):
    sys.__stdout__.write(RECORD_PREFIX + json.dumps(record, sort_keys=True) + "\n")
    sys.__stdout__.flush()


def refuse(reason):
    emit({"error": reason, "unusable_backend": True})
    sys.exit(3)


try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
except ImportError as error:
    refuse(f"PyTorch is not installed for {sys.executable} ({error})")


class LiveStorageTracker(TorchDispatchMode):
    """Counts the bytes of every live storage an operator has produced."""

    def __init__(self, shim_values, device_type=None):
        super().__init__()
        self.shim_values = shim_values
        # Set when the script's device is emulated (fake CUDA tensors): only what that
        # device would hold counts, as CUDA's own counters would see it.
        self.device_type = device_type
        self.live = 0
        self.peak = 0
        self.seen = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.shim_values and func is torch.ops.aten._local_scalar_dense.default:
            return shim_scalar(args[0])
        out = func(*args, **(kwargs or {}))
        for value in tree_flatten(out)[0]:
            if isinstance(value, torch.Tensor):
                self.track(value)
        return out

    def track(self, tensor):
        if self.device_type is not None and tensor.device.type != self.device_type:
            return
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self.seen:
            return
        size = -(-storage.nbytes() // ALLOCATOR_ROUNDING) * ALLOCATOR_ROUNDING
        self.seen.add(key)
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self.release, key, size)

    def release(self, key, size):
        self.seen.discard(key)
        self.live -= size

    def allocated(self):
        return self.live

    def max_allocated(self):
        return self.peak


def shim_scalar(tensor):
    if tensor.dtype == torch.bool:
        return False
    if tensor.is_floating_point() or tensor.is_complex():
        return 1.0
    return 1


def convert_modules_by_replacing_tensors():
    """`module.to(device)`, `.cuda()`, `.half()` swap each parameter for its converted copy
    in place (`torch.utils.swap_tensors`), which fake tensors refuse (they carry weak
    references). Under fake tensors a module's tensors are replaced instead, as PyTorch does
    with `torch.__future__.set_overwrite_module_params_on_conversion(True)`: the same
    tensors result, only held by new Parameter objects. A conversion that changes nothing
    keeps the tensor."""

    def _apply(module, fn, recurse=True):
        if recurse:
            for child in module.children():
                child._apply(fn)
        for key, param in module._parameters.items():
            if param is None:
                continue
            with torch.no_grad():
                converted = fn(param)
            if converted is param:
                continue
            replacement = torch.nn.Parameter(converted, requires_grad=param.requires_grad)
            if param.grad is not None:
                with torch.no_grad():
                    replacement.grad = fn(param.grad)
            module._parameters[key] = replacement
        for key, buffer in module._buffers.items():
            if buffer is not None:
                module._buffers[key] = fn(buffer)
        return module

    torch.nn.Module._apply = _apply


def track_loaded_tensors(memory):
    """`torch.load` makes its storages without running an operator, so the tracker would
    never see them: count what it returns."""
    original = torch.load

    def load(*args, **kwargs):
        loaded = original(*args, **kwargs)
        for value in tree_flatten(loaded)[0]:
            if isinstance(value, torch.Tensor):
                memory.track(value)
        return loaded

    torch.load = load


class CudaMemory:
    """The CUDA caching allocator's own counters. Nothing here initializes CUDA before
    the script does (the counters read 0 until it has, and start from 0 in this fresh
    process): the script's own first CUDA use must be the first, since that is when the
    allocator reads PYTORCH_CUDA_ALLOC_CONF.
    """

    def allocated(self):
        return torch.cuda.memory_allocated()

    def max_allocated(self):
        return torch.cuda.max_memory_allocated()


def usable_cuda():
    """None when a CUDA device can be measured, else why not."""
    if not torch.backends.cuda.is_built():
        return f"this PyTorch ({torch.__version__}) was built without CUDA"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return f"no usable CUDA device (PyTorch {torch.__version__} sees none; its memory counters would read 0)"
    return None


class StepClock:
    """When each step started, and (on cuda) what the allocator had obtained from the
    driver by then."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.started = time.perf_counter()
        self.seconds = []
        self.driver_bytes = []

    def mark(self):
        if self.cuda and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            self.driver_bytes.append(torch.cuda.memory_stats().get("reserved_bytes.all.allocated", 0))
        self.seconds.append(round(time.perf_counter() - self.started, 6))


def record_steps(memory, marks, clock):
    """Wraps reference_model's batch generators so that each batch drawn marks a step."""
    import reference_model

    def marking(original):
        def batches(*args, **kwargs):
            source = original(*args, **kwargs)
            while True:
                clock.mark()
                marks.append(memory.allocated())
                try:
                    batch = next(source)
                except StopIteration:
                    return
                yield batch

        return batches

    for name in dir(reference_model):
        if name.endswith("_batches"):
            setattr(reference_model, name, marking(getattr(reference_model, name)))


def call_main(script, script_args, memory, marks):
    """Runs the script's main() and returns the memory live as it returns."""
    # The script's time limit counts from here, so PyTorch's import and the backend's set-up
    # (seconds, and much longer on a busy machine) are not blamed on the script.
    sys.__stdout__.write("OOMLINT-STARTED\n")
    sys.__stdout__.flush()
    namespace = runpy.run_path(str(script), run_name="__oomlint_fixture__")
    main = namespace.get("main")
    if not callable(main):
        raise SystemExit(f"{script} defines no main() to measure")
    at_return = []

    def trace_calls(frame, event, arg):
        if event == "call" and frame.f_code is main.__code__:
            return trace_main
        return None

    def trace_main(frame, event, arg):
        if event == "return":
            at_return.append(memory.allocated())
        return trace_main

    sys.argv = [str(script), *script_args]
    sys.settrace(trace_calls)
    try:
        main()
    finally:
        sys.settrace(None)
    return at_return[-1] if at_return else memory.allocated()


def growth_per_step(marks):
    # The first step creates what every later one reuses (gradients, optimizer state), so
    # growth is measured from the start of the second step to when the batches ran out.
    if len(marks) < 3:
        return None
    return (marks[-1] - marks[1]) / (len(marks) - 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preflight", action="store_true")
    parser.add_argument("--backend", choices=["cuda", "cpu", "fake"])
    parser.add_argument("--script", type=pathlib.Path)
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if options.preflight:
        reason = usable_cuda()
        emit(
            {
                "torch": torch.__version__,
                "cuda_unusable": reason,
                "cuda_device": None if reason else torch.cuda.get_device_name(),
            }
        )
        return
    if options.backend is None or options.script is None:
        parser.error("--backend and --script are required")
    # argparse keeps the `--` that separates the script's own arguments.
    script_args = options.script_args[1:] if options.script_args[:1] == ["--"] else options.script_args
    script = options.script.resolve()
    sys.path.insert(0, str(script.parent.parent))
    sys.path.insert(0, str(script.parent))

    device = "cpu"
    if options.backend == "cuda":
        reason = usable_cuda()
        if reason:
            refuse(reason)
        device = "cuda"
    if "--device" not in script_args:
        script_args = [*script_args, "--device", device]
    # A CUDA device asked for off the GPU: fake tensors stand in for it (fake backend).
    emulated = None
    if options.backend != "cuda":
        named = script_args[script_args.index("--device") + 1]
        if torch.device(named).type != "cpu":
            if options.backend != "fake":
                refuse(f"the {options.backend} backend cannot run on device {named}; use the fake backend")
            emulated = torch.device(named).type

    marks = []
    clock = StepClock(cuda=options.backend == "cuda")
    captured = io.StringIO()
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(captured):
        warnings.simplefilter("always")
        if options.backend == "cuda":
            memory = CudaMemory()
            record_steps(memory, marks, clock)
            end = call_main(script, script_args, memory, marks)
            torch.cuda.synchronize()
        elif options.backend == "cpu":
            memory = LiveStorageTracker(shim_values=False)
            record_steps(memory, marks, clock)
            track_loaded_tensors(memory)
            with memory:
                end = call_main(script, script_args, memory, marks)
        else:
            from torch._subclasses.fake_tensor import FakeTensorMode

            memory = LiveStorageTracker(shim_values=True, device_type=emulated)
            convert_modules_by_replacing_tensors()
            record_steps(memory, marks, clock)
            track_loaded_tensors(memory)
            training = contextlib.nullcontext()
            if emulated == "cuda":
                import fake_cuda

                training = fake_cuda.enable()
            with FakeTensorMode(), memory, training:
                end = call_main(script, script_args, memory, marks)
    wall = time.perf_counter() - started
    peak = memory.max_allocated()
    if options.backend == "cuda" and peak == 0:
        refuse("CUDA reported a peak of 0 bytes after running the script: its counters are not working")
    emit(
        {
            "backend": options.backend,
            "device": torch.cuda.get_device_name() if device == "cuda" else f"{emulated} (fake tensors)" if emulated else "cpu",
            "torch": torch.__version__,
            "python": platform.python_version(),
            "peak_bytes": peak,
            "end_bytes": end,
            "step_bytes": marks,
            "growth_per_step_bytes": growth_per_step(marks),
            "step_seconds": clock.seconds,
            "step_driver_bytes": clock.driver_bytes,
            "wall_s": round(wall, 3),
            "warnings": [
                {"category": w.category.__name__, "message": str(w.message)}
                for w in caught
                if not w.filename.startswith(os.path.dirname(__file__))
            ],
            "stdout": captured.getvalue(),
        }
    )


def exit_without_teardown(entry=None):
    """Runs main() (or `entry`) and leaves without PyTorch's interpreter teardown, which takes seconds
    (more on a busy machine) and has nothing left to save once the record is written. The
    exit status and messages are those Python itself would give."""
    status = 0
    try:
        (entry or main)()
    except SystemExit as stop:
        if isinstance(stop.code, int) or stop.code is None:
            status = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        stream.flush()
    os._exit(status)


if __name__ == "__main__":
    exit_without_teardown()
