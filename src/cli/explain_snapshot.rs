//! `oomlint explain FILE.pickle`: a PyTorch memory snapshot, explained line by line in
//! the terminal or as JSON, and drawn with `--plot`.

use super::{EXIT_CLEAN, EXIT_ERROR, ListFormat};
use crate::explain::human;
use crate::snapshot::findings::{LineFinding, findings_on};
use crate::snapshot::replay::Moment;
use crate::snapshot::report::{OomAt, Report, SegmentUse};
use crate::snapshot::{SnapshotKind, analyse, plot, read_bytes};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// How many lines the terminal report lists (JSON lists them all).
const LINES_SHOWN: usize = 10;

pub fn run(bytes: &[u8], source: Option<&Path>, format: ListFormat, plot_to: Option<&Path>) -> u8 {
    let name = source.map(|p| p.display().to_string()).unwrap_or_else(|| "standard input".into());
    let report = match read_bytes(bytes).and_then(|s| analyse(&s)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {name}: {e}");
            return EXIT_ERROR;
        }
    };
    let roots = search_roots(source);
    let whole_functions = report.kind == SnapshotKind::Profiler;
    let findings = findings_on(&report.lines[..report.lines.len().min(LINES_SHOWN * 2)], &roots, whole_functions);
    if let Some(path) = plot_to
        && let Err(e) = plot::write(&report, &name, path)
    {
        eprintln!("error: cannot write the plot {}: {e}", path.display());
        return EXIT_ERROR;
    }
    let text = match format {
        ListFormat::Json => serde_json::to_string_pretty(&as_json(&report, &findings)).unwrap_or_default() + "\n",
        ListFormat::Text => as_text(&report, &findings, &name),
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if let Some(path) = plot_to {
        eprintln!("plot written to {}", path.display());
    }
    EXIT_CLEAN
}

/// Where the snapshot's relative paths may be: the working directory and the snapshot's
/// own directory (profiler paths are relative to the script's directory).
fn search_roots(source: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![std::env::current_dir().unwrap_or_default()];
    if let Some(dir) = source.and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        roots.push(dir.to_path_buf());
    }
    roots
}

pub fn moment_name(moment: Moment) -> &'static str {
    match moment {
        Moment::Oom(_) => "oom",
        Moment::Peak(_) => "peak",
        Moment::Start => "start",
        Moment::Dump => "dump",
    }
}

fn moment_event(moment: Moment) -> Option<usize> {
    match moment {
        Moment::Oom(i) | Moment::Peak(i) => Some(i),
        Moment::Start | Moment::Dump => None,
    }
}

/// What the segments say about the failed request, one sentence.
pub fn oom_verdict(oom: &OomAt, segments: Option<&SegmentUse>, allocated: u64) -> String {
    let request = oom.requested_bytes;
    let Some(s) = segments else {
        return format!("{} were live when {} was requested", human(allocated as f64), human(request as f64));
    };
    let device_free = oom.device_free_bytes.unwrap_or(0);
    if request <= s.free_bytes && request > s.largest_free_block {
        format!(
            "fragmentation: the segments held {} free, enough for the request, but no free block was larger than {}; \
             PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow a segment instead",
            human(s.free_bytes as f64),
            human(s.largest_free_block as f64)
        )
    } else if request > s.free_bytes + device_free {
        format!(
            "exhaustion: the live tensors ({}) and the request do not fit: even with every cached block released, \
             {} short",
            human(allocated as f64),
            human((request - s.free_bytes - device_free) as f64)
        )
    } else {
        format!(
            "the request would have fit had the cached free blocks ({}) been released first: the allocator does this \
             before it fails, so another process or a limit took the rest",
            human(s.free_bytes as f64)
        )
    }
}

fn as_json(report: &Report, findings: &[Vec<LineFinding>]) -> Value {
    let lines: Vec<Value> = report
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            json!({
                "file": l.file,
                "line": l.line,
                "function": l.function,
                "bytes": l.bytes,
                "allocations": l.allocations,
                "categories": l.categories,
                "callers": l.callers.iter().map(|f| json!({"file": f.file, "line": f.line, "function": f.function})).collect::<Vec<_>>(),
                "findings": findings.get(i).map(|f| f.iter().map(|f| json!({"code": f.code, "file": f.file, "line": f.line, "message": f.message})).collect::<Vec<_>>()).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "snapshot": match report.kind { SnapshotKind::Allocator => "allocator", SnapshotKind::Profiler => "profiler" },
        "device": report.device,
        "at": moment_name(report.moment),
        "event": moment_event(report.moment),
        "events": report.events,
        "peak_bytes": report.peak_bytes,
        "allocated_bytes": report.allocated_bytes,
        "lines": lines,
        "functions": report.functions.iter().map(|f| json!({"file": f.file, "function": f.function, "bytes": f.bytes})).collect::<Vec<_>>(),
        "categories": report.categories,
        "unattributed": {"library_bytes": report.library_bytes, "no_stack_bytes": report.no_stack_bytes},
        "segments": report.segments.as_ref().map(|s| json!({
            "count": s.count,
            "reserved_bytes": s.reserved_bytes,
            "allocated_bytes": s.allocated_bytes,
            "free_bytes": s.free_bytes,
            "largest_free_block_bytes": s.largest_free_block,
        })),
        "oom": report.oom.as_ref().map(|o| json!({
            "event": o.event,
            "requested_bytes": o.requested_bytes,
            "device_free_bytes": o.device_free_bytes,
            "verdict": oom_verdict(o, report.segments.as_ref(), report.allocated_bytes),
        })),
        "timeline": report.timeline.iter().map(|(e, b)| json!([e, b])).collect::<Vec<_>>(),
    })
}

fn as_text(report: &Report, findings: &[Vec<LineFinding>], name: &str) -> String {
    let mut out = String::new();
    let kind = match report.kind {
        SnapshotKind::Allocator => "CUDA caching allocator",
        SnapshotKind::Profiler => "PyTorch profiler",
    };
    out.push_str(&format!("memory snapshot {name} ({kind}), {}, {} events\n", report.device, report.events));
    let when = match report.moment {
        Moment::Oom(i) => format!("at the out-of-memory event (event {i})"),
        Moment::Peak(i) => format!("at the peak (event {i})"),
        Moment::Start => "at the peak (before the first event)".to_string(),
        Moment::Dump => "when the snapshot was dumped (no trace was recorded)".to_string(),
    };
    if let Some(oom) = &report.oom {
        let free =
            oom.device_free_bytes.map(|f| format!(", {} free on the device", human(f as f64))).unwrap_or_default();
        out.push_str(&format!("out of memory: {} requested{free}\n", human(oom.requested_bytes as f64)));
        out.push_str(&format!("  {}\n", oom_verdict(oom, report.segments.as_ref(), report.allocated_bytes)));
    }
    out.push_str(&format!(
        "{} live {when}; peak {}\n",
        human(report.allocated_bytes as f64),
        human(report.peak_bytes as f64)
    ));
    if let Some(s) = &report.segments {
        out.push_str(&format!(
            "  segments: {} reserved in {}, {} allocated, {} free in the segments, largest free block {}\n",
            human(s.reserved_bytes as f64),
            s.count,
            human(s.allocated_bytes as f64),
            human(s.free_bytes as f64),
            human(s.largest_free_block as f64)
        ));
    }
    out.push_str("\nlive by line of your code (library frames folded into the line that called them):\n");
    if report.kind == SnapshotKind::Profiler {
        out.push_str("  (the profiler records each function's `def` line, so a line here stands for its function)\n");
    }
    let total = report.allocated_bytes.max(1) as f64;
    for (i, l) in report.lines.iter().take(LINES_SHOWN).enumerate() {
        let categories: Vec<String> = l.categories.iter().map(|(c, b)| format!("{c} {}", human(*b as f64))).collect();
        let categories = if categories.is_empty() { String::new() } else { format!("  [{}]", categories.join(", ")) };
        out.push_str(&format!(
            "  {:>10} {:>4.0}%  {}:{} in {}{categories}\n",
            human(l.bytes as f64),
            100.0 * l.bytes as f64 / total,
            l.file,
            l.line,
            l.function
        ));
        if let Some(caller) = l.callers.first() {
            out.push_str(&format!(
                "                     called from {}:{} in {}\n",
                caller.file, caller.line, caller.function
            ));
        }
        for f in findings.get(i).into_iter().flatten() {
            out.push_str(&format!("                     ◆ {} at {}:{}: {}\n", f.code, f.file, f.line, f.message));
        }
    }
    if report.lines.len() > LINES_SHOWN {
        let rest: u64 = report.lines[LINES_SHOWN..].iter().map(|l| l.bytes).sum();
        out.push_str(&format!("  {:>10}        {} more lines\n", human(rest as f64), report.lines.len() - LINES_SHOWN));
    }
    if report.library_bytes > 0 {
        out.push_str(&format!(
            "  {:>10}        no frame of your code in the stack\n",
            human(report.library_bytes as f64)
        ));
    }
    if report.no_stack_bytes > 0 {
        out.push_str(&format!(
            "  {:>10}        no stack recorded (allocated before recording began, or modelled: see by category)\n",
            human(report.no_stack_bytes as f64)
        ));
    }
    if !report.functions.is_empty() {
        out.push_str("\nby function:\n");
        for f in report.functions.iter().take(5) {
            out.push_str(&format!("  {:>10}  {} in {}\n", human(f.bytes as f64), f.function, f.file));
        }
    }
    if !report.categories.is_empty() {
        out.push_str("\nby category:\n");
        let mut categories: Vec<_> = report.categories.iter().collect();
        categories.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (c, b) in categories {
            out.push_str(&format!("  {:>10}  {}\n", human(*b as f64), c.replace('_', " ")));
        }
    }
    if report.timeline.len() > 1 {
        out.push_str(&format!(
            "\nallocated over {} events (peak {}):\n  ",
            report.events,
            human(report.peak_bytes as f64)
        ));
        out.push_str(&sparkline(&report.timeline, 64));
        out.push('\n');
    }
    out
}

/// The timeline as a row of block characters, each the highest of the points it covers.
fn sparkline(points: &[(usize, u64)], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let peak = points.iter().map(|p| p.1).max().unwrap_or(0).max(1) as f64;
    let per = points.len().div_ceil(width).max(1);
    points
        .chunks(per)
        .map(|c| {
            let high = c.iter().map(|p| p.1).max().unwrap_or(0) as f64;
            BARS[((high / peak) * 7.0).round() as usize]
        })
        .collect()
}
