//! `oomlint explain [FILE]`: the last out-of-memory message in a log (every one with
//! `--all`), explained as text or JSON; a memory snapshot pickle goes to
//! `explain_snapshot`.

use super::{EXIT_CLEAN, EXIT_ERROR, ListFormat};
use crate::explain::{self, Explanation, Message, human};
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// A log or traceback (default: standard input).
    pub file: Option<PathBuf>,
    /// Explain every message, not only the last.
    #[arg(long)]
    pub all: bool,
    /// The batch size of the failed run: estimates the batch that fits when memory ran out.
    #[arg(long)]
    pub batch_size: Option<u64>,
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub output_format: ListFormat,
    /// With a memory snapshot: write its timeline, the heaviest lines as stacked bands, to
    /// this file (`.svg`, or `.html` for a page with the details on hover).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

pub fn run(args: ExplainArgs) -> u8 {
    let input = match &args.file {
        Some(path) => std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display())),
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map(|_| bytes)
                .map_err(|e| format!("cannot read standard input: {e}"))
        }
    };
    let is_snapshot = |bytes: &[u8]| {
        crate::snapshot::looks_like_pickle(bytes)
            || args.file.as_ref().and_then(|p| p.extension()).is_some_and(|e| e == "pickle" || e == "pkl")
    };
    if let Ok(bytes) = &input
        && is_snapshot(bytes)
    {
        return super::explain_snapshot::run(bytes, args.file.as_deref(), args.output_format, args.plot.as_deref());
    }
    if args.plot.is_some() {
        eprintln!("error: --plot draws a memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes)");
        return EXIT_ERROR;
    }
    let input = match input {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_ERROR;
        }
    };
    let mut found = explain::messages(&input);
    if found.is_empty() {
        eprintln!(
            "error: no out-of-memory message found: `oomlint explain` reads PyTorch's \"CUDA out of memory\", \"HIP \
             out of memory\", \"CUDA error: out of memory\", \"MPS backend out of memory\", cudaMallocAsync's \
             \"Allocation on device N would exceed allowed memory\", cuBLAS's CUBLAS_STATUS_ALLOC_FAILED and PyTorch \
             0.4's \"cuda runtime error (2)\" messages, and the text of torch.cuda.memory_summary()"
        );
        return EXIT_ERROR;
    }
    if !args.all {
        found = found.split_off(found.len() - 1);
    }
    let explained: Vec<(Message, Explanation)> =
        found.into_iter().map(|m| (explain::explain(&m, args.batch_size), m)).map(|(e, m)| (m, e)).collect();
    match args.output_format {
        ListFormat::Json => {
            let rows: Vec<_> = explained.iter().map(|(m, e)| as_json(m, e)).collect();
            let value = if args.all { json!(rows) } else { rows.into_iter().next().unwrap_or_default() };
            println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
        }
        ListFormat::Text => {
            for (i, (message, explanation)) in explained.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                print!("{}", as_text(message, explanation));
            }
        }
    }
    EXIT_CLEAN
}

fn as_json(message: &Message, explanation: &Explanation) -> serde_json::Value {
    let f = &message.figures;
    json!({
        "family": message.family.as_str(),
        "device": f.device,
        "figures": {
            "requested_bytes": f.requested,
            "capacity_bytes": f.capacity,
            "free_bytes": f.free,
            "process_total_bytes": f.process_total,
            "allocated_bytes": f.allocated,
            "reserved_unallocated_bytes": f.reserved_unallocated,
            "allowed_bytes": f.allowed,
            "other_allocations_bytes": f.other_allocations,
            "max_allowed_bytes": f.max_allowed,
            "other_processes": f.other_processes.iter().map(|(pid, b)| json!({"pid": pid, "bytes": b})).collect::<Vec<_>>(),
        },
        "missing": f.missing,
        "verdict": explanation.verdict,
        "evidence": explanation.evidence,
        "also": explanation.also,
        "fixes": explanation.fixes,
        "empty_cache_helps": explanation.empty_cache_helps,
        "empty_cache": explanation.empty_cache,
        "batch_that_fits": explanation.batch_that_fits,
        "message": message.text,
    })
}

fn as_text(message: &Message, explanation: &Explanation) -> String {
    let f = &message.figures;
    let mut out = String::new();
    let device = f.device.map(|d| format!(" on GPU {d}")).unwrap_or_default();
    out.push_str(&format!("{} out of memory{device} ({} message)\n", family_name(message), message.family.as_str()));
    let mut row = |label: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push_str(&format!("  {label:<26}{value}\n"));
        }
    };
    row("requested", f.requested.map(human));
    row("capacity", f.capacity.map(human));
    row("free", f.free.map(human));
    row("this process (all)", f.process_total.map(human));
    row("allocated by PyTorch", f.allocated.map(human));
    row("reserved, unallocated", f.reserved_unallocated.map(human));
    row("allowed (process cap)", f.allowed.map(human));
    row("other allocations", f.other_allocations.map(human));
    row("limit", f.max_allowed.map(human));
    for (pid, bytes) in &f.other_processes {
        row(&format!("process {pid}"), Some(human(*bytes)));
    }
    if !f.missing.is_empty() {
        out.push_str(&format!("  {:<26}{}\n", "not in the message", f.missing.join(", ")));
    }
    out.push_str(&format!("verdict: {}\n", explanation.verdict.as_str()));
    for line in &explanation.evidence {
        out.push_str(&format!("  - {line}\n"));
    }
    let also: Vec<&str> = explanation.also.iter().map(|v| v.as_str()).collect();
    if !also.is_empty() {
        out.push_str(&format!("also: {}\n", also.join(", ")));
    }
    out.push_str("fix, in this order:\n");
    for (i, fix) in explanation.fixes.iter().enumerate() {
        out.push_str(&format!("  {}. {fix}\n", i + 1));
    }
    out.push_str(&format!("{}\n", explanation.empty_cache));
    out
}

fn family_name(message: &Message) -> &'static str {
    use crate::explain::Family;
    match message.family {
        Family::Cuda2 | Family::Cuda1 | Family::Legacy => "CUDA",
        Family::MallocAsync => "CUDA (cudaMallocAsync)",
        Family::Hip => "HIP (ROCm)",
        Family::Driver => "CUDA driver",
        Family::HipDriver => "HIP (ROCm) driver",
        Family::Cublas => "cuBLAS",
        Family::Mps => "MPS",
        Family::MemorySummary => "CUDA memory summary:",
    }
}
