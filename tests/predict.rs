//! `oomlint predict` against a real Python with PyTorch (the environment
//! `scripts/ensure-venv` creates, or `$OOMLINT_PYTHON`): the reference step's peak, split
//! and largest batch; the emulated device's backward against PyTorch's own engine; and
//! the steps it cannot predict. Each PyTorch start costs seconds, so each test starts as
//! few as it can and checks everything it can on what they return.

mod common;

use common::repo;
use std::path::PathBuf;
use std::process::{Command, Output};

fn python() -> PathBuf {
    let python = oomlint::measure::python::interpreter(None);
    let has_torch = Command::new(&python).args(["-c", "import torch"]).output().is_ok_and(|o| o.status.success());
    assert!(has_torch, "{} lacks PyTorch: run scripts/ensure-venv or set OOMLINT_PYTHON", python.display());
    python
}

fn predict(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomlint"))
        .arg("predict")
        .args(args)
        .arg("--python")
        .arg(python())
        .current_dir(repo())
        .output()
        .expect("oomlint runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const MIB: f64 = 1024.0 * 1024.0;

#[test]
fn the_reference_step_reproduces_the_published_training_rows_and_the_batch_that_fits() {
    let out = predict(&[
        "fixtures/predict/reference_step.py:step",
        "--batch-size",
        "64",
        "--gpu",
        "gtx1070",
        "--output-format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The published GTX 1070 figure for one training step at batch 64: 4,896 MiB.
    let peak = json["peak_bytes"].as_f64().unwrap() / MIB;
    assert!((peak - 4896.0).abs() / 4896.0 < 0.01, "{peak} MiB");
    // 8 GiB less 10%: batch 96 (published 7,334 MiB) fits, 97 does not.
    assert_eq!(json["max_batch_size"], 96, "{json}");
    assert_eq!(json["fits"], true);
    let runs = json["runs"].as_array().unwrap();
    let at = |batch: u64| runs.iter().find(|r| r["batch_size"] == batch).map(|r| r["peak_bytes"].as_f64().unwrap());
    // Each run's peak counts cuBLAS's modelled workspace, as the published figures do.
    let at_96 = at(96).unwrap() / MIB;
    assert!((at_96 - 7334.0).abs() / 7334.0 < 0.01, "{at_96} MiB at batch 96");
    assert!(at(97).unwrap() > 8192.0 * 0.9 * MIB, "97 must not fit: {runs:?}");
    assert!(runs.len() <= 6, "the line through two runs should find the answer: {runs:?}");

    // The split adds up to the peak, and says what a GPU holds at that moment.
    let categories = json["by_category"].as_object().unwrap();
    let sum: u64 = categories.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, json["peak_bytes"].as_u64().unwrap());
    assert_eq!(categories["cublas_workspace"].as_f64().unwrap(), 16.5 * MIB);
    let largest = categories.iter().max_by_key(|(_, v)| v.as_u64().unwrap()).unwrap().0;
    assert_eq!(largest, "activation");
    assert!(categories["parameter"].as_u64().unwrap() > 1_000_000, "{categories:?}");
    let lines = json["lines"].as_array().unwrap();
    let line_sum: u64 = lines.iter().map(|l| l["bytes"].as_u64().unwrap()).sum();
    assert_eq!(line_sum, json["emulated_peak_bytes"].as_u64().unwrap());
    assert!(lines[0]["code"].as_str().unwrap().contains("cross_entropy(model(images), labels)"), "{lines:?}");
    assert!(lines.iter().any(|l| l["code"] == "loss.backward()"), "{lines:?}");
    assert_eq!(json["device"], "cuda (emulated: fake tensors)");
}

#[test]
fn an_fp16_step_reproduces_the_published_autocast_row_and_reads_back_as_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let pickle = dir.path().join("predicted.pickle");
    let pickle_arg = pickle.display().to_string();
    // Batch 96 under fp16 autocast: published 5,040 MiB on a GTX 1070. cuDNN's modelled fp16
    // workspace was fitted on the batch-64 row, so this row is out of sample.
    let out = predict(&[
        "fixtures/predict/reference_step.py:step",
        "--batch-size",
        "96",
        "--amp",
        "fp16",
        "--snapshot",
        &pickle_arg,
        "--output-format",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak = json["peak_bytes"].as_u64().unwrap();
    assert!((peak as f64 / MIB - 5040.0).abs() / 5040.0 < 0.05, "{} MiB", peak as f64 / MIB);
    let categories = &json["by_category"];
    assert_eq!(categories["cudnn_fp16_workspace"].as_f64().unwrap(), 14.0 * 96.0 * MIB, "{categories}");
    assert_eq!(categories["cublas_workspace"].as_f64().unwrap(), 16.5 * MIB, "{categories}");

    // The snapshot: the same peak, the same split, the heaviest line named with its caller.
    let explained = Command::new(env!("CARGO_BIN_EXE_oomlint"))
        .args(["explain", &pickle_arg, "--output-format", "json"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(explained.status.success(), "{}", text(&explained.stderr));
    let report: serde_json::Value = serde_json::from_slice(&explained.stdout).unwrap();
    assert_eq!(report["peak_bytes"].as_u64(), Some(peak), "{report}");
    assert!(report["oom"].is_null());
    for category in ["activation", "cudnn_fp16_workspace", "cublas_workspace"] {
        assert_eq!(report["categories"][category], categories[category], "{category}: {report}");
    }
    let heaviest = &report["lines"][0];
    assert!(heaviest["file"].as_str().unwrap().ends_with("fixtures/reference_model.py"), "{heaviest}");
    assert_eq!(heaviest["function"], "forward");
    let predicted_line = json["lines"][0]["line"].as_u64().unwrap();
    let callers = heaviest["callers"].as_array().unwrap();
    assert!(
        callers
            .iter()
            .any(|c| c["file"].as_str().unwrap().ends_with("reference_step.py") && c["line"] == predicted_line),
        "the heaviest line's caller is predict's heaviest line {predicted_line}: {heaviest}"
    );
}

#[test]
fn the_emulated_backward_gives_the_gradients_pytorch_gives() {
    let out = Command::new(python())
        .arg(repo().join("tests/cases/predict/engine_matches_pytorch.py"))
        .arg(repo().join("src/measure"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("gradients match:"), "{}", text(&out.stdout));
}

#[test]
fn a_step_that_cannot_be_predicted_is_one_clear_line_and_exit_2() {
    let steps = "tests/cases/predict/unpredictable_steps.py";
    let cases: &[(String, &str)] = &[
        ("fixtures/predict/missing.py:step".into(), "fixtures/predict/missing.py: no such file"),
        ("fixtures/predict/reference_step.py".into(), "expected FILE.py:FUNCTION"),
        (format!("{steps}:nothere"), "has no function `nothere` (functions defined there: fails, host_memory"),
        (format!("{steps}:fails"), "the step raised ValueError (line 10: `raise ValueError("),
        (format!("{steps}:needs_data"), "the step needs real tensor values, which fake tensors do not have (line 15"),
        (format!("{steps}:host_memory"), "the host ran out of memory running the step (line 25"),
    ];
    // Each case starts its own PyTorch: run them side by side.
    let outputs: Vec<Output> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            cases.iter().map(|(target, _)| scope.spawn(move || predict(&[target, "--batch-size", "4"]))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((target, expected), out) in cases.iter().zip(outputs) {
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {stderr}");
        assert!(out.stdout.is_empty(), "{target}: {}", text(&out.stdout));
        assert_eq!(stderr.lines().count(), 1, "{target}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(expected), "{target}: {stderr}");
    }
}
