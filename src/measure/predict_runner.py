"""Runs one training step of the user's on the emulated CUDA device and prints one JSON
record of what it would allocate: `oomlint predict FILE.py:FUNCTION --batch-size N`.

Usage: python predict_runner.py --file FILE --function NAME --batch-size N
           [--amp fp16|bf16] [--budget BYTES] [--cublas-workspace BYTES]
           [--cudnn-fp16-workspace-per-sample BYTES] [--snapshot PATH]

The convention: FUNCTION takes the batch size (`def step(batch_size): ...`), builds the
model, the optimizer and a batch, and runs one training step (forward, backward, optimizer
step). It runs inside `FakeTensorMode` with CUDA as the default device and
`torch.cuda.is_available()` true, so `torch.randn(..., device="cuda")`, `.cuda()`,
`.to("cuda")` and models built without a device all land on the emulated GPU, and no
tensor holds data (see `fake_cuda.py` for how that device trains).

Every storage a CUDA tensor gets is counted as the caching allocator would (rounded up to
512 bytes), with a category and the line of FILE that caused it (the innermost frame of
FILE on the stack: `loss.backward()` for the gradients, `optimizer.step()` for the Adam
state). Categories: parameter (a module's or an optimizer's parameters), gradient (a
parameter's `.grad`), optimizer_state (`optimizer.state`), activation (saved for
backward), temporary (made inside backward or the optimizer step, none of the above), other
(the batch, outputs not saved for backward, ...). The peak is the most bytes live at once;
its split is what was live at that moment.

What a GPU holds that no emulation allocates is added as modelled components, sized by
the caller (see `plan.rs`): cuBLAS's workspace once the step runs a backward pass, and
cuDNN's fp16 convolution workspace, per sample, when the step runs fp16 convolutions.

With --budget, the largest batch whose peak (modelled components included) stays within
it is searched (peaks are nearly linear in the batch: a line through two runs proposes the
answer, runs on each side of it confirm it, bisection otherwise).

With --snapshot, the step at --batch-size is also written as a CUDA memory snapshot (the
layout `torch.cuda.memory._dump_snapshot()` writes: a trace of alloc / free events with
the user's frames and each allocation's category, and the segments live at the end), so
`oomlint explain`, its chart and the editor's hints read a prediction like a GPU's
snapshot. Each allocation gets a segment of its own: the prediction does not model how
the caching allocator packs blocks, so it shows no fragmentation.

Exit status: 0 with a record; 3 when PyTorch is missing; 4 when the user's code cannot be
predicted (no such function, it raised, it needs real data, host memory ran out): the
record's "error" is one line saying why.
"""

import argparse
import contextlib
import io
import json
import linecache
import os
import pathlib
import pickle
import sys
import sysconfig
import time
import traceback
import weakref

RECORD_PREFIX = "OOMLINT-RECORD "
ALLOCATOR_ROUNDING = 512
MAX_BATCH = 1 << 24


def emit(record):
    sys.__stdout__.write(RECORD_PREFIX + json.dumps(record, sort_keys=True) + "\n")
    sys.__stdout__.flush()


def fail(message, status=4):
    emit({"error": message})
    sys.exit(status)


try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
except ImportError as error:
    fail(f"PyTorch is not installed for {sys.executable} ({error})", status=3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_cuda  # noqa: E402
from runner import convert_modules_by_replacing_tensors, exit_without_teardown, shim_scalar  # noqa: E402

CATEGORIES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "other"]


class NoDeviceFakeTensorMode(FakeTensorMode):
    """Fake tensors that never touch a real device, though `torch.cuda.is_available()`
    now says there is one (FakeTensorMode asks it whether it may initialize CUDA)."""

    @property
    def avoid_device_init(self):
        return True


class UserCodeError(Exception):
    """The user's code cannot be predicted; the message is the one line to print."""


CONVOLUTIONS = {
    torch.ops.aten.convolution.default,
    torch.ops.aten.convolution_backward.default,
    torch.ops.aten.cudnn_convolution.default,
}

# Frames that are not the user's: the runner's own, PyTorch's and the standard library's.
NOT_USER_DIRS = tuple(
    os.path.join(os.path.realpath(d), "")
    for d in (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"])
)


class StepRecorder(TorchDispatchMode):
    """Records every CUDA storage an operator produces: when it was made and freed, its
    size, the line of the user's file that made it, and (later) what it turned out to be.
    With `stacks`, also the user's frames at each allocation (for the snapshot)."""

    def __init__(self, user_file, stacks=False):
        super().__init__()
        self.user_file = user_file
        self.stacks = [] if stacks else None
        self.events = []  # (+1 | -1, allocation id)
        self.sizes = []
        self.lines = []
        self.phases = []
        self.categories = {}  # allocation id -> category decided after the fact
        self.live_ids = {}  # storage key -> allocation id
        self.phase = "forward"
        self.fp16_convolutions = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            return shim_scalar(args[0])
        if func in CONVOLUTIONS and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.float16:
            self.fp16_convolutions = True
        out = func(*args, **(kwargs or {}))
        for value in tree_flatten(out)[0]:
            if isinstance(value, torch.Tensor):
                self.track(value)
        return out

    def track(self, tensor):
        if tensor.device.type != "cuda":
            return
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self.live_ids:
            return
        allocation = len(self.sizes)
        self.live_ids[key] = allocation
        self.sizes.append(-(-storage.nbytes() // ALLOCATOR_ROUNDING) * ALLOCATOR_ROUNDING)
        self.lines.append(self.user_line())
        if self.stacks is not None:
            self.stacks.append(user_frames())
        self.phases.append(self.phase)
        self.events.append((1, allocation))
        weakref.finalize(storage, self.release, key, allocation)

    def release(self, key, allocation):
        if self.live_ids.get(key) == allocation:
            del self.live_ids[key]
        self.events.append((-1, allocation))

    def user_line(self):
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.user_file:
                return frame.f_lineno
            frame = frame.f_back
        return None

    def gpu_only(self, batch_size, options):
        """The modelled components a GPU would hold on top of this step's allocations."""
        components = {}
        if any(phase == "backward" for phase in self.phases):
            components["cublas_workspace"] = options.cublas_workspace
        if self.fp16_convolutions:
            components["cudnn_fp16_workspace"] = options.cudnn_fp16_workspace_per_sample * batch_size
        return {name: size for name, size in components.items() if size > 0}

    def mark(self, tensor, category):
        """Names what a live tensor's storage is (the first name given sticks, except that
        a parameter is always a parameter)."""
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cuda":
            return
        allocation = self.live_ids.get(tensor.untyped_storage()._cdata)
        if allocation is None:
            return
        if category == "parameter" or allocation not in self.categories:
            self.categories[allocation] = category

    def category(self, allocation):
        named = self.categories.get(allocation)
        if named is not None:
            return named
        return "temporary" if self.phases[allocation] in ("backward", "optimizer") else "other"

    def peak(self):
        """The peak, what was live at its moment, and the bytes live at the end."""
        live = peak = peak_at = 0
        for index, (sign, allocation) in enumerate(self.events):
            live += sign * self.sizes[allocation]
            if live > peak:
                peak, peak_at = live, index
        alive = set()
        for sign, allocation in self.events[: peak_at + 1]:
            if sign > 0:
                alive.add(allocation)
            else:
                alive.discard(allocation)
        return peak, alive, live


def user_frames():
    """The stack outside PyTorch, the standard library and this runner, innermost first,
    as the allocator's snapshots record frames."""
    frames = []
    frame = sys._getframe(3)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<") and not os.path.realpath(path).startswith(NOT_USER_DIRS):
            frames.append({"filename": path, "line": frame.f_lineno, "name": frame.f_code.co_name})
        frame = frame.f_back
    return frames


def write_snapshot(recorder, gpu_only, path):
    """The step as a CUDA memory snapshot (see the module's docstring), written whole or
    not at all. The modelled components are allocations without frames, held from the
    step's first allocation to its end: the predicted peak counts them whenever it falls."""
    trace, live, addresses = [], {}, {}
    next_address = 0x7F0000000000

    def alloc(key, size, frames, category):
        nonlocal next_address
        address, next_address = next_address, next_address + size
        addresses[key] = address
        live[key] = (size, frames)
        for action in ("segment_alloc", "alloc"):
            trace.append({"action": action, "addr": address, "size": size, "stream": 0, "frames": frames, "category": category})

    for sign, allocation in recorder.events:
        if recorder.sizes[allocation] == 0:
            continue  # holds no memory (the allocator hands out no block for it)
        if sign > 0:
            if not addresses:
                for name, size in gpu_only.items():
                    alloc(name, size, [], name)
            alloc(allocation, recorder.sizes[allocation], recorder.stacks[allocation], recorder.category(allocation))
        else:
            size, frames = live.pop(allocation)
            for action in ("free_requested", "free_completed", "segment_free"):
                trace.append({"action": action, "addr": addresses[allocation], "size": size, "stream": 0, "frames": frames})
    segments = [
        {
            "device": 0,
            "address": addresses[key],
            "total_size": size,
            "allocated_size": size,
            "active_size": size,
            "requested_size": size,
            "stream": 0,
            "segment_type": "large",
            "blocks": [{"size": size, "requested_size": size, "state": "active_allocated", "frames": frames}],
        }
        for key, (size, frames) in live.items()
    ]
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as out:
            pickle.dump({"segments": segments, "device_traces": [trace]}, out, protocol=4)
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        fail(f"cannot write the snapshot {path}: {error.strerror or error}")


def install_marks(recorders):
    """Hooks that tell the current recorder what tensors are: parameters as modules register
    them, activations as autograd saves them, gradients and parameters after each backward,
    optimizer state after each step."""

    def current():
        return recorders[-1] if recorders else None

    def on_parameter(module, name, parameter):
        if current() is not None:
            current().mark(parameter, "parameter")

    torch.nn.modules.module.register_module_parameter_registration_hook(on_parameter)

    def before_step(optimizer, args, kwargs):
        recorder = current()
        if recorder is None:
            return
        recorder.phase = "optimizer"
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                recorder.mark(parameter, "parameter")
                recorder.mark(parameter.grad, "gradient")

    def after_step(optimizer, args, kwargs):
        recorder = current()
        if recorder is None:
            return
        recorder.phase = "forward"
        for state in optimizer.state.values():
            for value in tree_flatten(state)[0]:
                recorder.mark(value, "optimizer_state")

    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(before_step)
    register_optimizer_step_post_hook(after_step)

    def on_saved(tensor):
        if current() is not None:
            current().mark(tensor, "activation")

    def around_backward(run):
        recorder = current()
        if recorder is None:
            return run()
        outer, recorder.phase = recorder.phase, "backward"
        try:
            return run()
        finally:
            recorder.phase = outer

    def on_accumulated(variable):
        if current() is not None:
            current().mark(variable, "parameter")
            current().mark(variable.grad, "gradient")

    return on_saved, around_backward, on_accumulated


def emulate_cuda_runtime(recorders):
    """What scripts ask torch.cuda, answered as one emulated GPU would."""
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.get_device_name = lambda device=None: "emulated CUDA device (oomlint predict)"
    cuda.get_device_capability = lambda device=None: (9, 0)
    cuda.manual_seed = cuda.manual_seed_all = lambda seed: None

    def allocated(device=None):
        recorder = recorders[-1] if recorders else None
        return 0 if recorder is None else sum(recorder.sizes[a] for a in recorder.live_ids.values())

    cuda.memory_allocated = allocated
    cuda.reset_peak_memory_stats = lambda device=None: None


def source_line(path, line):
    return linecache.getline(path, line).strip()


def describe_exception(error, user_file):
    """One line: what went wrong, and where in the user's file."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == user_file]
    where = f" (line {frames[-1].lineno}: `{frames[-1].line}`)" if frames else ""
    name = type(error).__name__
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    data = (
        "DataDependentOutputException",
        "DynamicOutputShapeException",
        "UnsupportedFakeTensorException",
        "DataDependentOutputError",
    )
    if name in data or "data-dependent" in text or "real data" in text or ".numpy()" in text:
        return f"the step needs real tensor values, which fake tensors do not have{where}: {name}: {text}"
    if "FakeTensor" in text and ("non-Fake" in text or "convert all Tensors" in text or "real tensor" in text):
        return (
            f"the step mixes a real tensor (loaded from disk, numpy or a data loader) into the emulated GPU{where}: "
            "build the batch with torch.randn / torch.randint instead"
        )
    if name == "MemoryError" or isinstance(error, MemoryError):
        return f"the host ran out of memory running the step{where}, even with fake tensors (no tensor data is allocated): MemoryError"
    if name == "OutOfMemoryError":
        return f"the step ran out of host memory{where}: {text}"
    return f"the step raised {name}{where}: {text}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=pathlib.Path, required=True)
    parser.add_argument("--function", required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--amp", choices=["fp16", "bf16"])
    parser.add_argument("--budget", type=int)
    # What a GPU holds that the emulation does not allocate (see `plan.rs`).
    parser.add_argument("--cublas-workspace", type=int, default=0)
    parser.add_argument("--cudnn-fp16-workspace-per-sample", type=int, default=0)
    parser.add_argument("--snapshot")
    options = parser.parse_args()
    user_file = str(options.file.resolve())
    sys.path.insert(0, str(options.file.resolve().parent))

    recorders = []
    on_saved, around_backward, on_accumulated = install_marks(recorders)
    training = fake_cuda.enable(on_saved=on_saved, around_backward=around_backward, on_accumulated=on_accumulated)
    emulate_cuda_runtime(recorders)
    convert_modules_by_replacing_tensors()
    fake_mode = NoDeviceFakeTensorMode()
    captured = io.StringIO()
    started = time.perf_counter()
    # The time limit counts from here: PyTorch's import is not the step's.
    sys.__stdout__.write("OOMLINT-STARTED\n")
    sys.__stdout__.flush()

    with contextlib.redirect_stdout(captured), fake_mode, training, torch.device("cuda"):
        namespace = load(user_file)
        function = namespace.get(options.function)
        if not callable(function):
            defined = sorted(
                name
                for name, value in namespace.items()
                if callable(value) and getattr(value, "__module__", None) == "__oomlint_predict__"
            )
            listed = ", ".join(defined) if defined else "none"
            fail(f"{options.file} has no function `{options.function}` (functions defined there: {listed})")

        def run(batch_size, stacks=False):
            recorder = StepRecorder(user_file, stacks)
            recorders.append(recorder)
            autocast = (
                torch.autocast("cuda", dtype=torch.float16 if options.amp == "fp16" else torch.bfloat16)
                if options.amp
                else contextlib.nullcontext()
            )
            try:
                with recorder, autocast:
                    function(batch_size)
            except UserCodeError:
                raise
            except BaseException as error:  # noqa: BLE001 - the user's code, reported in one line
                if isinstance(error, KeyboardInterrupt):
                    raise
                if isinstance(error, SystemExit):
                    raise UserCodeError(f"`{options.function}` called sys.exit({error.code})") from None
                raise UserCodeError(describe_exception(error, user_file)) from None
            finally:
                recorders.pop()
            return recorder

        try:
            recorder = run(options.batch_size, stacks=options.snapshot is not None)
            peak, alive, end = recorder.peak()
            gpu_only = recorder.gpu_only(options.batch_size, options)
            record = {
                "batch_size": options.batch_size,
                "peak_bytes": peak,
                "end_bytes": end,
                "by_category": split_by_category(recorder, alive),
                "gpu_only": gpu_only,
                "lines": split_by_line(recorder, alive, user_file),
                "backward": any(phase == "backward" for phase in recorder.phases),
                "runs": [{"batch_size": options.batch_size, "peak_bytes": peak + sum(gpu_only.values())}],
            }
            if options.snapshot is not None:
                write_snapshot(recorder, gpu_only, options.snapshot)
            if options.budget is not None:

                def peak_with_gpu_only(batch_size):
                    tried = run(batch_size)
                    return tried.peak()[0] + sum(tried.gpu_only(batch_size, options).values())

                record["max_batch_size"] = largest_batch(
                    peak_with_gpu_only, options.batch_size, record["runs"][0]["peak_bytes"], options.budget, record["runs"]
                )
        except UserCodeError as error:
            fail(str(error))
    record.update(
        {
            "torch": torch.__version__,
            "device": "cuda (emulated: fake tensors)",
            "amp": options.amp,
            "wall_s": round(time.perf_counter() - started, 3),
            "stdout": captured.getvalue()[-2000:],
        }
    )
    emit(record)


def load(user_file):
    import runpy

    try:
        return runpy.run_path(user_file, run_name="__oomlint_predict__")
    except BaseException as error:  # noqa: BLE001 - reported in one line
        if isinstance(error, KeyboardInterrupt):
            raise
        fail(f"{user_file} failed on import: {describe_exception(error, user_file)}")


def split_by_category(recorder, alive):
    totals = dict.fromkeys(CATEGORIES, 0)
    for allocation in alive:
        totals[recorder.category(allocation)] += recorder.sizes[allocation]
    return totals


def split_by_line(recorder, alive, user_file):
    totals = {}
    for allocation in alive:
        line = recorder.lines[allocation]
        totals[line] = totals.get(line, 0) + recorder.sizes[allocation]
    rows = [
        {"line": line, "code": source_line(user_file, line) if line else None, "bytes": size}
        for line, size in totals.items()
    ]
    return sorted(rows, key=lambda row: (-row["bytes"], row["line"] or 0))


def largest_batch(peak_of, batch, peak, budget, runs):
    """The largest batch whose peak is within `budget` (0 when not even one sample is)."""
    known = {batch: peak}

    def measure(b):
        if b not in known:
            known[b] = peak_of(b)
            runs.append({"batch_size": b, "peak_bytes": known[b]})
        return known[b]

    fits, too_big = (batch, None) if peak <= budget else (0, batch)
    # A second point for the line: half or double the batch.
    other = max(1, batch // 2) if too_big is not None else min(MAX_BATCH, batch * 2)
    if other != batch:
        if measure(other) <= budget:
            fits = max(fits, other)
        else:
            too_big = other if too_big is None else min(too_big, other)
        (b1, p1), (b2, p2) = sorted([(batch, known[batch]), (other, known[other])])
        slope = (p2 - p1) / (b2 - b1)
        if slope > 0:
            guess = int(b1 + (budget - p1) / slope)
            for candidate in (guess, guess + 1):
                if fits < candidate < (too_big or MAX_BATCH + 1) and candidate >= 1:
                    if measure(candidate) <= budget:
                        fits = candidate
                    else:
                        too_big = candidate
    while too_big is None:
        candidate = min(MAX_BATCH, max(1, fits) * 2)
        if candidate == fits:
            return fits
        if measure(candidate) <= budget:
            fits = candidate
        else:
            too_big = candidate
    while too_big - fits > 1:
        middle = (fits + too_big) // 2
        if measure(middle) <= budget:
            fits = middle
        else:
            too_big = middle
    return fits


if __name__ == "__main__":
    exit_without_teardown(main)
