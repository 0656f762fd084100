//! `oomlint estimate` end to end: the static memory and its verdict for a card, the
//! activation line fitted to measured runs (the reference figures: 16 → 1,239 MiB and
//! 64 → 4,896 MiB predict 96 → 7,334 MiB), and clear errors for bad arguments.

mod common;

use common::{oomlint, repo};
use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let out = oomlint(args, &repo());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn weights_gradients_and_optimizer_state_against_the_card() {
    let got = json(&["estimate", "--params", "7B", "--gpu-memory", "24GiB", "--output-format", "json"]);
    assert_eq!(got["static_bytes"], 112e9);
    assert_eq!(got["optimizer_bytes"], 56e9);
    assert_eq!(got["static_verdict"], "does-not-fit");
    let got = json(&[
        "estimate",
        "--params",
        "125M",
        "--optimizer",
        "sgd",
        "--gpu-memory",
        "24GiB",
        "--output-format",
        "json",
    ]);
    assert_eq!(got["static_bytes"], 1e9);
    assert_eq!(got["static_verdict"], "fits");
    let out = oomlint(&["estimate", "--params", "7B", "--gpu-memory", "24GiB"], &repo());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("112.0 GB")
            && text.contains("does not fit at any batch size")
            && text.contains("short by 80.31 GiB"),
        "{text}"
    );
}

#[test]
fn two_measured_runs_predict_the_third_and_the_largest_batch() {
    let got = json(&[
        "estimate",
        "--measured",
        "16:1239",
        "--measured",
        "64:4896",
        "--batch-size",
        "96",
        "--gpu-memory",
        "8GiB",
        "--output-format",
        "json",
    ]);
    let predicted = got["predicted_mib"].as_f64().unwrap();
    assert!((predicted - 7334.0).abs() / 7334.0 < 0.01, "{predicted}");
    assert_eq!(got["per_sample_mib"], 76.188);
    assert_eq!(got["fixed_mib"], 20.0);
    // 90% of 8 GiB = 7,372.8 MiB: batch 96 (7,334 MiB) fits, 97 does not.
    assert_eq!(got["largest_batch"], 96);
    assert_eq!(got["verdict"], "fits");
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, says) in [
        (&["estimate"][..], "give --params"),
        (&["estimate", "--params", "7 apples"], "expected a count"),
        (&["estimate", "--params", "-7B"], "positive"),
        (&["estimate", "--params", "7B", "--gpu-memory", "24"], "with a unit"),
        (&["estimate", "--params", "7B", "--gpu-memory", "-24GiB"], "negative"),
        (&["estimate", "--measured", "16:1239"], "at least two runs"),
        (&["estimate", "--measured", "16:1239", "--measured", "16:1300"], "different batch sizes"),
        (&["estimate", "--measured", "sixteen:1239", "--measured", "64:4896"], "expected BATCH:MEMORY"),
    ] {
        let out = oomlint(args, &repo());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("error: ") && stderr.contains(says), "{args:?}: {stderr}");
    }
}
