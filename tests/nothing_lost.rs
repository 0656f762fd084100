//! Nothing lost: fixing through a symbolic link, line endings of every kind (`\r\n`, a
//! lone `\r`, `\r\r\n`) kept by fixes and by diffs that `patch` applies, impossible
//! numbers refused, and no "All checks passed." for input that was never checked.

mod common;

use common::oomlint;
use std::fs;
use std::path::Path;
use std::process::Command;

const AMP: &str = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n";
const FIXED_AMP: &str = "from torch.amp import autocast\n\nwith autocast(\"cuda\"):\n    pass\n";

fn run(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let output = oomlint(args, cwd);
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("UTF-8 output");
    (output.status.code().expect("exit code"), text(output.stdout), text(output.stderr))
}

#[test]
fn fixing_through_a_symbolic_link_fixes_the_file_it_points_to_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/train.py"), AMP).unwrap();
    std::os::unix::fs::symlink("src/train.py", dir.path().join("link.py")).unwrap();
    let (code, out, err) = run(&["check", "--fix", "link.py"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let link = fs::symlink_metadata(dir.path().join("link.py")).unwrap();
    assert!(link.file_type().is_symlink(), "the link is still a link");
    assert_eq!(fs::read_to_string(dir.path().join("src/train.py")).unwrap(), FIXED_AMP);
    let leftovers: Vec<_> = fs::read_dir(dir.path().join("src")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left beside the target: {leftovers:?}");
}

#[test]
fn removing_an_unused_suppression_keeps_the_crlf_ending() {
    let dir = tempfile::tempdir().unwrap();
    let source = "import torch\r\nx = 1  # oomlint: ignore[OOM001]\r\ny = 2  # oomlint: ignore[OOM001] why\r\n# noqa: OOM002\r\nz = 3\r\n";
    fs::write(dir.path().join("s.py"), source).unwrap();
    let (code, out, err) = run(&["check", "--fix", "s.py"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("s.py")).unwrap(),
        "import torch\r\nx = 1\r\ny = 2  # why\r\nz = 3\r\n"
    );
}

/// A script whose only line endings are lone `\r`, as old Mac editors wrote them.
const CR_ONLY: &str = "def evaluate(model, loader):\r    model.eval()\r    outs = []\r    for x in loader:\r        outs.append(model(x).argmax())\r    return outs\r\rfrom torch.cuda.amp import autocast\r\rwith autocast():\r    pass\r";

#[test]
fn lone_carriage_returns_end_lines() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("cr.py"), CR_ONLY).unwrap();
    let (code, out, err) = run(&["check", "--output-format", "concise"], dir.path());
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains("cannot parse"), "{err}");
    assert!(out.contains("cr.py:5:21: warning[OOM002]") && out.contains("cr.py:10:6: warning[OOM003]"), "{out}");
    // Fixed, the file parses (the added import comes first), and keeps its `\r` endings.
    let (code, out, err) = run(&["check", "--fix", "--unsafe-fixes", "cr.py"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("would break the syntax"), "{err}");
    let fixed = fs::read_to_string(dir.path().join("cr.py")).unwrap();
    assert!(!fixed.contains('\n'), "only `\\r` line endings: {fixed:?}");
    assert!(fixed.starts_with("import torch\r@torch.no_grad()\rdef evaluate("), "{fixed:?}");
    assert!(fixed.contains("from torch.amp import autocast\r\rwith autocast(\"cuda\"):\r"), "{fixed:?}");
    assert_eq!(fixed.replace('\r', "\n").lines().count(), CR_ONLY.replace('\r', "\n").lines().count() + 2);
}

#[test]
fn a_fix_that_would_not_parse_is_dropped_and_the_file_keeps_parsing() {
    // The function opens the file: the added import and the decorator both go at its
    // start, and must read import first.
    let dir = tempfile::tempdir().unwrap();
    let lf = CR_ONLY.replace('\r', "\n");
    fs::write(dir.path().join("lf.py"), &lf).unwrap();
    let (code, out, err) = run(&["check", "--fix", "--unsafe-fixes", "lf.py"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("would break the syntax"), "{err}");
    let fixed = fs::read_to_string(dir.path().join("lf.py")).unwrap();
    assert!(fixed.starts_with("import torch\n@torch.no_grad()\ndef evaluate("), "{fixed}");
}

/// `patch` applies `diff` to a copy of `original`; the result is returned.
fn patched(original: &[u8], diff: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.py");
    fs::write(&target, original).unwrap();
    fs::write(dir.path().join("fix.diff"), diff).unwrap();
    let output = Command::new("patch")
        .arg("--quiet")
        .arg("--binary")
        .arg(&target)
        .arg(dir.path().join("fix.diff"))
        .output()
        .expect("patch runs");
    assert!(output.status.success(), "patch rejects the diff:\n{diff:?}\n{}", String::from_utf8_lossy(&output.stdout));
    fs::read(&target).unwrap()
}

#[test]
fn diffs_on_files_with_doubled_carriage_returns_apply_with_patch() {
    for ending in ["\r\r\n", "\r", "\r\n", "\n"] {
        let source = AMP.replace('\n', ending);
        // Without a final line ending too: `\ No newline at end of file`.
        for source in [source.clone(), source.trim_end_matches(['\r', '\n']).to_string()] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join("amp.py"), &source).unwrap();
            let (code, diff, err) = run(&["check", "--diff", "amp.py"], dir.path());
            assert_eq!(code, 1, "{err}");
            let after_patch = patched(source.as_bytes(), &diff);
            let (code, _, err) = run(&["check", "--fix", "amp.py"], dir.path());
            assert_eq!(code, 0, "{err}");
            let fixed = fs::read(dir.path().join("amp.py")).unwrap();
            assert_eq!(after_patch, fixed, "the diff applied equals what --fix writes ({ending:?})");
            let expected = FIXED_AMP.replace('\n', ending);
            assert!(expected.starts_with(std::str::from_utf8(&fixed).unwrap()), "{ending:?}: {fixed:?}");
        }
    }
}

#[test]
fn measured_runs_that_are_not_finite_numbers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        ["--measured", "16:NaN", "--measured", "64:inf"],
        ["--measured", "16:1239", "--measured", "inf:4896"],
        ["--measured", "NaN:1239", "--measured", "64:4896"],
        ["--measured", "16:1239", "--measured", "64:infGiB"],
    ] {
        let mut all = vec!["estimate", "--gpu-memory", "8GiB"];
        all.extend(args);
        let (code, out, err) = run(&all, dir.path());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("--measured") && !out.contains("NaN") && !out.contains("inf"), "{args:?}: {out}{err}");
    }
}

#[test]
fn input_that_was_never_checked_is_not_reported_as_passing() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&["check", "missing.py"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("missing.py"), "{err}");
    assert!(!out.contains("All checks passed"), "{out}");
    assert!(out.contains("1 input could not be checked"), "{out}");
    fs::write(dir.path().join("binary.py"), b"x = 1\0").unwrap();
    fs::write(dir.path().join("ok.py"), "x = 1\n").unwrap();
    let (code, out, _) = run(&["check", "binary.py", "ok.py"], dir.path());
    assert_eq!(code, 2);
    assert!(out.contains("No problems found, but 1 input could not be checked"), "{out}");
    let (code, out, _) = run(&["check", "ok.py"], dir.path());
    assert_eq!((code, out.trim()), (0, "All checks passed."));
}
