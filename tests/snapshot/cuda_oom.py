"""Records a real CUDA memory snapshot of a run into an out-of-memory error and checks
`oomlint explain`'s report against what PyTorch says about the same run.

    python cuda_oom.py OOMLINT_BINARY OUT_DIR

Runs train_step.py's leaky evaluation on the GPU with batches sized so the card fills in
about 30 steps, dumps the snapshot after the OutOfMemoryError, and checks that the report
is at the `oom` event, names the line that kept the activations (the in-place ReLU in
`forward`), quotes the failed request of the error message, and that its peak and its
allocated memory at the error agree within 1% with torch.cuda.max_memory_allocated().
Writes OUT_DIR/cuda-oom.pickle, OUT_DIR/cuda-oom.json (the report) and the plot. Exits 1
when a check fails. Needs a CUDA GPU (scripts/measure-gpu runs it).
"""

import json
import os
import re
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_step  # noqa: E402

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def endless_batches(batch_size):
    while True:
        yield torch.randn(batch_size, 256, device="cuda"), torch.randint(0, 10, (batch_size,), device="cuda")


def main(oomlint, out):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "cuda-oom.pickle")
    _, total = torch.cuda.mem_get_info()
    # Each step keeps its input and the ReLU's output alive: (256 + 2048) * 4 bytes a row.
    batch_size = max(1024, total // 30 // ((256 + 2048) * 4))
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    model = train_step.Net().cuda()
    message = None
    try:
        train_step.evaluate(model, endless_batches(batch_size))
    except torch.OutOfMemoryError as error:
        message = str(error)
    peak = torch.cuda.max_memory_allocated()
    torch.cuda.memory._dump_snapshot(path)
    torch.cuda.memory._record_memory_history(enabled=None)
    if message is None:
        sys.exit("the evaluation never ran out of memory")

    run = subprocess.run(
        [oomlint, "explain", path, "--output-format", "json", "--plot", os.path.join(out, "cuda-oom.html")],
        capture_output=True, text=True, cwd=HERE,
    )
    if run.returncode != 0:
        sys.exit(f"oomlint explain failed: {run.stderr}")
    report = json.loads(run.stdout)
    with open(os.path.join(out, "cuda-oom.json"), "w") as f:
        json.dump(report, f, indent=1)

    relu_line = next(i for i, line in enumerate(open(os.path.join(HERE, "train_step.py")), 1) if "relu_" in line)
    asked = re.search(r"Tried to allocate ([\d.]+) (KiB|MiB|GiB|TiB)", message)
    requested = float(asked.group(1)) * UNITS[asked.group(2)]
    top = report["lines"][0] if report["lines"] else {}
    checks = [
        ("at the oom event", report["at"] == "oom", report["at"]),
        ("the request of the message", report["oom"] and abs(report["oom"]["requested_bytes"] - requested) <= 0.01 * requested,
         f"{report['oom'] and report['oom']['requested_bytes']} vs {requested:.0f} ({asked.group(0)})"),
        ("the ReLU line holds the most", top.get("file", "").endswith("train_step.py") and top.get("line") == relu_line,
         f"{top.get('file')}:{top.get('line')} {top.get('function')}"),
        ("its caller is evaluate()", (top.get("callers") or [{}])[0].get("function") == "evaluate", top.get("callers")),
        ("peak within 1% of max_memory_allocated", abs(report["peak_bytes"] - peak) <= 0.01 * peak,
         f"{report['peak_bytes']} vs {peak}"),
        ("allocated at the OOM within 1% of the peak", abs(report["allocated_bytes"] - peak) <= 0.01 * peak,
         f"{report['allocated_bytes']} vs {peak}"),
        ("segments reported", report["segments"] is not None and report["segments"]["reserved_bytes"] >= report["allocated_bytes"],
         report["segments"]),
    ]
    failed = 0
    for name, ok, detail in checks:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        failed += not ok
    print(f"cuda snapshot check: {len(checks) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
