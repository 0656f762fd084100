//! Time per line must not grow with the file: lints generated files of 10,000, 50,000
//! and 200,000 lines of each shape that once took quadratic time (a long module of
//! `torch.load(...)` or `torch.cuda.amp.GradScaler()` lines, nested lambdas, a long
//! attribute chain in a file that mentions `checkpoint`, a long `+` chain, and
//! `total += loss + loss + ...`) and prints the time per 1,000 lines and the ratio of the
//! largest file's to the smallest's. Fails when a ratio exceeds 1.5.
//!
//! `cargo bench --bench scaling` (`-- SHAPE` for one shape).

use oomlint::engine::{Engine, RuleSettings};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [10_000, 50_000, 200_000];
const ALLOWED_RATIO: f64 = 1.5;
/// A lint that takes longer is reported as such and not waited for.
const LIMIT: Duration = Duration::from_secs(120);
/// Best of this many runs (small files run more often, so that timer noise stays small).
const RUNS: usize = 3;

/// A shape's name, and the generator of a file of that many lines.
type Shape = (&'static str, fn(usize) -> String);

const SHAPES: [Shape; 6] = [
    ("torch.load lines", load_lines),
    ("GradScaler lines", grad_scaler_lines),
    ("nested lambdas", nested_lambdas),
    ("attribute chain", attribute_chain),
    ("+ chain", plus_chain),
    ("total += loss + ...", accumulated_loss),
];

fn load_lines(lines: usize) -> String {
    let mut text = String::from("import torch\n");
    (1..lines).for_each(|i| text.push_str(&format!("state{i} = torch.load('checkpoint{i}.pt')\n")));
    text
}

fn grad_scaler_lines(lines: usize) -> String {
    let mut text = String::from("import torch\n");
    (1..lines).for_each(|i| text.push_str(&format!("scaler{i} = torch.cuda.amp.GradScaler()\n")));
    text
}

/// One lambda per line, each passed to `checkpoint` inside the one before, in a loop.
fn nested_lambdas(lines: usize) -> String {
    let depth = lines - 4;
    let mut text = String::from("from torch.utils.checkpoint import checkpoint\nfor block in blocks:\n    y = (\n");
    (0..depth).for_each(|i| text.push_str(&format!("        checkpoint(lambda x{i}:\n")));
    text.push_str(&format!("        block(x0){}\n    )\n", ")".repeat(depth)));
    text
}

fn attribute_chain(lines: usize) -> String {
    let mut text = String::from("from torch.utils.checkpoint import checkpoint\ny = (x\n");
    (3..lines).for_each(|i| text.push_str(&format!("    .link{i}\n")));
    text.push_str(")\n");
    text
}

fn plus_chain(lines: usize) -> String {
    let mut text = String::from("import torch\ntotal = (a\n");
    (3..lines).for_each(|i| text.push_str(&format!("    + a{i}\n")));
    text.push_str(")\n");
    text
}

fn accumulated_loss(lines: usize) -> String {
    let mut text =
        String::from("import torch\nfor x, y in loader:\n    loss = criterion(model(x), y)\n    total += (loss\n");
    (5..lines).for_each(|_| text.push_str("        + loss\n"));
    text.push_str("    )\n");
    text
}

/// Seconds for the best of `RUNS` lints of `source`, or `None` past `LIMIT`.
fn time_lint(source: String) -> Option<f64> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let mut best = f64::INFINITY;
            for _ in 0..RUNS {
                let started = Instant::now();
                let report = Engine::get().lint(&source, Path::new("generated.py"), &RuleSettings::default());
                std::hint::black_box(report);
                best = best.min(started.elapsed().as_secs_f64());
            }
            let _ = sender.send(best);
        })
        .expect("spawn a lint thread");
    receiver.recv_timeout(LIMIT * RUNS as u32).ok()
}

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    Engine::get(); // compile the queries before timing
    println!("{:<22} {:>14} {:>14} {:>14} {:>8}", "shape", "10k ms/kline", "50k ms/kline", "200k ms/kline", "200k/10k");
    let mut failed = false;
    for (name, generate) in SHAPES {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mut per_kline = Vec::new();
        for lines in SIZES {
            let source = generate(lines);
            let counted = source.lines().count();
            per_kline.push(time_lint(source).map(|seconds| seconds * 1e3 / (counted as f64 / 1e3)));
        }
        let cell = |v: Option<f64>| v.map_or(format!("> {} s", LIMIT.as_secs()), |ms| format!("{ms:.3}"));
        let ratio = match (per_kline[0], per_kline[2]) {
            (Some(small), Some(large)) => large / small,
            _ => f64::INFINITY,
        };
        failed |= ratio > ALLOWED_RATIO;
        println!(
            "{name:<22} {:>14} {:>14} {:>14} {:>8}",
            cell(per_kline[0]),
            cell(per_kline[1]),
            cell(per_kline[2]),
            if ratio.is_finite() { format!("{ratio:.2}") } else { "-".into() }
        );
    }
    if failed {
        eprintln!("time per line grows with the file (a ratio above {ALLOWED_RATIO})");
        std::process::exit(1);
    }
    std::process::exit(0);
}
