//! `oomlint measure` against a real Python with PyTorch (the environment `scripts/ensure-venv`
//! creates, or `$OOMLINT_PYTHON`): the backends' refusal and fallback paths, bad fixtures,
//! a missing interpreter or PyTorch, and writing and checking the measurements file.
//! The full fake-backend run of every rule and the reference table is `scripts/test`'s.

mod common;

use common::repo;
use oomlint::measure::measurements::{Measurements, Variant};
use std::path::PathBuf;
use std::process::{Command, Output};

fn oomlint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomlint")).args(args).current_dir(repo()).output().expect("oomlint runs")
}

/// The interpreter `oomlint measure` picks by default; these tests need its PyTorch.
fn python() -> PathBuf {
    let python = oomlint::measure::python::interpreter(None);
    let has_torch = Command::new(&python).args(["-c", "import torch"]).output().is_ok_and(|o| o.status.success());
    assert!(
        has_torch,
        "{} lacks PyTorch: run scripts/ensure-venv (scripts/test does) or set OOMLINT_PYTHON",
        python.display()
    );
    python
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether PyTorch here can use a CUDA device (decides which refusal path is expected).
fn torch_has_cuda() -> bool {
    let check = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)";
    Command::new(python()).args(["-c", check]).status().is_ok_and(|s| s.success())
}

/// A fixtures directory holding the reference model and the given rule directories.
fn fixtures_with(rules: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = dir.path().join("fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    std::fs::copy(repo().join("fixtures/reference_model.py"), fixtures.join("reference_model.py")).unwrap();
    for rule in rules {
        std::fs::create_dir_all(fixtures.join(rule)).unwrap();
        for script in ["bad.py", "good.py"] {
            std::fs::copy(repo().join("fixtures").join(rule).join(script), fixtures.join(rule).join(script)).unwrap();
        }
    }
    dir
}

#[test]
fn the_cuda_backend_is_refused_without_a_usable_device() {
    let python = python();
    if torch_has_cuda() {
        let out = oomlint(&["measure", "--backend", "cuda", "OOM002", "--python", python.to_str().unwrap()]);
        assert!(out.status.success() && text(&out.stdout).contains(" cuda "), "{}", text(&out.stderr));
        return;
    }
    let out = oomlint(&["measure", "--backend", "cuda", "OOM001", "--python", python.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: the cuda backend needs a usable CUDA device:"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty(), "nothing was measured");

    // The runner refuses on its own too, rather than report CUDA's silent zeros.
    let runner = repo().join("src/measure/runner.py");
    let script = repo().join("fixtures/OOM001-loss-tensor-kept/bad.py");
    let out = Command::new(&python)
        .args([runner.to_str().unwrap(), "--backend", "cuda", "--script", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let record = text(&out.stdout);
    assert!(record.starts_with("OOMLINT-RECORD {") && record.contains("no usable CUDA device"), "{record}");
}

#[test]
fn auto_measures_on_fake_when_there_is_no_cuda_device_and_says_so() {
    let python = python();
    if torch_has_cuda() {
        return; // auto then measures on the GPU: covered by the cuda test above.
    }
    let out = oomlint(&["measure", "OOM002", "--output-format", "json", "--python", python.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("measuring with the fake backend"), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["rule"], "OOM002");
        assert_eq!(row["backend"], "fake");
        assert!(row["peak_mib"].as_f64().unwrap() > 700.0, "{row}");
    }
    let (bad, good) = (&rows[0], &rows[1]);
    assert_eq!((bad["variant"].as_str(), good["variant"].as_str()), (Some("bad"), Some("good")));
    assert!(bad["peak_bytes"].as_u64() > good["peak_bytes"].as_u64().map(|g| 4 * g), "{bad} {good}");
    assert!(bad["cost"].as_str().unwrap().contains("under `torch.no_grad()`"), "{bad}");
}

#[test]
fn a_crashing_hanging_or_silent_fixture_is_reported_and_the_rest_still_run() {
    let python = python();
    let dir = fixtures_with(&["OOM002-eval-without-no-grad"]);
    let fixtures = dir.path().join("fixtures");
    let broken = fixtures.join("OOM001-loss-tensor-kept");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("bad.py"), "def main():\n    raise ValueError('the fixture broke')\n").unwrap();
    std::fs::write(broken.join("good.py"), "import time\n\ndef main():\n    time.sleep(600)\n").unwrap();
    // No main() to measure.
    std::fs::write(fixtures.join("OOM002-eval-without-no-grad/bad.py"), "print('no main here')\n").unwrap();
    let measure = |rule: &str, timeout: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_oomlint"))
            .args(["measure", rule, "--backend", "fake", "--timeout", timeout, "--python"])
            .arg(&python)
            .arg("--fixtures")
            .arg(&fixtures)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stdout) + &text(&out.stderr))
    };
    // The limit counts from when the script starts, not from PyTorch's import (20 s and
    // more on a loaded two-core machine), so a short one stops only the sleeping script.
    let (status, stdout) = measure("OOM001", "20");
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("ValueError: the fixture broke"), "{stdout}");
    assert!(stdout.contains("good.py   error: timed out after 20 s"), "{stdout}");
    // A real training run next to a script with nothing to measure.
    let (status, stdout) = measure("OOM002", "600");
    assert_eq!(status, Some(1), "{stdout}");
    assert!(stdout.contains("defines no main() to measure"), "{stdout}");
    let good_line = stdout
        .lines()
        .skip_while(|l| !l.starts_with("OOM002"))
        .find(|l| l.starts_with("  good.py"))
        .unwrap_or_default();
    assert!(good_line.contains("good.py") && good_line.contains("peak") && good_line.contains("781 MiB"), "{stdout}");
}

#[test]
fn a_missing_python_or_pytorch_is_one_line_saying_how_to_install_it() {
    let out = oomlint(&["measure", "OOM001", "--python", "/nonexistent/python3"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: cannot run Python `/nonexistent/python3`"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // A Python without site-packages has no PyTorch.
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("python");
    std::fs::write(&bare, "#!/bin/sh\nexec python3 -S -I \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bare, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = oomlint(&["measure", "OOM001", "--python", bare.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("PyTorch is not installed") && stderr.contains("scripts/ensure-venv"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn written_figures_feed_the_docs_and_a_changed_figure_fails_the_check() {
    let python = python();
    let dir = fixtures_with(&["OOM002-eval-without-no-grad"]);
    let fixtures = dir.path().join("fixtures");
    let docs = dir.path().join("docs/rules");
    std::fs::create_dir_all(&docs).unwrap();
    let doc = docs.join("OOM002-eval-without-no-grad.md");
    std::fs::write(&doc, "# OOM002 eval-without-no-grad\n\n## Why is this bad?\nIt is.\n\n## Example\nx\n").unwrap();
    let measure = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_oomlint"))
            .args(["measure", "OOM002", "--backend", "fake", "--python"])
            .arg(&python)
            .arg("--fixtures")
            .arg(&fixtures)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = measure(&["--write"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = fixtures.join("measurements.json");
    let mut recorded = Measurements::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(recorded.runs.len(), 2);
    let bad = recorded.runs.iter().find(|r| r.variant == Variant::Bad).unwrap();
    assert_eq!(bad.script, "OOM002-eval-without-no-grad/bad.py");
    assert!(bad.figures.peak_bytes > 4_000 * 1024 * 1024, "{bad:?}");
    let written = std::fs::read_to_string(&doc).unwrap();
    let section = oomlint::measure::cost::cost_section(&written).unwrap();
    assert!(section.starts_with("4,621 MiB peak") && section.contains("fake backend"), "{written}");
    assert!(written.find("## Measured cost") < written.find("## Example"), "{written}");

    assert!(measure(&["--check"]).status.success(), "the same figures again");
    recorded.runs[0].figures.peak_bytes += 512;
    std::fs::write(&file, recorded.to_json()).unwrap();
    let out = measure(&["--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("OOM002 bad.py (fake): recorded peak"), "{}", text(&out.stderr));
}

#[test]
fn the_probe_names_the_gpu_or_says_plainly_there_is_none() {
    let out = oomlint(&["measure", "--probe"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    match oomlint::measure::device::probe() {
        Ok(facts) => assert!(stdout.starts_with(&facts.name) && stdout.contains("driver"), "{stdout}"),
        Err(reason) => assert_eq!(stdout.trim(), reason),
    }
    assert!(!stdout.trim().is_empty());
}

/// The cpu backend computes for real; the fake one only propagates shapes. The tracker
/// must count the same bytes on both, so the recorded fake figures stand for real runs.
#[test]
fn real_cpu_compute_counts_the_same_bytes_as_the_fake_backend() {
    let python = python();
    let out = oomlint(&[
        "measure",
        "OOM001",
        "--backend",
        "cpu",
        "--output-format",
        "json",
        "--python",
        python.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let recorded = &oomlint::measure::cost::COMPILED;
    for row in rows.as_array().unwrap() {
        assert_eq!(row["backend"], "cpu");
        let variant = if row["variant"] == "bad" { Variant::Bad } else { Variant::Good };
        let fake = recorded
            .runs
            .iter()
            .find(|r| {
                r.rule == "OOM001" && r.variant == variant && r.figures.backend == oomlint::measure::Backend::Fake
            })
            .expect("a recorded fake run");
        assert_eq!(row["peak_bytes"].as_u64(), Some(fake.figures.peak_bytes), "{row}");
        assert_eq!(row["end_bytes"].as_u64(), Some(fake.figures.end_bytes), "{row}");
    }
}
