//! The checked-in record of every measurement (`fixtures/measurements.json`): per rule,
//! variant, backend and device, with the environment it came from. `oomlint measure
//! --write` merges new runs into it; the binary compiles it in (see `cost`).

use super::Backend;
use super::device::DeviceFacts;
use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "measurements.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    #[serde(default)]
    pub about: String,
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    #[serde(default)]
    pub reference: Vec<ReferenceRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Bad,
    Good,
}

impl Variant {
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Bad => "bad",
            Variant::Good => "good",
        }
    }
}

/// What the runner reports for one run of one script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub backend: Backend,
    pub device: String,
    pub torch: String,
    pub python: String,
    pub peak_bytes: u64,
    pub end_bytes: u64,
    /// Live bytes each time a batch was drawn, and once more when the batches ran out.
    pub step_bytes: Vec<u64>,
    pub growth_per_step_bytes: Option<f64>,
    /// Seconds since the start of `main()` each time a batch was drawn (the device
    /// synchronized first on a GPU), like `step_bytes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_seconds: Vec<f64>,
    /// On a GPU: bytes the allocator had obtained from the driver (`cudaMalloc`) so far,
    /// each time a batch was drawn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_driver_bytes: Vec<u64>,
    pub wall_s: f64,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    #[serde(default)]
    pub stdout: String,
}

impl Figures {
    /// The median time of a step, from the second on (the first one warms up).
    pub fn seconds_per_step(&self) -> Option<f64> {
        let mut steps: Vec<f64> = self.step_seconds.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        if steps.len() < 2 {
            return None;
        }
        steps.sort_by(f64::total_cmp);
        Some(steps[steps.len() / 2])
    }

    /// Bytes obtained from the driver per step, from the second step on (the first one
    /// fills the cache).
    pub fn driver_bytes_per_step(&self) -> Option<f64> {
        let marks = &self.step_driver_bytes;
        if marks.len() < 3 {
            return None;
        }
        Some((marks[marks.len() - 1] as f64 - marks[1] as f64) / (marks.len() - 2) as f64)
    }

    /// The figures that a deterministic backend must reproduce exactly (not wall time,
    /// not the environment).
    fn same_memory(&self, other: &Figures) -> bool {
        self.peak_bytes == other.peak_bytes && self.end_bytes == other.end_bytes && self.step_bytes == other.step_bytes
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub category: String,
    pub message: String,
}

/// One run of one rule's fixture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub rule: String,
    pub variant: Variant,
    /// The script, relative to the fixtures directory, and its arguments.
    pub script: String,
    pub args: Vec<String>,
    #[serde(flatten)]
    pub figures: Figures,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<DeviceFacts>,
}

/// One row of the reference table as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRecord {
    pub name: String,
    pub published_mib: f64,
    pub measured_mib: f64,
    pub measured_bytes: f64,
    pub script: String,
    pub args: Vec<String>,
    pub backend: Backend,
    pub device: String,
    pub torch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<DeviceFacts>,
}

impl Measurements {
    pub fn parse(text: &str) -> Result<Measurements, String> {
        serde_json::from_str(text).map_err(|e| format!("{FILE_NAME} is not valid: {e}"))
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Adds new runs, replacing older ones of the same rule, variant, backend and device.
    pub fn merge_runs(&mut self, runs: Vec<RunRecord>) {
        for run in runs {
            self.runs.retain(|old| !same_run(old, &run));
            self.runs.push(run);
        }
        self.runs.sort_by(|a, b| {
            (&a.rule, a.variant, a.figures.backend.as_str(), &a.figures.device).cmp(&(
                &b.rule,
                b.variant,
                b.figures.backend.as_str(),
                &b.figures.device,
            ))
        });
    }

    /// Adds new reference rows, replacing older ones of the same name, backend and device;
    /// rows keep the order they are given in.
    pub fn merge_reference(&mut self, rows: Vec<ReferenceRecord>) {
        let replaced = |old: &ReferenceRecord| {
            rows.iter().any(|new| new.name == old.name && new.backend == old.backend && new.device == old.device)
        };
        let mut kept: Vec<_> = self.reference.iter().filter(|old| !replaced(old)).cloned().collect();
        kept.extend(rows);
        self.reference = kept;
    }

    /// How fresh runs differ from these (checked-in) ones, one line per difference. Only
    /// memory figures are compared, exactly: call it for a deterministic backend.
    pub fn differences(&self, runs: &[RunRecord], reference: &[ReferenceRecord]) -> Vec<String> {
        let mut found = Vec::new();
        for run in runs {
            let label = format!("{} {}.py ({})", run.rule, run.variant.as_str(), run.figures.backend);
            match self.runs.iter().find(|old| same_run(old, run)) {
                None => found.push(format!("{label}: not in {FILE_NAME}")),
                Some(old) if !old.figures.same_memory(&run.figures) => found.push(format!(
                    "{label}: recorded peak {} / end {} bytes (torch {}), measured {} / {} (torch {})",
                    old.figures.peak_bytes,
                    old.figures.end_bytes,
                    old.figures.torch,
                    run.figures.peak_bytes,
                    run.figures.end_bytes,
                    run.figures.torch
                )),
                Some(_) => {}
            }
        }
        for row in reference {
            let label = format!("reference `{}` ({})", row.name, row.backend);
            let old = self
                .reference
                .iter()
                .find(|old| old.name == row.name && old.backend == row.backend && old.device == row.device);
            match old {
                None => found.push(format!("{label}: not in {FILE_NAME}")),
                Some(old) if old.measured_bytes != row.measured_bytes => found.push(format!(
                    "{label}: recorded {} bytes (torch {}), measured {} (torch {})",
                    old.measured_bytes, old.torch, row.measured_bytes, row.torch
                )),
                Some(_) => {}
            }
        }
        found
    }
}

fn same_run(a: &RunRecord, b: &RunRecord) -> bool {
    a.rule == b.rule
        && a.variant == b.variant
        && a.figures.backend == b.figures.backend
        && a.figures.device == b.figures.device
}
