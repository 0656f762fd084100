//! `oomlint measure`: runs each rule's fixtures (and the reference configurations) under
//! PyTorch, and turns the figures into what diagnostics, hovers and docs quote.
//!
//! - `runner.py` (embedded) runs one fixture script in a fresh Python process and prints
//!   one record of what it cost; `process` starts it and reads the record back.
//! - `python` finds the interpreter and checks that PyTorch (and CUDA) is there.
//! - `device` asks the NVIDIA driver (loaded at run time) what GPU the figures came from.
//! - `plan` lists the runs: per rule, from the [`Cost`](crate::rules::Cost) it declares,
//!   and the reference table.
//! - `measurements` is the checked-in record of every run, compiled into the binary;
//!   `cost` quotes a rule's cost from it and rewrites the docs' "Measured cost" section.

pub mod cost;
pub mod device;
pub mod measurements;
pub mod plan;
pub mod predict;
pub mod process;
pub mod python;

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where memory is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The CUDA caching allocator's counters (`torch.cuda.max_memory_allocated()`).
    Cuda,
    /// Real compute on the CPU, memory counted by a live-storage tracker.
    Cpu,
    /// The same tracker inside `FakeTensorMode`: no compute, deterministic.
    Fake,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Cpu => "cpu",
            Backend::Fake => "fake",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Runs every job, `workers` at a time, and returns the results in the jobs' order.
pub fn run_jobs(
    runner: &process::Runner,
    fixtures: &std::path::Path,
    jobs: &[plan::Job],
    workers: usize,
) -> Vec<Result<measurements::Figures, process::RunError>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let results = Mutex::new((0..jobs.len()).map(|_| None).collect::<Vec<_>>());
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let result = runner.run(&fixtures.join(&job.script), &job.args, job.backend);
                    if let Ok(mut results) = results.lock() {
                        results[i] = Some(result);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(process::RunError::NoRecord { stderr: "the run was lost".into() })))
        .collect()
}

pub const MIB: f64 = 1024.0 * 1024.0;

/// Bytes as MiB the way people quote them: `2,183 MiB`, `20.5 MiB`, `1.2 MiB`.
pub fn format_mib(bytes: f64) -> String {
    let mib = bytes / MIB;
    if mib.abs() >= 100.0 {
        let whole = mib.round() as i64;
        let digits = whole.abs().to_string();
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("{}{grouped} MiB", if whole < 0 { "-" } else { "" })
    } else {
        format!("{mib:.1} MiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mib_are_grouped_and_small_figures_keep_a_decimal() {
        assert_eq!(format_mib(2183.2 * MIB), "2,183 MiB");
        assert_eq!(format_mib(1_234_567.0 * MIB), "1,234,567 MiB");
        assert_eq!(format_mib(781.16 * MIB), "781 MiB");
        assert_eq!(format_mib(20.46 * MIB), "20.5 MiB");
        assert_eq!(format_mib(1.16 * MIB), "1.2 MiB");
        assert_eq!(format_mib(-16.5 * MIB), "-16.5 MiB");
        assert_eq!(format_mib(-1500.0 * MIB), "-1,500 MiB");
    }
}
