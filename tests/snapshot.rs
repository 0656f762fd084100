//! `oomlint explain` on PyTorch memory snapshots.
//!
//! - A snapshot made by PyTorch's profiler over tests/snapshot/train_step.py (one PyTorch
//!   run, tests/snapshot/make_snapshots.py, shared by every test here that needs it): the
//!   function holding the most memory, its bytes and the categories must agree within 1%
//!   with what torch.cuda._memory_viz computes on the same file.
//! - CUDA caching-allocator snapshots built from the documented format by the same run,
//!   read back by _memory_viz: the out-of-memory event, fragmentation, the dump.
//! - Bad input, written here without Python: one line on standard error, exit 2.

mod common;

use common::repo;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const MIB: u64 = 1024 * 1024;

fn oomlint(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oomlint")).args(args).current_dir(cwd).output().expect("oomlint runs")
}

/// The snapshots and _memory_viz's figures on them, made once for all tests.
fn made() -> &'static (tempfile::TempDir, Value) {
    static MADE: OnceLock<(tempfile::TempDir, Value)> = OnceLock::new();
    MADE.get_or_init(|| {
        let python = oomlint::measure::python::interpreter(None);
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(&python)
            .arg(repo().join("tests/snapshot/make_snapshots.py"))
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| {
                panic!("{} does not run ({e}): run scripts/ensure-venv or set OOMLINT_PYTHON", python.display())
            });
        assert!(
            out.status.success(),
            "make_snapshots.py failed (PyTorch is needed: scripts/ensure-venv, or OOMLINT_PYTHON):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference = std::fs::read_to_string(dir.path().join("reference.json")).unwrap();
        (dir, serde_json::from_str(&reference).unwrap())
    })
}

fn snapshot(name: &str) -> PathBuf {
    made().0.path().join(name)
}

fn reference(name: &str) -> &'static Value {
    &made().1[name]
}

fn explain_json(path: &Path) -> Value {
    // From the script's directory: the profiler writes paths relative to it.
    let out = oomlint(&["explain", path.to_str().unwrap(), "--output-format", "json"], &repo().join("tests/snapshot"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn within_one_percent(got: &Value, want: &Value, what: &str) {
    let (got, want) = (got.as_f64().unwrap_or(f64::NAN), want.as_f64().unwrap());
    assert!((got - want).abs() <= want * 0.01, "{what}: {got} vs _memory_viz's {want}");
}

#[test]
fn a_profiler_snapshot_names_the_function_that_held_the_most_memory() {
    let report = explain_json(&snapshot("profile.pickle"));
    let want = reference("profile");
    assert_eq!(report["snapshot"], "profiler");
    assert_eq!(report["device"], "cpu");
    assert_eq!(report["at"], "peak");
    let top = &report["functions"][0];
    assert_eq!(
        (top["file"].as_str(), top["function"].as_str()),
        (Some("train_step.py"), Some("forward")),
        "{report:#}"
    );
    within_one_percent(&top["bytes"], &want["by_function"]["forward"], "forward's bytes");
    let line = &report["lines"][0];
    assert_eq!((line["function"].as_str(), line["line"].as_u64()), (Some("forward"), Some(20)));
    assert_eq!(line["callers"][0]["function"], "evaluate");
    within_one_percent(&report["peak_bytes"], &want["allocated_bytes"], "peak");
    within_one_percent(&report["allocated_bytes"], &want["allocated_bytes"], "allocated at the peak");
    for category in ["activation", "parameter", "gradient", "optimizer_state"] {
        within_one_percent(&report["categories"][category], &want["categories"][category], category);
    }
    for function in ["train_step", "__init__"] {
        let got = report["functions"].as_array().unwrap().iter().find(|f| f["function"] == function).unwrap();
        within_one_percent(&got["bytes"], &want["by_function"][function], function);
    }
    assert_eq!(report["segments"], Value::Null, "the profiler's segments are not the allocator's");
    assert_eq!(report["oom"], Value::Null);
}

#[test]
fn the_line_that_held_memory_shows_the_findings_that_explain_it() {
    let report = explain_json(&snapshot("profile.pickle"));
    let codes: Vec<(&str, u64)> = report["lines"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["code"].as_str().unwrap(), f["line"].as_u64().unwrap()))
        .collect();
    // evaluate() keeps each loss with its graph (OOM001) and runs without no_grad (OOM002).
    assert!(codes.contains(&("OOM001", 38)) && codes.contains(&("OOM002", 37)), "{codes:?}");
    let out = oomlint(&["explain", snapshot("profile.pickle").to_str().unwrap()], &repo().join("tests/snapshot"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("train_step.py:20 in forward") && text.contains("◆ OOM001 at train_step.py:38"), "{text}");
    assert!(text.contains("by category:") && text.contains("optimizer state"), "{text}");
}

#[test]
fn the_plot_is_written_as_svg_and_html() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["plot.svg", "plot.html"] {
        let target = dir.path().join(name);
        let out = oomlint(
            &["explain", snapshot("profile.pickle").to_str().unwrap(), "--plot", target.to_str().unwrap()],
            &repo().join("tests/snapshot"),
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&target).unwrap();
        assert!(text.contains("<svg") && text.contains("</svg>"), "{name}");
        // One band per heavy line and one for the rest, the heaviest named in the legend.
        assert!(text.matches("<polygon").count() >= 4, "{name}");
        assert!(text.contains("train_step.py:20 forward"), "{name}");
        assert_eq!(text.starts_with("<!DOCTYPE html>"), name.ends_with(".html"));
    }
}

#[test]
fn a_cuda_snapshot_explains_the_out_of_memory_event_and_its_fragmentation() {
    assert_eq!(reference("cuda-oom")["trace_has_oom"], true, "_memory_viz reads the built trace");
    let report = explain_json(&snapshot("cuda-oom.pickle"));
    assert_eq!(report["snapshot"], "allocator");
    assert_eq!(report["device"], "cuda:0");
    assert_eq!(report["at"], "oom");
    assert_eq!(report["oom"]["requested_bytes"], 10 * MIB);
    assert_eq!(report["oom"]["device_free_bytes"], 2 * MIB);
    assert!(report["oom"]["verdict"].as_str().unwrap().starts_with("fragmentation"), "{report:#}");
    assert_eq!(
        report["segments"],
        json!({"count": 2, "reserved_bytes": 40 * MIB, "allocated_bytes": 22 * MIB, "free_bytes": 18 * MIB,
               "largest_free_block_bytes": 8 * MIB})
    );
    let lines: Vec<(&str, u64, u64)> = report["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["function"].as_str().unwrap(), l["line"].as_u64().unwrap(), l["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(lines, [("forward", 30, 14 * MIB), ("evaluate", 55, 8 * MIB)]);
    assert_eq!(report["peak_bytes"], 28 * MIB);
    assert_eq!(report["categories"], json!({}));
}

#[test]
fn a_cuda_snapshot_without_a_trace_is_explained_as_dumped() {
    let want = reference("cuda-dump");
    let report = explain_json(&snapshot("cuda-dump.pickle"));
    assert_eq!(report["at"], "dump");
    assert_eq!(report["allocated_bytes"], want["allocated_bytes"], "_memory_viz.memory()'s live blocks");
    assert_eq!(want["segsum"]["total_reserved"], "40.0Mi");
    assert_eq!(report["segments"]["reserved_bytes"], 40 * MIB);
    assert_eq!(report["segments"]["largest_free_block_bytes"], 12 * MIB);
}

/// A pickle of `value` (protocol 3), written without Python.
fn pickle(value: &Value) -> Vec<u8> {
    pickled::to_vec(value, pickled::SerOptions::new()).unwrap()
}

fn frame_free_snapshot() -> Value {
    json!({
        "segments": [{"device": 0, "address": 4096, "total_size": 2048, "allocated_size": 1024, "stream": 0,
                      "blocks": [{"size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": []},
                                 {"size": 1024, "state": "inactive"}]}],
        "device_traces": [[{"action": "alloc", "addr": 4096, "size": 1000, "stream": 0, "frames": []}]],
    })
}

#[test]
fn bad_input_gets_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = pickle(&frame_free_snapshot());
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("text.pickle", b"segments: none\n".to_vec(), "not a pickle"),
        ("truncated.pickle", good[..good.len() / 2].to_vec(), "truncated pickle"),
        ("dict.pickle", pickle(&json!({"weights": [1, 2, 3]})), "not a memory snapshot: a dict with keys `weights`"),
        ("list.pickle", pickle(&json!([1, 2])), "not a memory snapshot: the pickle holds a list"),
        // GLOBAL builtins.eval, then REDUCE: what a malicious pickle does.
        (
            "code.pickle",
            b"\x80\x04cbuiltins\neval\n(X\x0b\x00\x00\x00print('hi')tR.".to_vec(),
            "constructs Python objects",
        ),
        ("no-frames.pickle", good.clone(), "the snapshot has no stack frames"),
        ("empty.pickle", pickle(&json!({"segments": [], "device_traces": [[]]})), "the snapshot is empty"),
        (
            "bad-segment.pickle",
            pickle(&json!({"segments": [{"address": "x", "total_size": 1, "blocks": []}], "device_traces": []})),
            "segment 0's address is a string",
        ),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = oomlint(&["explain", path.to_str().unwrap()], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: {}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains(expected), "{name}: {stderr}");
    }
}

#[test]
fn a_snapshot_written_by_another_pickler_reads_the_same() {
    // Protocol 3 from Rust, no memo sharing: the same figures as any other writer's.
    let mut value = frame_free_snapshot();
    let frames = json!([{"filename": "/home/u/train.py", "line": 12, "name": "step"},
                        {"filename": "/home/u/train.py", "line": 40, "name": "main"}]);
    value["segments"][0]["blocks"][0]["frames"] = frames.clone();
    value["device_traces"][0][0]["frames"] = frames;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.pickle");
    std::fs::write(&path, pickle(&value)).unwrap();
    let report = explain_json(&path);
    assert_eq!(report["lines"][0]["file"], "/home/u/train.py");
    assert_eq!(report["lines"][0]["bytes"], 1000);
    assert_eq!(report["at"], "peak");
}
