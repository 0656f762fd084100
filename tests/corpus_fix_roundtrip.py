"""Round trip over a large real corpus (the installed torch package's .py files): apply
all safe fixes, then all unsafe ones, to a copy with the oomlint binary, and check that
every file it changed still parses with Python's own parser wherever the original did.

Usage: python tests/corpus_fix_roundtrip.py OOMLINT_BINARY [CORPUS_DIR]
"""

import ast
import filecmp
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile


def parses(path):
    try:
        ast.parse(path.read_bytes(), filename=str(path))
        return True
    except (SyntaxError, ValueError):
        return False


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    oomlint = sys.argv[1]
    if len(sys.argv) == 3:
        corpus = pathlib.Path(sys.argv[2])
    else:
        import torch

        corpus = pathlib.Path(os.path.dirname(torch.__file__))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workspace:
        copy = pathlib.Path(workspace) / "corpus"
        shutil.copytree(corpus, copy, ignore=lambda d, names: [n for n in names if not (n.endswith(".py") or os.path.isdir(os.path.join(d, n)))])
        for flags in (["--fix"], ["--fix", "--unsafe-fixes"]):
            result = subprocess.run([oomlint, "check", "--preview", *flags, "--exit-zero", "--output-format", "concise", str(copy)], capture_output=True, text=True)
            if result.returncode != 0:
                print(f"FAIL oomlint {' '.join(flags)} exited {result.returncode}: {result.stderr[-2000:]}")
                failed += 1
        for fixed in sorted(copy.rglob("*.py")):
            original = corpus / fixed.relative_to(copy)
            if filecmp.cmp(original, fixed, shallow=False):
                continue
            if not parses(original):
                continue
            if parses(fixed):
                passed += 1
            else:
                failed += 1
                print(f"FAIL {fixed.relative_to(copy)} no longer parses after fixing")
    print(f"corpus round trip: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
