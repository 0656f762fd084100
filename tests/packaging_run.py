"""oomlint installed and run the ways users do, with the real tools, and the README
snippets that show how, run as written:

- the wheel: `maturin build` (bindings = "bin"), installed with pip into a fresh venv,
  puts a working `oomlint` on PATH, linked statically on Linux (no shared library to
  load at start: `rustc-args` in pyproject.toml);
- pre-commit (from PyPI) with the README's `.pre-commit-config.yaml` pointing at this
  repository (its path, the current commit): a staged leaky training script fails the
  commit with the finding, `oomlint-fix` repairs what it safely can, the fixed script
  passes, and a commit without Python files passes;
- the README's GitHub Actions workflow: its `oomlint` steps run in a project with a bad
  script, the SARIF they write validates against the official SARIF 2.1.0 schema
  (shipped in the npm package @microsoft/jest-sarif) and is what the upload step reads,
  and the annotations step fails with `::error` lines.

Builds use the dev profile and this checkout's target directory, so they reuse what
`cargo test` compiled. Usage: python tests/packaging_run.py OOMLINT_BINARY
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

import jsonschema
import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
LEAKY = (REPO / "fixtures/OOM001-loss-tensor-kept/bad.py").read_text()
FIXED = (REPO / "fixtures/OOM001-loss-tensor-kept/good.py").read_text()
# The projects below expect OOM001, which may be a preview rule: they turn preview on.
PREVIEW_ON = "preview = true\n"
AMP = (REPO / "fixtures/OOM003-deprecated-cuda-amp/bad.py").read_text()
SARIF_SCHEMA_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
SARIF_SCHEMA_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "oomlint"
BUILD_ENV = {
    **os.environ,
    "CARGO_TARGET_DIR": str(REPO / "target"),
    "MATURIN_PEP517_ARGS": "--profile dev",
}


def run(args, cwd, env=None, expect=0):
    result = subprocess.run(args, cwd=cwd, env=env or BUILD_ENV, capture_output=True, text=True, timeout=1200)
    if expect is not None and result.returncode != expect:
        raise AssertionError(
            f"{' '.join(map(str, args))} exited {result.returncode}, expected {expect}:\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


def readme_block(heading, language):
    """The first ```language block under the README's `## heading`."""
    readme = (REPO / "README.md").read_text()
    section = readme.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"README: no {language} block under {heading}"
    return match.group(1)


def check_wheel(work):
    wheels = work / "wheels"
    run([sys.executable, "-m", "maturin", "build", "--profile", "dev", "--out", wheels], REPO)
    (wheel,) = wheels.glob("oomlint-*.whl")
    venv = work / "fresh-venv"
    run([sys.executable, "-m", "venv", venv], work)
    run([venv / "bin/pip", "install", "--quiet", "--no-index", wheel], work)
    installed = venv / "bin/oomlint"
    if sys.platform == "linux":
        assert not elf_interpreter(installed), f"{installed} loads shared libraries: not linked statically"
    version = run([installed, "--version"], work).stdout
    assert version.startswith("oomlint "), version
    script = work / "train.py"
    script.write_text(LEAKY)
    found = run([installed, "check", "--preview", "--output-format", "concise", script], work, expect=1).stdout
    assert "error[OOM001]" in found, found
    print(f"ok   wheel {wheel.name} installs `oomlint` on PATH")


def elf_interpreter(binary):
    """Whether the 64-bit little-endian ELF `binary` names a program interpreter (a
    PT_INTERP program header): a dynamically linked executable does, a static one not."""
    data = pathlib.Path(binary).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{binary}: not a 64-bit little-endian ELF"
    program_headers = int.from_bytes(data[0x20:0x28], "little")
    entry_size = int.from_bytes(data[0x36:0x38], "little")
    entries = int.from_bytes(data[0x38:0x3A], "little")
    pt_interp = 3
    return any(
        int.from_bytes(data[program_headers + i * entry_size : program_headers + i * entry_size + 4], "little")
        == pt_interp
        for i in range(entries)
    )


def git(project, *args):
    return run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], project)


def check_pre_commit(work):
    commit = run(["git", "rev-parse", "HEAD"], REPO).stdout.strip()
    config = yaml.safe_load(readme_block("pre-commit", "yaml"))
    hooks = config["repos"][0]
    assert [h["id"] for h in hooks["hooks"]] == ["oomlint-fix", "oomlint"], hooks
    hooks["repo"], hooks["rev"] = str(REPO), commit
    project = work / "project"
    project.mkdir()
    git(project, "init", "--quiet")
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (project / "oomlint.toml").write_text(PREVIEW_ON)
    env = {**BUILD_ENV, "PRE_COMMIT_HOME": str(work / "pre-commit-home")}
    pre_commit = [sys.executable, "-m", "pre_commit", "run", "--color", "never"]

    (project / "notes.txt").write_text("no Python here\n")
    git(project, "add", "notes.txt", ".pre-commit-config.yaml", "oomlint.toml")
    result = run(pre_commit, project, env)
    assert "(no files to check)Skipped" in result.stdout, result.stdout

    (project / "train.py").write_text(LEAKY.replace("import torch\n", "import torch\nfrom torch.cuda.amp import autocast\n", 1)
                                      + "\n\nwith autocast():\n    pass\n")
    git(project, "add", "train.py")
    result = run(pre_commit, project, env, expect=1)
    assert "error[OOM001]" in result.stdout and "files were modified by this hook" in result.stdout, result.stdout
    fixed = (project / "train.py").read_text()
    assert "torch.amp" in fixed and "torch.cuda.amp" not in fixed, "oomlint-fix applied the safe OOM003 fix"
    assert "val_losses.append(loss)" in fixed, "the unsafe OOM001 fix is left to the user"

    (project / "train.py").write_text(FIXED)
    git(project, "add", "train.py")
    result = run(pre_commit, project, env)
    assert result.stdout.count("Passed") == 2, result.stdout

    # A notebook: the deprecated import in one cell, its use in another.
    cells = ["import torch\nfrom torch.cuda.amp import autocast", "with autocast():\n    pass"]
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in cells],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (project / "explore.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    git(project, "add", "explore.ipynb")
    result = run(pre_commit, project, env, expect=1)
    assert "files were modified by this hook" in result.stdout, result.stdout
    fixed = json.loads((project / "explore.ipynb").read_text())
    assert [c["source"] for c in fixed["cells"]] == [
        "import torch\nfrom torch.amp import autocast",
        'with autocast("cuda"):\n    pass',
    ], fixed
    git(project, "add", "explore.ipynb")
    result = run(pre_commit, project, env)
    assert result.stdout.count("Passed") == 2, result.stdout
    print("ok   pre-commit: fails on the finding, fixes what is safe (in scripts and notebooks), passes when fixed or without Python")


def sarif_schema(work):
    cached = CACHE / "sarif-2.1.0-rtm.5.json"
    if not cached.is_file():
        run(["npm", "pack", "--silent", SARIF_SCHEMA_PACKAGE], work)
        (archive,) = work.glob("*.tgz")
        with tarfile.open(archive) as tar:
            schema = tar.extractfile(SARIF_SCHEMA_MEMBER).read()
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(schema)
    return json.loads(cached.read_text())


def check_github_actions(work, oomlint):
    workflow = yaml.safe_load(readme_block("GitHub Actions", "yaml"))
    steps = next(iter(workflow["jobs"].values()))["steps"]
    project = work / "gha"
    project.mkdir()
    (project / "train.py").write_text(LEAKY)
    (project / "amp.py").write_text(AMP)
    (project / "oomlint.toml").write_text(PREVIEW_ON)
    bin_dir = work / "bin"
    bin_dir.mkdir()
    shutil.copy(oomlint, bin_dir / "oomlint")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    schema = sarif_schema(work)
    sarif_file = next(s["with"]["sarif_file"] for s in steps if "upload-sarif" in s.get("uses", ""))
    commands = [s["run"] for s in steps if "run" in s and s["run"].startswith("oomlint ")]
    assert len(commands) == 2, commands
    for command in commands:
        result = subprocess.run(command, shell=True, cwd=project, env=env, capture_output=True, text=True)
        if "sarif" in command:
            assert result.returncode == 0, result.stderr
            log = json.loads((project / sarif_file).read_text())
            jsonschema.validate(log, schema, cls=jsonschema.Draft7Validator)
            rule_ids = sorted(r["ruleId"] for r in log["runs"][0]["results"])
            assert rule_ids == ["OOM001", "OOM003", "OOM003"], rule_ids
        else:
            assert result.returncode == 1, result
            assert "::error title=oomlint (OOM001),file=train.py," in result.stdout, result.stdout
            assert "::warning title=oomlint (OOM003),file=amp.py," in result.stdout, result.stdout
    print("ok   GitHub Actions snippet: SARIF valid against the 2.1.0 schema, annotations printed")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    oomlint = pathlib.Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        check_github_actions(work, oomlint)
        check_wheel(work)
        check_pre_commit(work)


if __name__ == "__main__":
    main()
