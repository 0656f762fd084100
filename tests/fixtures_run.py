"""Runs every rule's fixtures under PyTorch, small and on the CPU, and checks that each
pair is runnable and shows its rule's evidence where it is not memory:

- every bad.py and good.py exits 0 and prints the same result line shape;
- OOM003: bad.py emits the deprecation FutureWarning, good.py does not, and both print
  identical losses;
- OOM004: bad.py's gradients differ from the un-checkpointed reference, good.py's do not.

Usage: python tests/fixtures_run.py   (with an interpreter that has torch)
"""

import pathlib
import re
import subprocess
import sys

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
SMALL = ["--device", "cpu", "--image-size", "32"]


def run(script):
    result = subprocess.run(
        [sys.executable, "-W", "always::FutureWarning", str(script), *SMALL],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result.returncode, result.stdout, result.stderr


def check_pair(rule_dir):
    failures = []
    outputs = {}
    for name in ("bad", "good"):
        code, out, err = run(rule_dir / f"{name}.py")
        if code != 0:
            failures.append(f"{rule_dir.name}/{name}.py exited {code}: {err[-2000:]}")
        outputs[name] = (out, err)
    if failures:
        return failures
    (bad_out, bad_err), (good_out, good_err) = outputs["bad"], outputs["good"]
    if rule_dir.name.startswith("OOM003"):
        if "torch.cuda.amp" not in bad_err or "FutureWarning" not in bad_err:
            failures.append("OOM003 bad.py did not emit the deprecation FutureWarning")
        if "FutureWarning" in good_err:
            failures.append(f"OOM003 good.py emitted a FutureWarning: {good_err}")
        if bad_out != good_out:
            failures.append(f"OOM003 outputs differ: {bad_out!r} vs {good_out!r}")
    if rule_dir.name.startswith("OOM004"):
        difference = {
            name: float(re.search(r"max gradient difference (\S+)", out).group(1))
            for name, (out, _) in outputs.items()
        }
        if not difference["bad"] > 0:
            failures.append(f"OOM004 bad.py gradients match the reference: {difference}")
        if difference["good"] != 0:
            failures.append(f"OOM004 good.py gradients differ from the reference: {difference}")
    return failures


def main():
    rule_dirs = sorted(d for d in FIXTURES.iterdir() if d.is_dir() and re.match(r"OOM\d{3}-", d.name))
    passed = failed = 0
    for rule_dir in rule_dirs:
        failures = check_pair(rule_dir)
        for failure in failures:
            print(f"FAIL {failure}")
        if failures:
            failed += 1
        else:
            passed += 1
            print(f"ok   {rule_dir.name}")
    print(f"fixtures: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
