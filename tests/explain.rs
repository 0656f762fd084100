//! `oomlint explain` on out-of-memory messages as people paste them.
//!
//! - tests/cases/explain/: variants of every family (wraps, colours, prefixes, units,
//!   several messages in one log); every one must get its expected reading.
//! - tests/cases/explain/real/: real messages from public issues, with the verdict and
//!   its arithmetic decided from the figures; every one must get its verdict.
//! - tests/cases/explain/held-out/: real messages labelled before the tool ever read
//!   them and never tuned on: agreement is reported, not required.
//!
//! Agreement per group is printed (`cargo test --test explain -- --nocapture`).

mod common;

use common::{oomlint, repo};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(serde::Deserialize)]
struct Expected {
    verdict: String,
    family: Option<String>,
    device: Option<u32>,
    requested_mib: Option<f64>,
    messages: Option<usize>,
    /// The other verdicts whose conditions hold (real messages only).
    also: Option<Vec<String>>,
    /// The figures the message should have given and did not (real messages only).
    missing: Option<Vec<String>>,
    /// The kind of message, for the agreement report (real messages only).
    group: Option<String>,
}

fn cases(dir: &Path) -> BTreeMap<String, Expected> {
    let text = std::fs::read_to_string(dir.join("expected.toml")).unwrap();
    let expected: BTreeMap<String, Expected> = toml::from_str(&text).unwrap();
    let mut logs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".log"))
        .collect();
    logs.sort();
    assert_eq!(
        logs,
        expected.keys().cloned().collect::<Vec<_>>(),
        "every log has an expectation and every expectation a log"
    );
    expected
}

/// How the tool read one message against its expectation: every difference, in words.
fn differences(dir: &Path, name: &str, want: &Expected) -> Vec<String> {
    let out = oomlint(&["explain", name, "--output-format", "json"], dir);
    if want.verdict == "unrecognised" {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut wrong = Vec::new();
        if out.status.code() != Some(2) || !stderr.starts_with("error: no out-of-memory message found") {
            wrong.push(format!("verdict: expected no message found, got exit {:?}: {stderr}", out.status.code()));
        }
        if !out.stdout.is_empty() {
            wrong.push("a guess on standard output".into());
        }
        return wrong;
    }
    let got: Value = match serde_json::from_slice(&out.stdout) {
        Ok(got) if out.status.success() => got,
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return vec![format!("verdict: no reading (exit {:?}): {}", out.status.code(), stderr.trim())];
        }
    };
    let mut wrong = Vec::new();
    let mut check = |what: &str, ok: bool, detail: String| {
        if !ok {
            wrong.push(format!("{what}: {detail}"));
        }
    };
    check(
        "verdict",
        got["verdict"] == want.verdict.as_str(),
        format!("expected {}, got {}", want.verdict, got["verdict"]),
    );
    check("family", got["family"].as_str() == want.family.as_deref(), format!("got {}", got["family"]));
    check("device", got["device"].as_u64().map(|d| d as u32) == want.device, format!("got {}", got["device"]));
    let requested = got["figures"]["requested_bytes"].as_f64().map(|b| b / 1024.0 / 1024.0);
    let requested_ok = match (want.requested_mib, requested) {
        (Some(want), Some(got)) => (want - got).abs() < 1e-6,
        (None, None) => true,
        _ => false,
    };
    check("requested", requested_ok, format!("expected {:?} MiB, got {requested:?}", want.requested_mib));
    let strings = |value: &Value| -> Vec<String> {
        let mut list: Vec<String> = value
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default();
        list.sort();
        list
    };
    if let Some(also) = &want.also {
        let mut also = also.clone();
        also.sort();
        check("also", strings(&got["also"]) == also, format!("expected {also:?}, got {}", got["also"]));
    }
    if let Some(missing) = &want.missing {
        let mut missing = missing.clone();
        missing.sort();
        check("missing", strings(&got["missing"]) == missing, format!("expected {missing:?}, got {}", got["missing"]));
    }
    for key in ["evidence", "fixes"] {
        check(key, got[key].as_array().is_some_and(|a| !a.is_empty()), "empty".into());
    }
    let all = oomlint(&["explain", name, "--all", "--output-format", "json"], dir);
    let count = serde_json::from_slice::<Value>(&all.stdout).ok().and_then(|v| v.as_array().map(Vec::len));
    check("--all", count == Some(want.messages.unwrap_or(1)), format!("{count:?} messages"));
    wrong
}

/// Runs every message in `dir`, prints agreement on the verdict per group, and returns
/// each message's differences.
fn report(dir: &Path, title: &str) -> BTreeMap<String, Vec<String>> {
    let expected = cases(dir);
    let mut per_group: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut found = BTreeMap::new();
    for (name, want) in &expected {
        let wrong = differences(dir, name, want);
        let group = per_group.entry(want.group.clone().unwrap_or_else(|| "variants".into())).or_default();
        group.0 += usize::from(!wrong.iter().any(|w| w.starts_with("verdict")));
        group.1 += 1;
        found.insert(name.clone(), wrong);
    }
    let (agree, total) = per_group.values().fold((0, 0), |(a, t), (ga, gt)| (a + ga, t + gt));
    let mut lines =
        vec![format!("{title}: verdict agreement {agree}/{total} ({:.0}%)", 100.0 * agree as f64 / total as f64)];
    for (group, (a, t)) in &per_group {
        lines.push(format!("  {group:<18} {a}/{t}"));
    }
    for (name, wrong) in &found {
        if !wrong.is_empty() {
            lines.push(format!("  {name}: {}", wrong.join("; ")));
        }
    }
    eprintln!("{}", lines.join("\n"));
    found
}

fn explain_dir(sub: &str) -> PathBuf {
    repo().join("tests/cases/explain").join(sub)
}

fn assert_all_read(found: &BTreeMap<String, Vec<String>>) {
    let wrong: Vec<String> =
        found.iter().filter(|(_, w)| !w.is_empty()).map(|(n, w)| format!("{n}: {}", w.join("; "))).collect();
    assert!(wrong.is_empty(), "{} messages read wrongly:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn every_variant_gets_its_expected_reading() {
    let found = report(&explain_dir(""), "variants");
    assert!(found.len() >= 25, "the variants cover every family");
    assert_all_read(&found);
}

#[test]
fn every_real_message_gets_the_verdict_its_figures_support() {
    let found = report(&explain_dir("real"), "real messages (tuned)");
    assert!(found.len() >= 60, "at least 60 real messages");
    assert_all_read(&found);
}

#[test]
fn held_out_agreement_is_reported() {
    let found = report(&explain_dir("held-out"), "real messages (held out)");
    assert!(found.len() >= 20, "at least 20 held-out messages");
    // Agreement is reported above, not required; but no message may crash the tool.
    for (name, wrong) in &found {
        let crashed = wrong.iter().any(|w| w.contains("(exit Some(101))") || w.contains("(exit None)"));
        assert!(!crashed, "{name}: {wrong:?}");
    }
}

#[test]
fn the_verdict_shows_its_evidence_and_the_fix_order() {
    let dir = explain_dir("");
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
    let dir = explain_dir("");
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
    let dir = explain_dir("");
    let log = std::fs::read(dir.join("mps-exhaustion.log")).unwrap();
    let out = common::oomlint_with_stdin(&["explain", "--output-format", "json"], &dir, &log);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["verdict"], "exhaustion");
    let out = oomlint(&["explain", "missing.log"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot read missing.log"));
}

/// Advice names the platform's own tools: never nvidia-smi, NCCL or CUDA_VISIBLE_DEVICES
/// for a Mac, never NVIDIA's tools for ROCm.
#[test]
fn advice_is_for_the_platform_the_message_came_from() {
    let mut seen = BTreeMap::<&str, usize>::new();
    for sub in ["", "real"] {
        let dir = explain_dir(sub);
        for (name, want) in cases(&dir) {
            let family = want.family.as_deref().unwrap_or("");
            let platform = match family {
                "mps" => "mps",
                "hip" | "hip-driver" => "rocm",
                _ => continue,
            };
            *seen.entry(platform).or_default() += 1;
            let out = oomlint(&["explain", &name], &dir);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let foreign: &[&str] = match platform {
                "mps" => &["nvidia-smi", "NCCL", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "autocast(\"cuda\""],
                _ => &["nvidia-smi", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING"],
            };
            for word in foreign {
                assert!(!text.contains(word), "{sub}/{name} ({platform}) names {word}:\n{text}");
            }
            let fixes = text.split("fix, in this order:").nth(1).unwrap_or("");
            match (platform, want.verdict.as_str()) {
                ("mps", "exhaustion") => assert!(fixes.contains("torch.autocast(\"mps\""), "{name}:\n{text}"),
                ("mps", "held-outside-pytorch") => assert!(fixes.contains("Activity Monitor"), "{name}:\n{text}"),
                ("mps", _) => {}
                (_, "held-outside-pytorch") => {
                    assert!(fixes.contains("rocm-smi") && fixes.contains("HIP_VISIBLE_DEVICES"), "{name}:\n{text}")
                }
                (_, "driver-level") => {
                    assert!(fixes.contains("AMD_SERIALIZE_KERNEL=3") && fixes.contains("rocm-smi"), "{name}:\n{text}")
                }
                _ => {}
            }
            if platform == "mps" {
                assert!(fixes.contains("PYTORCH_MPS_HIGH_WATERMARK_RATIO"), "{name}:\n{text}");
            }
        }
    }
    assert!(seen.get("mps").copied().unwrap_or(0) >= 5 && seen.get("rocm").copied().unwrap_or(0) >= 5, "{seen:?}");
}

/// A figure the message does not give is named, never read as zero.
#[test]
fn missing_figures_are_named_and_not_read_as_zero() {
    let dir = explain_dir("");
    let out = oomlint(&["explain", "cuda2-cut-before-split.log", "--output-format", "json"], &dir);
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["figures"]["allocated_bytes"], Value::Null);
    assert_eq!(got["missing"], serde_json::json!(["allocated", "reserved_unallocated"]));
    let out = oomlint(&["explain", "cuda2-cut-before-split.log"], &dir);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("not in the message: allocated, reserved unallocated"), "{text}");
    assert!(!text.contains("allocated by PyTorch "), "no allocated row for a figure not given:\n{text}");
}
