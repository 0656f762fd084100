//! `oomlint explain` on a corpus of real message variants (tests/cases/explain): every
//! family, truncated and wrapped messages, ANSI colours, multi-GPU logs and odd units,
//! each with its expected verdict; unrecognised input exits 2.

mod common;

use common::{oomlint, repo};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(serde::Deserialize)]
struct Expected {
    verdict: String,
    family: Option<String>,
    device: Option<u32>,
    requested_mib: Option<f64>,
    messages: Option<usize>,
}

fn corpus() -> BTreeMap<String, Expected> {
    let text = std::fs::read_to_string(repo().join("tests/cases/explain/expected.toml")).unwrap();
    toml::from_str(&text).unwrap()
}

#[test]
fn every_message_in_the_corpus_gets_its_expected_verdict() {
    let dir = repo().join("tests/cases/explain");
    let expected = corpus();
    let logs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log"))
        .collect();
    assert!(logs.len() >= 25, "the corpus holds at least 25 variants");
    assert_eq!(logs.len(), expected.len(), "every log has an expectation and every expectation a log");
    for (name, want) in &expected {
        let out = oomlint(&["explain", name, "--output-format", "json"], &dir);
        if want.verdict == "unrecognised" {
            assert_eq!(out.status.code(), Some(2), "{name}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with("error: no out-of-memory message found"), "{name}: {stderr}");
            assert!(out.stdout.is_empty(), "{name}: no guess on standard output");
            continue;
        }
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["verdict"], want.verdict.as_str(), "{name}: {got:#}");
        assert_eq!(got["family"].as_str(), want.family.as_deref(), "{name}");
        assert_eq!(got["device"].as_u64().map(|d| d as u32), want.device, "{name}");
        let requested = got["figures"]["requested_bytes"].as_f64().map(|b| b / 1024.0 / 1024.0);
        match want.requested_mib {
            Some(mib) => assert!((requested.unwrap_or(-1.0) - mib).abs() < 1e-6, "{name}: requested {requested:?}"),
            None => assert!(requested.is_none(), "{name}: requested {requested:?}"),
        }
        assert!(!got["evidence"].as_array().unwrap().is_empty() && !got["fixes"].as_array().unwrap().is_empty());
        let all = oomlint(&["explain", name, "--all", "--output-format", "json"], &dir);
        let all: Value = serde_json::from_slice(&all.stdout).unwrap();
        assert_eq!(all.as_array().unwrap().len(), want.messages.unwrap_or(1), "{name}: --all");
    }
}

#[test]
fn the_verdict_shows_its_evidence_and_the_fix_order() {
    let dir = repo().join("tests/cases/explain");
    let out = oomlint(&["explain", "cuda2-fragmentation.log"], &dir);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("verdict: fragmentation"), "{text}");
    assert!(text.contains("7.88 GiB is reserved by PyTorch but unallocated — 3.9× the 2.00 GiB requested"), "{text}");
    let fix = text.find("1. set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True").expect("expandable segments first");
    assert!(fix < text.find("a smaller batch").unwrap());
    assert!(text.contains("torch.cuda.empty_cache() would not help"), "{text}");

    let out = oomlint(&["explain", "driver-error.log"], &dir);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("verdict: driver-level failure") && text.contains("empty_cache() may help"), "{text}");
}

#[test]
fn a_batch_size_gives_the_batch_that_fits() {
    let dir = repo().join("tests/cases/explain");
    let out = oomlint(&["explain", "cuda2-exhaustion.log", "--batch-size", "64", "--output-format", "json"], &dir);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 64 × 0.9 × 79.15 GiB / (77.95 GiB + 20 MiB) = 58.4
    assert_eq!(got["batch_that_fits"], 58);
    let out = oomlint(&["explain", "cuda2-fragmentation.log", "--batch-size", "64", "--output-format", "json"], &dir);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["batch_that_fits"], Value::Null, "a fragmented card needs no smaller batch");
}

#[test]
fn reads_standard_input_and_reports_unreadable_files() {
    let dir = repo().join("tests/cases/explain");
    let log = std::fs::read(dir.join("mps-exhaustion.log")).unwrap();
    let out = common::oomlint_with_stdin(&["explain", "--output-format", "json"], &dir, &log);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["verdict"], "exhaustion");
    let out = oomlint(&["explain", "missing.log"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot read missing.log"));
}
