//! `oomlint predict`: one training step of the user's, run on the emulated CUDA device
//! (`predict_runner.py`, `fake_cuda.py`), read back as a [`Prediction`] and rendered.

use super::plan::{CUDNN_FP16_WORKSPACE_MIB_PER_SAMPLE, GPU_WORKSPACE_MIB};
use super::{MIB, format_mib};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// Cards `--gpu` knows, with the memory each has (nominal sizes; `--gpu-memory` takes
/// the exact figure `nvidia-smi` reports).
pub const GPUS: &[(&str, &str, f64)] = &[
    ("h200", "NVIDIA H200 (141 GB)", 141e9),
    ("h100", "NVIDIA H100 (80 GB)", 80.0 * 1024.0 * MIB),
    ("a100", "NVIDIA A100 (80 GB)", 80.0 * 1024.0 * MIB),
    ("a100-40gb", "NVIDIA A100 (40 GB)", 40.0 * 1024.0 * MIB),
    ("l40s", "NVIDIA L40S (48 GB)", 48.0 * 1024.0 * MIB),
    ("a10g", "NVIDIA A10G (24 GB)", 24.0 * 1024.0 * MIB),
    ("l4", "NVIDIA L4 (24 GB)", 24.0 * 1024.0 * MIB),
    ("rtx4090", "NVIDIA GeForce RTX 4090 (24 GB)", 24.0 * 1024.0 * MIB),
    ("rtx3090", "NVIDIA GeForce RTX 3090 (24 GB)", 24.0 * 1024.0 * MIB),
    ("v100", "NVIDIA V100 (16 GB)", 16.0 * 1024.0 * MIB),
    ("t4", "NVIDIA T4 (16 GB)", 15360.0 * MIB),
    ("gtx1070", "NVIDIA GeForce GTX 1070 (8 GB)", 8.0 * 1024.0 * MIB),
];

/// The card named by `--gpu`, case and dashes aside.
pub fn gpu(name: &str) -> Option<(&'static str, f64)> {
    let wanted: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    GPUS.iter()
        .find(|(key, _, _)| key.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>() == wanted)
        .map(|&(_, label, bytes)| (label, bytes))
}

/// What the runner reports about one step.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct StepRecord {
    pub batch_size: u64,
    pub peak_bytes: u64,
    pub by_category: serde_json::Map<String, serde_json::Value>,
    /// What a GPU holds that the emulation does not allocate, by component (modelled, see
    /// [`modelled_components`]).
    #[serde(default)]
    pub gpu_only: BTreeMap<String, u64>,
    pub lines: Vec<LineShare>,
    /// Whether the step ran a backward pass (then a GPU also holds cuBLAS's workspace).
    pub backward: bool,
    pub runs: Vec<Run>,
    #[serde(default)]
    pub max_batch_size: Option<u64>,
    pub torch: String,
    pub amp: Option<String>,
    pub wall_s: f64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct LineShare {
    pub line: Option<u64>,
    pub code: Option<String>,
    pub bytes: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Run {
    pub batch_size: u64,
    pub peak_bytes: u64,
}

/// The card the step is held against.
#[derive(Debug, Clone)]
pub struct Card {
    pub label: String,
    pub bytes: f64,
    /// Kept free, in percent (fragmentation, the CUDA context, other processes).
    pub margin: f64,
}

impl Card {
    /// What the step may reach on this card: its memory less the margin.
    pub fn usable(&self) -> f64 {
        self.bytes * (1.0 - self.margin / 100.0)
    }
}

/// The runner's arguments sizing what a GPU holds and no emulation allocates (the
/// reference table's figures, `plan.rs`): cuBLAS's workspace once a step runs a backward
/// pass, and cuDNN's fp16 convolution workspace per sample when it runs fp16 convolutions
/// (fitted on the reference network; for other networks a model, not a measurement).
pub fn modelled_components() -> [String; 4] {
    [
        "--cublas-workspace".into(),
        ((GPU_WORKSPACE_MIB * MIB) as u64).to_string(),
        "--cudnn-fp16-workspace-per-sample".into(),
        ((CUDNN_FP16_WORKSPACE_MIB_PER_SAMPLE * MIB) as u64).to_string(),
    ]
}

/// How a modelled component is named in the report.
fn component_label(name: &str) -> String {
    match name {
        "cublas_workspace" => "cuBLAS workspace (modelled)".into(),
        "cudnn_fp16_workspace" => "cuDNN fp16 conv workspace (modelled)".into(),
        other => format!("{} (modelled)", other.replace('_', " ")),
    }
}

/// The prediction: the step's record, held against a card when one was given.
pub struct Prediction {
    pub target: String,
    pub step: StepRecord,
    pub card: Option<Card>,
}

impl Prediction {
    /// The peak a GPU's `max_memory_allocated()` would show: the emulated peak plus the
    /// modelled GPU-only components.
    pub fn peak_bytes(&self) -> f64 {
        (self.step.peak_bytes + self.step.gpu_only.values().sum::<u64>()) as f64
    }

    pub fn fits(&self) -> Option<bool> {
        self.card.as_ref().map(|card| self.peak_bytes() <= card.usable())
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut by_category = self.step.by_category.clone();
        for (name, bytes) in &self.step.gpu_only {
            by_category.insert(name.clone(), json!(bytes));
        }
        json!({
            "target": self.target,
            "batch_size": self.step.batch_size,
            "peak_bytes": self.peak_bytes() as u64,
            "emulated_peak_bytes": self.step.peak_bytes,
            "by_category": by_category,
            "lines": self.step.lines,
            "fits": self.fits(),
            "max_batch_size": self.step.max_batch_size,
            "gpu": self.card.as_ref().map(|c| json!({"name": c.label, "bytes": c.bytes as u64, "margin_percent": c.margin})),
            "runs": self.step.runs,
            "amp": self.step.amp,
            "device": "cuda (emulated: fake tensors)",
            "torch": self.step.torch,
            "wall_s": self.step.wall_s,
        })
    }

    pub fn to_text(&self) -> String {
        let step = &self.step;
        let amp = step.amp.as_deref().map(|a| format!(", autocast {a}")).unwrap_or_default();
        let mut text = format!(
            "{} at batch {}{amp}: peak {}\n  (emulated CUDA device, fake tensors, torch {}; {} run{} in {:.1} s)\n",
            self.target,
            step.batch_size,
            format_mib(self.peak_bytes()),
            step.torch,
            step.runs.len(),
            if step.runs.len() == 1 { "" } else { "s" },
            step.wall_s
        );
        text.push_str("\nby category, at the peak:\n");
        let mut categories: Vec<(String, f64)> = step
            .by_category
            .iter()
            .map(|(name, bytes)| (name.replace('_', " "), bytes.as_f64().unwrap_or(0.0)))
            .filter(|(_, bytes)| *bytes > 0.0)
            .collect();
        categories.sort_by(|a, b| b.1.total_cmp(&a.1));
        categories.extend(step.gpu_only.iter().map(|(name, bytes)| (component_label(name), *bytes as f64)));
        let total = self.peak_bytes().max(1.0);
        for (name, bytes) in &categories {
            text.push_str(&format!("  {name:<28} {:>12}  {:>5.1}%\n", format_mib(*bytes), 100.0 * bytes / total));
        }
        text.push_str("\nby line, at the peak:\n");
        let shown = 8;
        for share in step.lines.iter().take(shown) {
            let place = share.line.map(|l| format!("{l:>5}")).unwrap_or_else(|| "    -".into());
            let code = share.code.as_deref().unwrap_or("(outside the file: the step's caller)");
            text.push_str(&format!("  {place}  {:>12}  {}\n", format_mib(share.bytes as f64), truncate(code, 60)));
        }
        if step.lines.len() > shown {
            let rest: u64 = step.lines[shown..].iter().map(|s| s.bytes).sum();
            text.push_str(&format!(
                "         {:>12}  ({} more line{})\n",
                format_mib(rest as f64),
                step.lines.len() - shown,
                if step.lines.len() - shown == 1 { "" } else { "s" }
            ));
        }
        if let Some(card) = &self.card {
            let usable = card.usable();
            let verdict = if self.fits() == Some(true) { "fits" } else { "does not fit" };
            text.push_str(&format!(
                "\n{verdict} {}: {} of {} usable ({} less {}% kept free)\n",
                card.label,
                format_mib(self.peak_bytes()),
                format_mib(usable),
                format_mib(card.bytes),
                card.margin
            ));
            match step.max_batch_size {
                Some(0) => text.push_str("largest batch that fits: none (not even one sample)\n"),
                Some(batch) => {
                    let peak = step.runs.iter().find(|r| r.batch_size == batch).map(|r| r.peak_bytes as f64);
                    let at = peak.map(|p| format!(" (peak {})", format_mib(p))).unwrap_or_default();
                    text.push_str(&format!("largest batch that fits: {batch}{at}\n"));
                }
                None => {}
            }
        }
        text
    }
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(width - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_are_found_by_name_whatever_the_spelling() {
        assert_eq!(gpu("H100").map(|g| g.1), Some(80.0 * 1024.0 * MIB));
        assert_eq!(gpu("rtx-4090").map(|g| g.0), Some("NVIDIA GeForce RTX 4090 (24 GB)"));
        assert_eq!(gpu("A100-40GB").map(|g| g.1), Some(40.0 * 1024.0 * MIB));
        assert!(gpu("tpu").is_none());
    }

    #[test]
    fn the_card_keeps_its_margin_free() {
        let card = Card { label: "card".into(), bytes: 1000.0 * MIB, margin: 10.0 };
        assert_eq!(card.usable(), 900.0 * MIB);
    }
}
