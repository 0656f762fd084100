"""Runs every rule's fixtures under PyTorch, small and on the CPU, and checks that each
pair is runnable and shows its rule's evidence where it is not memory:

- every bad.py and good.py exits 0 and prints the same result line shape;
- OOM003 / OOM005: bad.py emits the FutureWarning / UserWarning, good.py does not, and
  both print identical losses;
- OOM004: bad.py's gradients differ from the un-checkpointed reference, good.py's do not;
- bad.py fixed by `oomlint check --fix --unsafe-fixes` still compiles, and the fixed
  OOM003/OOM004/OOM005 scripts behave like good.py (no FutureWarning, the same output; gradients
  equal to the reference).

Usage: python tests/fixtures_run.py OOMLINT_BINARY   (with an interpreter that has torch)
"""

import concurrent.futures
import os
import pathlib
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
# Rules whose evidence is a warning: its category, and what its message mentions.
WARNING_EVIDENCE = {"OOM003": ("FutureWarning", "torch.cuda.amp"), "OOM005": ("UserWarning", "use_reentrant")}
SMALL = ["--device", "cpu", "--image-size", "32"]


def run(script):
    result = subprocess.run(
        [sys.executable, "-W", "always", str(script), *SMALL],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result.returncode, result.stdout, result.stderr


def check_pair(rule_dir, fixed_dir):
    failures = []
    outputs = {}
    fixed_bad = fixed_dir / rule_dir.name / "bad.py"
    try:
        py_compile.compile(str(fixed_bad), doraise=True)
    except py_compile.PyCompileError as error:
        failures.append(f"{rule_dir.name}: the fixed bad.py does not compile: {error}")
    scripts = {"bad": rule_dir / "bad.py", "good": rule_dir / "good.py", "fixed": fixed_bad}
    for name, script in scripts.items():
        code, out, err = run(script)
        # OOM001's fix is unsafe by design: the fixed script may fail where it used the
        # stored tensors as tensors; it only has to compile.
        if code != 0 and not (name == "fixed" and rule_dir.name.startswith("OOM001")):
            failures.append(f"{rule_dir.name}/{name}.py exited {code}: {err[-2000:]}")
        outputs[name] = (out, err)
    if failures:
        return failures
    (bad_out, bad_err), (good_out, good_err) = outputs["bad"], outputs["good"]
    fixed_out, fixed_err = outputs["fixed"]
    code = rule_dir.name[:6]
    if code in WARNING_EVIDENCE:
        category, mentions = WARNING_EVIDENCE[code]
        if mentions not in bad_err or category not in bad_err:
            failures.append(f"{code} bad.py did not emit the {category} about {mentions}")
        for name, err in (("good.py", good_err), ("fixed bad.py", fixed_err)):
            if mentions in err:
                failures.append(f"{code} {name} emitted the {category}: {err}")
        if not bad_out == good_out == fixed_out:
            failures.append(f"{code} outputs differ: {bad_out!r}, {good_out!r}, fixed {fixed_out!r}")
    if rule_dir.name.startswith("OOM004"):
        difference = {
            name: float(re.search(r"max gradient difference (\S+)", out).group(1))
            for name, (out, _) in outputs.items()
        }
        if not difference["bad"] > 0:
            failures.append(f"OOM004 bad.py gradients match the reference: {difference}")
        for name in ("good", "fixed"):
            if difference[name] != 0:
                failures.append(f"OOM004 {name} gradients differ from the reference: {difference}")
    return failures


def fixed_copy(oomlint, workspace):
    """A copy of the fixtures with every fix applied by the oomlint binary."""
    copy = pathlib.Path(workspace) / "fixtures"
    shutil.copytree(FIXTURES, copy, ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [oomlint, "check", "--preview", "--fix", "--unsafe-fixes", "--exit-zero", str(copy)], capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"oomlint --fix failed: {result.stderr}")
    return copy


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rule_dirs = sorted(d for d in FIXTURES.iterdir() if d.is_dir() and re.match(r"OOM\d{3}-", d.name))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workspace:
        fixed_dir = fixed_copy(sys.argv[1], workspace)
        # Each script spends most of its time importing PyTorch: run a pair per core.
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            checked = pool.map(lambda rule_dir: check_pair(rule_dir, fixed_dir), rule_dirs)
            results = list(zip(rule_dirs, checked))
    for rule_dir, failures in results:
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
