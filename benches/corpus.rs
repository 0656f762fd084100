//! Lints a real corpus (`scripts/bench` defaults to training scripts) and prints, from the
//! same run: oomlint's wall time (the `oomlint check` process, start-up included), the
//! time of a parse-only pass over the same files (the floor for a tree-sitter design),
//! run here and run as a process of its own (start-up, thread pool and a cold heap
//! included, as `oomlint check` pays them),
//! the processor time of each (less moved by the load of a shared machine),
//! the time of a cold project index over them, their ratios and the spread over the
//! runs, files/s, MB/s, oomlint's peak RSS, the memory the index holds, and the start-up
//! of `oomlint check` on a one-line file.
//!
//! Run with `scripts/bench` (which finds the corpus), or
//! `cargo bench --bench corpus -- DIR` (`OOMLINT_BENCH_RUNS` runs; by default about six
//! seconds of them, 7 to 40).
//!
//! With `OOMLINT_BENCH_INSTRUCTIONS=1` it also counts the instructions both passes execute
//! on one thread under valgrind's callgrind: a figure the load of a shared machine does not
//! move, to compare builds by (minutes on a large corpus).

use oomlint::config::ConfigResolver;
use oomlint::discover;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The argument that makes this program run one parse-only pass and exit: what it runs
/// under callgrind to count the pass's instructions.
const PARSE_ONCE: &str = "--parse-only-once";

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench").peekable();
    if args.next_if(|a| a == PARSE_ONCE).is_some() {
        parse_only(Path::new(&args.next().expect("a corpus")));
        return;
    }
    let corpus = args.next().map(PathBuf::from).unwrap_or_else(|| {
        eprintln!("usage: cargo bench --bench corpus -- DIR");
        std::process::exit(2);
    });
    // The build to measure through OOMLINT_BENCH_BINARY: `scripts/bench` passes the
    // one the wheel ships (`scripts/build-shipped`); another one, to compare.
    let binary = std::env::var_os("OOMLINT_BENCH_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/oomlint"));
    if !binary.is_file() {
        eprintln!("build the release binary first: cargo build --release");
        std::process::exit(2);
    }
    let mut resolver = ConfigResolver::new(None).expect("default configuration");
    let files = discover::python_files(std::slice::from_ref(&corpus), &mut resolver).files;
    let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    let megabytes = bytes as f64 / 1e6;

    // Alternate the two passes so both see the same machine state; the first pair only
    // warms the file cache.
    let mut parse_times = Vec::new();
    let mut parse_process_times = Vec::new();
    let mut index_times = Vec::new();
    let mut lint_times = Vec::new();
    // The processor time each pass took (all its threads, user and system): a load that
    // takes the cores away lengthens the wall time, much less this.
    let mut parse_cpu = Vec::new();
    let mut lint_cpu = Vec::new();
    let mut index_mb = 0.0;
    parse_only(&corpus);
    let warm = lint(&binary, &corpus);
    // Each figure is the best of its runs, and a small corpus's runs are a few tens of
    // milliseconds, which one preemption on a shared machine doubles: it gets more runs,
    // about six seconds' worth (a round is four passes), 7 to 40 (OOMLINT_BENCH_RUNS sets it).
    let runs: usize = std::env::var("OOMLINT_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| ((6.0 / (4.0 * warm.as_secs_f64())) as usize).clamp(7, 40))
        .max(1);
    for run in 0..runs {
        let (time, held) = index_only(&corpus);
        index_times.push(time);
        // The first run's growth: later runs reuse memory the earlier ones freed.
        if run == 0 {
            index_mb = held;
        }
        let before = cpu_time(libc::RUSAGE_SELF);
        parse_times.push(parse_only(&corpus));
        parse_cpu.push(cpu_time(libc::RUSAGE_SELF) - before);
        parse_process_times.push(parse_only_process(&corpus));
        let before = cpu_time(libc::RUSAGE_CHILDREN);
        lint_times.push(lint(&binary, &corpus));
        lint_cpu.push(cpu_time(libc::RUSAGE_CHILDREN) - before);
    }
    let parse = *parse_times.iter().min().expect("runs");
    let parse_process = *parse_process_times.iter().min().expect("runs");
    let index = *index_times.iter().min().expect("runs");
    let lint = *lint_times.iter().min().expect("runs");
    // Each run's own ratio: how much the machine's load moved the figure.
    let mut ratios: Vec<f64> =
        parse_times.iter().zip(&lint_times).map(|(p, l)| l.as_secs_f64() / p.as_secs_f64()).collect();
    ratios.sort_by(f64::total_cmp);
    let peak_rss_mb = children_peak_rss_kb() as f64 / 1024.0;

    println!("corpus: {} ({} files, {:.1} MB)", corpus.display(), files.len(), megabytes);
    println!("threads: {}", rayon::current_num_threads());
    println!("oomlint: {}", binary.display());
    println!(
        "parse-only pass:  {:>7.3} s  {:>7.0} files/s  {:>6.1} MB/s",
        parse.as_secs_f64(),
        files.len() as f64 / parse.as_secs_f64(),
        megabytes / parse.as_secs_f64()
    );
    println!(
        "  as a process:   {:>7.3} s  (start-up, thread pool and a cold heap included)",
        parse_process.as_secs_f64()
    );
    println!(
        "project index:    {:>7.3} s  {:>7.0} files/s  {:>6.1} MB/s",
        index.as_secs_f64(),
        files.len() as f64 / index.as_secs_f64(),
        megabytes / index.as_secs_f64()
    );
    println!(
        "oomlint check:    {:>7.3} s  {:>7.0} files/s  {:>6.1} MB/s",
        lint.as_secs_f64(),
        files.len() as f64 / lint.as_secs_f64(),
        megabytes / lint.as_secs_f64()
    );
    println!("ratio (oomlint / parse-only): {:.2}x  (target <= 1.30x)", lint.as_secs_f64() / parse.as_secs_f64());
    println!(
        "ratio (oomlint / parse-only process): {:.2}x  (both processes: the floor any linter run as a command pays)",
        lint.as_secs_f64() / parse_process.as_secs_f64()
    );
    println!(
        "ratio per run ({runs} runs): median {:.2}x, spread {:.2}x .. {:.2}x",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
    let (parse_cpu, lint_cpu) = (*parse_cpu.iter().min().expect("runs"), *lint_cpu.iter().min().expect("runs"));
    println!(
        "processor time: parse-only {:.3} s, oomlint check {:.3} s, ratio {:.2}x",
        parse_cpu.as_secs_f64(),
        lint_cpu.as_secs_f64(),
        lint_cpu.as_secs_f64() / parse_cpu.as_secs_f64()
    );
    println!("ratio (index / parse-only):   {:.2}x  (target <= 1.30x)", index.as_secs_f64() / parse.as_secs_f64());
    println!("oomlint peak RSS: {peak_rss_mb:.1} MB  (target < 150 MB)");
    println!("project index held: {index_mb:.1} MB of resident memory  (target < 200 MB)");
    let (nothing, linted) = start_up(&binary);
    println!(
        "start-up, oomlint check on a one-line file: {:.1} ms with nothing to lint, {:.1} ms linted  (target <= 15 ms)",
        nothing.as_secs_f64() * 1e3,
        linted.as_secs_f64() * 1e3
    );
    if std::env::var_os("OOMLINT_BENCH_INSTRUCTIONS").is_some() {
        instructions(&binary, &corpus);
    }
}

/// `oomlint check` on a one-line file, as a hook runs it on the file a commit changed, in a
/// project of its own: the best of some runs for a line no rule could match (the file is
/// read and left), and for one the rules lint (their patterns compiled, the file parsed
/// and walked, its project indexed).
fn start_up(binary: &Path) -> (Duration, Duration) {
    let project = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(project.path().join("pyproject.toml"), "[project]\nname = \"one-line\"\n").expect("write");
    let time = |line: &str| {
        let file = project.path().join("one_line.py");
        std::fs::write(&file, line).expect("write");
        (0..20)
            .map(|_| {
                let start = Instant::now();
                let status = Command::new(binary)
                    .args(["check", "--exit-zero"])
                    .arg(&file)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("run oomlint");
                assert!(status.success(), "oomlint check failed: {status}");
                start.elapsed()
            })
            .min()
            .expect("runs")
    };
    let nothing = time("print(\"hello\")\n");
    let linted = time("import torch; model.eval(); losses.append(model(x).sum()); loss.backward()\n");
    (nothing, linted)
}

/// Print the instructions `oomlint check` and a parse-only pass execute over `corpus`, one
/// thread each, counted by callgrind, and their ratio.
fn instructions(binary: &Path, corpus: &Path) {
    let me = std::env::current_exe().expect("this program's path");
    let parse = counted(Command::new(me).arg(PARSE_ONCE).arg(corpus));
    let check = counted(
        Command::new(binary).args(["check", "--preview", "--exit-zero", "--output-format", "json"]).arg(corpus),
    );
    match (parse, check) {
        (Ok(parse), Ok(check)) => {
            println!("instructions, one thread (callgrind): parse-only {parse}, oomlint check {check}");
            println!("ratio of instructions (oomlint / parse-only): {:.3}x", check as f64 / parse as f64);
        }
        (Err(e), _) | (_, Err(e)) => println!("instructions not counted: {e}"),
    }
}

/// The instructions `command` executes on one thread, as callgrind counts them.
fn counted(command: &mut Command) -> Result<u64, String> {
    let mut valgrind = Command::new("valgrind");
    valgrind.args(["--tool=callgrind", "--callgrind-out-file=/dev/null", "--"]).arg(command.get_program());
    valgrind.args(command.get_args()).env("RAYON_NUM_THREADS", "1").stdout(Stdio::null());
    let output = valgrind.output().map_err(|e| format!("cannot run valgrind: {e}"))?;
    let report = String::from_utf8_lossy(&output.stderr);
    // "==PID== Collected : N"
    report
        .lines()
        .find_map(|line| line.split_once("Collected :").map(|(_, n)| n.trim().parse::<u64>()))
        .and_then(Result::ok)
        .ok_or_else(|| format!("valgrind gave no count (exit {})", output.status))
}

/// Discover the files and build the project index over them, cold (no cache), as
/// `check` and the server do at start. Returns the time and the resident memory the
/// finished index adds (measured while it is alive).
fn index_only(corpus: &Path) -> (Duration, f64) {
    let before = resident_mb();
    let start = Instant::now();
    let mut resolver = ConfigResolver::new(None).expect("default configuration");
    let files = discover::python_files(&[corpus.to_path_buf()], &mut resolver).files;
    let (index, _skipped) = oomlint::project::ProjectIndex::build(&files);
    let elapsed = start.elapsed();
    let held = resident_mb() - before;
    std::hint::black_box(index.len());
    (elapsed, held)
}

/// This process's resident set, in MB (Linux; 0 elsewhere).
fn resident_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / 1e6
}

/// Discover, read and parse every file in parallel: what any tree-sitter linter must do.
fn parse_only(corpus: &Path) -> Duration {
    let start = Instant::now();
    let mut resolver = ConfigResolver::new(None).expect("default configuration");
    let files = discover::python_files(&[corpus.to_path_buf()], &mut resolver).files;
    let nodes: usize = files
        .par_iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            oomlint::engine::parse(&text).map_or(0usize, |tree| tree.root_node().child_count() as usize)
        })
        .sum();
    std::hint::black_box(nodes);
    start.elapsed()
}

/// `parse_only` run as a process of its own (this program, `--parse-only-once`).
fn parse_only_process(corpus: &Path) -> Duration {
    let me = std::env::current_exe().expect("this program's path");
    let start = Instant::now();
    let status =
        Command::new(me).arg(PARSE_ONCE).arg(corpus).stdout(Stdio::null()).status().expect("run the parse-only pass");
    let elapsed = start.elapsed();
    assert!(status.success(), "the parse-only pass failed: {status}");
    elapsed
}

fn lint(binary: &Path, corpus: &Path) -> Duration {
    let start = Instant::now();
    let status = Command::new(binary)
        .args(["check", "--preview", "--exit-zero", "--output-format", "json"])
        .arg(corpus)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run oomlint");
    let elapsed = start.elapsed();
    assert!(status.success(), "oomlint check failed: {status}");
    elapsed
}

/// The user and system time of this process (`RUSAGE_SELF`, all its threads) or of its
/// finished children (`RUSAGE_CHILDREN`), so far.
fn cpu_time(who: libc::c_int) -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer it is given.
    let usage = unsafe {
        libc::getrusage(who, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Largest peak resident set of any finished child process, in KiB.
fn children_peak_rss_kb() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full rusage into the pointer it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss
}
