"""Makes the memory snapshots tests/snapshot.rs reads, and what PyTorch's own
torch.cuda._memory_viz computes on them, in one PyTorch run.

    python make_snapshots.py OUT_DIR

writes OUT_DIR/profile.pickle (train_step.run() under the profiler, converted by
_profile_to_snapshot), OUT_DIR/cuda-oom.pickle and OUT_DIR/cuda-dump.pickle (CUDA caching
allocator snapshots built from the documented format, read back by _memory_viz), and
OUT_DIR/reference.json (_memory_viz's figures on each).
"""

import io
import json
import os
import pickle
import re
import sys
from contextlib import redirect_stdout

import torch
from torch.cuda import _memory_viz
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_step  # noqa: E402

MiB = 1024 * 1024
PROFILER_NAME = re.compile(r"^(.*)\((\d+)\): (.*)$")


def profiler_snapshot():
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True, record_shapes=True) as prof:
        kept, _ = train_step.run()
    assert len(kept) == 4
    return _memory_viz._profile_to_snapshot(prof)


def flamegraph_lines(snapshot):
    """_memory_viz.memory(): the live blocks, as `stream;state;frames size` lines."""
    text = _memory_viz.memory(snapshot, format_flamegraph=lambda lines: lines)
    for line in text.splitlines():
        stack, size = line.rsplit(" ", 1)
        yield stack.split(";"), int(size)


def by_function_in(snapshot, script):
    """Live bytes by the deepest frame in `script`, from _memory_viz's flamegraph lines."""
    totals = {}
    for stack, size in flamegraph_lines(snapshot):
        if stack[1] != "active_allocated":
            continue
        for frame in reversed(stack[2:]):  # the flamegraph lists the outermost first
            match = PROFILER_NAME.match(frame.split(":", 2)[-1])
            if match and match.group(1).endswith(script):
                totals[match.group(3)] = totals.get(match.group(3), 0) + size
                break
    return totals


def segsum_totals(snapshot):
    text = _memory_viz.segsum(snapshot)  # raises when its accounting does not add up
    figures = {}
    for name in ("total_reserved", "total_allocated"):
        value = re.search(rf"^{name}: ([\d.]+)(\w*)B", text, re.M)
        figures[name] = value.group(1) + value.group(2)
    return figures, text


def categories_alive_at_end(snapshot):
    """Categories of the allocations never freed: _memory_viz's filter_alloc_free_pairs."""
    kept = _memory_viz.filter_alloc_free_pairs(pickle.loads(pickle.dumps(snapshot)))
    totals = {}
    for event in kept["device_traces"][-1]:
        if event["action"] == "alloc":
            totals[event.get("category", "unknown")] = totals.get(event.get("category", "unknown"), 0) + event["size"]
    return totals


def frames(*places):
    """A CUDA snapshot's frames, innermost first, with a torch frame on top."""
    torch_frame = {"filename": "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}
    return [torch_frame] + [{"filename": f, "line": n, "name": fn} for f, n, fn in places]


def cuda_snapshot(with_trace):
    """Two 20 MiB segments; at the OOM 18 MiB is free across them but no free block holds
    the 10 MiB requested: fragmentation."""
    s1, s2 = 0x7F0000000000, 0x7F0002000000
    forward = frames(("train.py", 30, "forward"), ("train.py", 80, "main"))
    evaluate = frames(("train.py", 55, "evaluate"), ("train.py", 82, "main"))
    scratch = frames(("train.py", 64, "augment"), ("train.py", 81, "main"))

    def ev(action, addr, size, f=()):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": list(f)}

    trace = [
        ev("segment_alloc", s1, 20 * MiB),
        ev("alloc", s1, 8 * MiB, forward),
        ev("alloc", s1 + 8 * MiB, 4 * MiB, scratch),
        ev("alloc", s1 + 12 * MiB, 8 * MiB, evaluate),
        ev("free_requested", s1 + 8 * MiB, 4 * MiB, scratch),
        ev("free_completed", s1 + 8 * MiB, 4 * MiB, scratch),
        ev("segment_alloc", s2, 20 * MiB),
        ev("alloc", s2, 6 * MiB, scratch),
        ev("alloc", s2 + 6 * MiB, 6 * MiB, forward),
        ev("free_requested", s2, 6 * MiB, scratch),
        ev("free_completed", s2, 6 * MiB, scratch),
        {"action": "oom", "addr": 0, "size": 10 * MiB, "stream": 0, "time_us": 0, "device_free": 2 * MiB, "frames": evaluate},
        # After the error, before the dump: the evaluation's tensor is released.
        ev("free_requested", s1 + 12 * MiB, 8 * MiB, evaluate),
        ev("free_completed", s1 + 12 * MiB, 8 * MiB, evaluate),
    ]

    def block(size, state, f=()):
        b = {"size": size, "requested_size": size, "state": state, "frames": list(f)}
        return b

    def segment(address, blocks):
        total = sum(b["size"] for b in blocks)
        allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        return {
            "device": 0, "address": address, "total_size": total, "allocated_size": allocated,
            "active_size": allocated, "requested_size": allocated, "stream": 0,
            "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
            "frames": [], "blocks": blocks,
        }

    segments = [
        segment(s1, [block(8 * MiB, "active_allocated", forward), block(12 * MiB, "inactive")]),
        segment(s2, [block(6 * MiB, "inactive"), block(6 * MiB, "active_allocated", forward), block(8 * MiB, "inactive")]),
    ]
    return {
        "segments": segments,
        "device_traces": [trace if with_trace else []],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "max_split_size": -1},
        "external_annotations": [],
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    reference = {}

    snapshot = profiler_snapshot()
    with open(os.path.join(out, "profile.pickle"), "wb") as f:
        pickle.dump(snapshot, f)
    totals, _ = segsum_totals(snapshot)
    reference["profile"] = {
        "by_function": by_function_in(snapshot, "train_step.py"),
        "allocated_bytes": sum(size for stack, size in flamegraph_lines(snapshot) if stack[1] == "active_allocated"),
        "categories": categories_alive_at_end(snapshot),
        "segsum": totals,
    }

    for name, with_trace in (("cuda-oom", True), ("cuda-dump", False)):
        snapshot = cuda_snapshot(with_trace)
        with open(os.path.join(out, f"{name}.pickle"), "wb") as f:
            pickle.dump(snapshot, f, protocol=5)
        totals, _ = segsum_totals(snapshot)
        with redirect_stdout(io.StringIO()):
            trace = _memory_viz.trace(snapshot)
        reference[name] = {
            "segsum": totals,
            "trace_has_oom": "raise OutOfMemoryError # 10.0MiB requested, 2.0MiB free in CUDA" in trace,
            "allocated_bytes": sum(size for stack, size in flamegraph_lines(snapshot) if stack[1] == "active_allocated"),
        }

    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
