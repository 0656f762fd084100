//! Time per line must not grow with the file: lints generated files of 10,000, 50,000
//! and 200,000 lines of each shape that once took quadratic time (a long module of
//! `torch.load(...)` or `torch.cuda.amp.GradScaler()` lines, nested lambdas, a long
//! attribute chain in a file that mentions `checkpoint`, a long `+` chain, and
//! `total += loss + loss + ...`), and of a realistic training script (functions that
//! train, evaluate, checkpoint and resume, repeated), and prints, per size, the time per
//! 1,000 lines (the linting thread's processor time, best of three) and the peak memory
//! of the process that linted it, then the ratio of the largest file's time per line to
//! the smallest's. Fails when a ratio exceeds 1.5.
//!
//! Each file is linted in a fresh process (this program run again with `--one`), so that
//! peak memory is that file's and a lint past the time limit is stopped, not waited for.
//! Each row is printed as soon as it is measured.
//!
//! The table, optimized as shipped (takes a few minutes per shape on a quiet machine):
//!
//!     cargo bench --bench scaling
//!     cargo bench --bench scaling -- lambdas        # the shapes whose name holds `lambdas`
//!
//! A quick check that it runs, unoptimized and on the smallest files only:
//!
//!     cargo bench --profile dev --bench scaling -- --sizes=10000
//!
//! `--sizes=A,B,...` replaces the sizes (in lines); the ratio is then the last size's
//! time per line to the first's.

use oomlint::engine::{Engine, RuleSettings};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SIZES: [usize; 3] = [10_000, 50_000, 200_000];
const ALLOWED_RATIO: f64 = 1.5;
/// A file whose lints take longer is reported as such.
const LIMIT: Duration = Duration::from_secs(120);
/// Best of this many lints of each file.
const RUNS: usize = 3;

/// A shape's name, and the generator of a file of that many lines.
type Shape = (&'static str, fn(usize) -> String);

const SHAPES: [Shape; 7] = [
    ("torch.load lines", load_lines),
    ("GradScaler lines", grad_scaler_lines),
    ("nested lambdas", nested_lambdas),
    ("attribute chain", attribute_chain),
    ("+ chain", plus_chain),
    ("total += loss + ...", accumulated_loss),
    ("training script", training_script),
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

/// One lambda per line, each passed to `checkpoint` inside the one before, in a loop
/// (three levels of the syntax tree each: past `syntax::MAX_DEPTH` the rest is reported
/// as too deeply nested, and not analysed).
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

/// The functions of a training script, numbered and repeated: a training loop with
/// mixed precision, accumulated losses, gradient checkpointing and retries, an
/// evaluation, saving and resuming; some of it flagged, most of it not.
fn training_script(lines: usize) -> String {
    const HEADER: &str = "import os\nimport torch\nimport torch.nn as nn\n\
        from torch.utils.checkpoint import checkpoint\nfrom torch.cuda.amp import autocast, GradScaler\n\n";
    const BLOCK: &str = r#"
class Block_N(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(4)])

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x


def train_N(model, loader, optimizer, device, epochs=1):
    scaler = GradScaler()
    history = []
    total_loss = 0.0
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad(set_to_none=True)
            with autocast():
                loss = nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total_loss += loss.item()
            history.append(loss)
            if step % 100 == 0:
                print(f"epoch {epoch} step {step}: {total_loss / (step + 1):.4f}")
    return history


def evaluate_N(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(-1) == y).sum().item()
    return correct / len(loader.dataset)


def resume_N(model, path):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    torch.save({"model": model.state_dict()}, path + ".bak")
"#;
    let mut text = String::from(HEADER);
    let mut count = HEADER.lines().count();
    let block_lines = BLOCK.lines().count();
    for copy in 0.. {
        if count + block_lines > lines {
            break;
        }
        text.push_str(&BLOCK.replace("_N", &format!("_{copy}")));
        count += block_lines;
    }
    (count..lines).for_each(|_| text.push_str("pass\n"));
    text
}

/// In the child: lint the shape's file of `lines` lines `RUNS` times and print the best
/// time in seconds and the process's peak resident memory in MB.
fn lint_one(shape: &str, lines: usize) {
    let (_, generate) = SHAPES.iter().find(|(name, _)| *name == shape).expect("a known shape");
    let source = generate(lines);
    // Deeply nested shapes recurse in tree walks: a large stack, as for a real file.
    let best = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut best = f64::INFINITY;
            for _ in 0..RUNS {
                let started = thread_cpu_seconds();
                let report = Engine::get().lint(&source, Path::new("generated.py"), &RuleSettings::default());
                std::hint::black_box(report);
                best = best.min(thread_cpu_seconds() - started);
            }
            best
        })
        .expect("spawn a lint thread")
        .join()
        .expect("the lint thread ends");
    println!("{best} {}", peak_rss_mb());
}

/// The processor time this thread has used, in seconds: unlike the time on the clock,
/// it does not grow while other processes hold the processor, so the ratio between sizes
/// stays meaningful on a busy machine.
fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// Time per 1,000 lines (ms) and peak memory (MB) for one file, from a child process;
/// `None` past the time limit or when the child fails.
fn measure(shape: &str, lines: usize) -> Option<(f64, f64)> {
    let me = std::env::current_exe().expect("the bench binary");
    let mut child = Command::new(me)
        .args(["--one", shape, &lines.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run the bench binary again");
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait for the child") {
            Some(_) => break,
            None if started.elapsed() > LIMIT * RUNS as u32 => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let mut figures = out.split_whitespace().map(|v| v.parse::<f64>());
    let (Some(Ok(seconds)), Some(Ok(mb))) = (figures.next(), figures.next()) else { return None };
    Some((seconds * 1e3 / (lines as f64 / 1e3), mb))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, shape, lines] = args.as_slice()
        && flag == "--one"
    {
        lint_one(shape, lines.parse().expect("a line count"));
        return;
    }
    let only = args.iter().find(|a| !a.starts_with("--"));
    let sizes: Vec<usize> = match args.iter().find_map(|a| a.strip_prefix("--sizes=")) {
        Some(list) => list.split(',').map(|n| n.trim().parse().expect("--sizes=A,B,... in lines")).collect(),
        None => SIZES.to_vec(),
    };
    let header = sizes.iter().map(|s| format!("{:>18}", format!("{}k ms/kline, MB", s / 1000))).collect::<String>();
    let ratio_name = format!("{}k/{}k", sizes[sizes.len() - 1] / 1000, sizes[0] / 1000);
    println!("{:<22}{header} {ratio_name:>9}", "shape");
    let mut failed = false;
    for (name, _) in SHAPES {
        if only.is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        print!("{name:<22}");
        let mut per_kline = Vec::new();
        for &lines in &sizes {
            let measured = measure(name, lines);
            match measured {
                Some((ms, mb)) => print!("{:>18}", format!("{ms:.3}, {mb:.0}")),
                None => print!("{:>18}", format!("> {} s", LIMIT.as_secs())),
            }
            let _ = std::io::stdout().flush();
            per_kline.push(measured.map(|(ms, _)| ms));
        }
        let ratio = match (per_kline[0], per_kline[per_kline.len() - 1]) {
            (Some(small), Some(large)) => large / small,
            _ => f64::INFINITY,
        };
        failed |= ratio > ALLOWED_RATIO;
        println!(" {:>9}", if ratio.is_finite() { format!("{ratio:.2}") } else { "-".into() });
    }
    if failed {
        eprintln!("time per line grows with the file (a ratio above {ALLOWED_RATIO})");
        std::process::exit(1);
    }
}
