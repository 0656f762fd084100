//! `oomlint measure`: run the fixtures under PyTorch, print the figures, and with
//! `--write` record them where the rule metadata reads them.

use super::{EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, ListFormat};
use crate::fix::write::write_atomically;
use crate::measure::cost::{self, with_cost_section};
use crate::measure::device::{self, DeviceFacts};
use crate::measure::measurements::{self, Figures, Measurements, ReferenceRecord, RunRecord, Variant};
use crate::measure::plan::{self, CUDNN_FP16_WORKSPACE_MIB_PER_SAMPLE, GPU_WORKSPACE_MIB, Job, Subject};
use crate::measure::process::{RunError, Runner};
use crate::measure::{Backend, MIB, format_mib, python, run_jobs};
use crate::rules::{self, Cost, RULES, Rule};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// cuda when PyTorch can use a CUDA device here, else fake.
    Auto,
    Cuda,
    Cpu,
    Fake,
}

#[derive(Debug, clap::Args)]
pub struct MeasureArgs {
    /// Rules to measure, by code or name (default: every rule).
    pub rules: Vec<String>,
    /// Measure the published reference table instead of the rules.
    #[arg(long)]
    pub reference: bool,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// The Python with PyTorch (default: $OOMLINT_PYTHON, else the environment
    /// scripts/ensure-venv creates, else python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The fixtures directory (holding <code>-<slug>/bad.py, good.py and measurements.json).
    #[arg(long, default_value = "fixtures")]
    pub fixtures: PathBuf,
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub output_format: ListFormat,
    /// Merge the figures into <fixtures>/measurements.json and the rules' docs.
    #[arg(long)]
    pub write: bool,
    /// Fail when the memory figures differ from <fixtures>/measurements.json.
    #[arg(long, conflicts_with = "write")]
    pub check: bool,
    /// Seconds each script may run before it is stopped, counted once PyTorch is imported.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Scripts run at once (default: 1 on cuda and cpu, up to 4 on fake).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Only print what the NVIDIA driver reports about the GPU.
    #[arg(long)]
    pub probe: bool,
}

pub fn run(args: MeasureArgs) -> u8 {
    if args.probe {
        match device::probe() {
            Ok(facts) => println!("{}", describe_device(&facts)),
            Err(reason) => println!("{reason}"),
        }
        return EXIT_CLEAN;
    }
    let selected = match select_rules(&args.rules) {
        Ok(selected) => selected,
        Err(message) => return fail(&message),
    };
    if !args.fixtures.is_dir() {
        return fail(&format!("no fixtures directory at {} (pass --fixtures)", args.fixtures.display()));
    }
    let runner = match Runner::new(python::interpreter(args.python.as_deref()), Duration::from_secs(args.timeout)) {
        Ok(runner) => runner,
        Err(e) => return fail(&format!("cannot prepare the runner: {e}")),
    };
    let info = match python::preflight(&runner) {
        Ok(info) => info,
        Err(message) => return fail(&message),
    };
    let backend = match (args.backend, &info.cuda) {
        (BackendChoice::Auto, Ok(_)) | (BackendChoice::Cuda, Ok(_)) => Backend::Cuda,
        (BackendChoice::Auto, Err(reason)) => {
            eprintln!("note: {reason}; measuring with the fake backend");
            Backend::Fake
        }
        (BackendChoice::Cuda, Err(reason)) => {
            return fail(&format!("the cuda backend needs a usable CUDA device: {reason}"));
        }
        (BackendChoice::Cpu, _) => Backend::Cpu,
        (BackendChoice::Fake, _) => Backend::Fake,
    };
    let gpu = if backend == Backend::Cuda {
        device::probe().map_err(|reason| eprintln!("note: no device facts: {reason}")).ok()
    } else {
        None
    };
    let jobs = if args.reference { plan::reference_jobs(backend) } else { plan::rule_jobs(&selected, backend) };
    let workers = args.jobs.unwrap_or(if backend == Backend::Fake { num_cpus().min(4) } else { 1 });
    let results = run_jobs(&runner, &args.fixtures, &jobs, workers);

    let measured = Measured::collect(&jobs, results, gpu.as_ref());
    let file = args.fixtures.join(measurements::FILE_NAME);
    let mut failed = !measured.errors.is_empty();
    let report = if args.reference {
        let (report, out_of_tolerance) = reference_report(&measured.reference, backend, args.output_format);
        failed |= out_of_tolerance;
        report
    } else {
        let (report, unshown) = rules_report(&selected, &measured, args.output_format);
        failed |= unshown;
        report
    };
    print!("{report}");

    if args.check {
        let recorded =
            match std::fs::read_to_string(&file).map_err(|e| e.to_string()).and_then(|t| Measurements::parse(&t)) {
                Ok(recorded) => recorded,
                Err(e) => return fail(&format!("cannot read {}: {e}", file.display())),
            };
        let reference: Vec<_> = measured.reference.iter().map(|(_, record, _)| record.clone()).collect();
        let differences = recorded.differences(&measured.runs, &reference);
        for difference in &differences {
            eprintln!("differs from {}: {difference}", file.display());
        }
        if differences.is_empty() {
            eprintln!("figures match {}", file.display());
        }
        failed |= !differences.is_empty();
    }
    if args.write
        && let Err(message) = write(&file, &args.fixtures, &measured)
    {
        return fail(&message);
    }
    if failed { EXIT_FINDINGS } else { EXIT_CLEAN }
}

fn fail(message: &str) -> u8 {
    eprintln!("error: {message}");
    EXIT_ERROR
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

fn select_rules(names: &[String]) -> Result<Vec<&'static Rule>, String> {
    if names.is_empty() {
        return Ok(RULES.iter().copied().filter(|r| r.has_fixtures()).collect());
    }
    names
        .iter()
        .map(|name| match rules::find(name) {
            Some(rule) if rule.has_fixtures() => Ok(rule),
            Some(rule) => Err(format!("{} is about suppression comments: it has no fixtures to measure", rule.code)),
            None => Err(format!("no rule named `{name}` (see `oomlint rules`)")),
        })
        .collect()
}

fn describe_device(facts: &DeviceFacts) -> String {
    format!(
        "{} ({} total, {} free; driver {}; {} device{})",
        facts.name,
        format_mib(facts.total_bytes as f64),
        format_mib(facts.free_bytes as f64),
        facts.driver_version,
        facts.device_count,
        if facts.device_count == 1 { "" } else { "s" }
    )
}

/// The results of one invocation, as records, plus what failed.
struct Measured {
    runs: Vec<RunRecord>,
    reference: Vec<(&'static plan::ReferenceRow, ReferenceRecord, Figures)>,
    /// (label, what went wrong), in job order.
    errors: Vec<(String, String)>,
}

impl Measured {
    fn collect(jobs: &[Job], results: Vec<Result<Figures, RunError>>, gpu: Option<&DeviceFacts>) -> Measured {
        let mut measured = Measured { runs: Vec::new(), reference: Vec::new(), errors: Vec::new() };
        for (job, result) in jobs.iter().zip(results) {
            let gpu = if job.backend == Backend::Cuda { gpu.cloned() } else { None };
            let figures = match result {
                Ok(figures) => figures,
                Err(error) => {
                    measured.errors.push((
                        format!("{} {}", job.script, job.args.join(" ")).trim_end().to_owned(),
                        error.to_string(),
                    ));
                    continue;
                }
            };
            match job.subject {
                Subject::Rule { rule, variant } => measured.runs.push(RunRecord {
                    rule: rule.code.to_owned(),
                    variant,
                    script: job.script.clone(),
                    args: job.args.clone(),
                    figures,
                    gpu,
                }),
                Subject::Reference(row) => {
                    let bytes = row.figure.bytes(&figures);
                    let record = ReferenceRecord {
                        name: row.name.to_owned(),
                        published_mib: row.published_mib,
                        measured_mib: round2(bytes / MIB),
                        measured_bytes: bytes,
                        script: job.script.clone(),
                        args: job.args.clone(),
                        backend: figures.backend,
                        device: figures.device.clone(),
                        torch: figures.torch.clone(),
                        gpu,
                    };
                    measured.reference.push((row, record, figures));
                }
            }
        }
        measured
    }

    fn error_for(&self, script: &str) -> Option<&str> {
        self.errors.iter().find(|(label, _)| label.split(' ').next() == Some(script)).map(|(_, e)| e.as_str())
    }
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// Each rule's pair and its quoted cost; `true` when a rule's evidence did not show.
fn rules_report(selected: &[&'static Rule], measured: &Measured, format: ListFormat) -> (String, bool) {
    let fresh = Measurements { runs: measured.runs.clone(), ..Default::default() };
    let mut unshown = false;
    let mut text = String::new();
    let mut rows = Vec::new();
    for &rule in selected {
        let quote = cost::quote(rule, &fresh);
        let complete = [Variant::Bad, Variant::Good]
            .iter()
            .all(|&v| measured.runs.iter().any(|r| r.rule == rule.code && r.variant == v));
        // A failed run is reported as an error already; a complete pair must show the cost.
        unshown |= complete && quote.is_err();
        text.push_str(&format!("{} {}\n", rule.code, rule.slug));
        let ran = measured.runs.iter().any(|r| r.rule == rule.code);
        if matches!(rule.cost, Cost::Device { .. }) && !ran && measured.error_for(&rule_script(rule, "bad")).is_none() {
            // Its fixtures run only on a GPU (see `plan::rule_jobs`).
            let why = "its cost shows only on a CUDA GPU: not run on this backend (scripts/measure-gpu runs it)";
            text.push_str(&format!("  {why}\n"));
            if let Ok(quote) = &quote {
                text.push_str(&format!("  cost: {quote}\n"));
            }
            rows.push(json!({"rule": rule.code, "not_run": why, "cost": quote.as_ref().ok()}));
            continue;
        }
        for variant in [Variant::Bad, Variant::Good] {
            let script = rule_script(rule, variant.as_str());
            let name = format!("{}.py", variant.as_str());
            match measured.runs.iter().find(|r| r.rule == rule.code && r.variant == variant) {
                Some(run) => {
                    let f = &run.figures;
                    text.push_str(&format!(
                        "  {name:<8}  {:<4}  peak {:>10}  end {:>10}  growth/step {:>10}  {:>6.1} s\n",
                        f.backend.as_str(),
                        format_mib(f.peak_bytes as f64),
                        format_mib(f.end_bytes as f64),
                        f.growth_per_step_bytes.map(format_mib).unwrap_or_else(|| "-".into()),
                        f.wall_s
                    ));
                    rows.push(json!({
                        "rule": rule.code,
                        "variant": variant.as_str(),
                        "backend": f.backend,
                        "device": f.device,
                        "torch": f.torch,
                        "script": run.script,
                        "args": run.args,
                        "peak_bytes": f.peak_bytes,
                        "end_bytes": f.end_bytes,
                        "peak_mib": round2(f.peak_bytes as f64 / MIB),
                        "end_mib": round2(f.end_bytes as f64 / MIB),
                        "growth_per_step_mib": f.growth_per_step_bytes.map(|b| round2(b / MIB)),
                        "wall_s": f.wall_s,
                        "warnings": f.warnings,
                        "gpu": run.gpu,
                    }));
                }
                None => {
                    let error = measured.error_for(&script).unwrap_or("not run");
                    text.push_str(&format!("  {name:<8}  error: {}\n", indent_after_first(error)));
                    rows.push(
                        json!({"rule": rule.code, "variant": variant.as_str(), "script": script, "error": error}),
                    );
                }
            }
        }
        match (&quote, rule.cost) {
            (Ok(quote), _) => text.push_str(&format!("  cost: {quote}\n")),
            (Err(why), Cost::Evidence(_)) if complete => text.push_str(&format!("  evidence not shown: {why}\n")),
            (Err(why), _) if complete => text.push_str(&format!("  cost not shown: {why}\n")),
            _ => {}
        }
        if let Some(row) = rows.iter_mut().rev().find(|r| r["rule"] == rule.code && r["variant"] == "bad") {
            row["cost"] = match &quote {
                Ok(quote) => json!(quote),
                Err(why) => json!({ "not_shown": why }),
            };
        }
    }
    match format {
        ListFormat::Json => (format!("{}\n", serde_json::to_string_pretty(&rows).unwrap_or_default()), unshown),
        ListFormat::Text => (text, unshown),
    }
}

fn rule_script(rule: &Rule, variant: &str) -> String {
    format!("{}-{}/{variant}.py", rule.code, rule.slug)
}

fn indent_after_first(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("\n            ")
}

/// The reference table: published, ours, difference, the GPU-only workspace, and whether
/// the row is within tolerance; `true` when a checked row is not.
fn reference_report(
    rows: &[(&'static plan::ReferenceRow, ReferenceRecord, Figures)],
    backend: Backend,
    format: ListFormat,
) -> (String, bool) {
    let mut out_of_tolerance = false;
    let mut json_rows = Vec::new();
    let mut text = format!(
        "{:<54} {:>10} {:>10} {:>19} {:>10}  {}\n",
        "configuration", "published", "ours", "difference", "GPU only*", "verdict"
    );
    for row in plan::REFERENCE {
        let Some((_, record, _)) = rows.iter().find(|(r, _, _)| std::ptr::eq(*r, row)) else {
            text.push_str(&format!(
                "{:<54} {:>10} {:>10}  error (see below)\n",
                row.name,
                format!("{} MiB", row.published_mib),
                "-"
            ));
            json_rows.push(json!({"name": row.name, "published_mib": row.published_mib, "error": "the run failed"}));
            out_of_tolerance = true;
            continue;
        };
        let compared = row.compared_mib(record.measured_mib, backend);
        let difference = compared - row.published_mib;
        let percent = 100.0 * difference / row.published_mib;
        let gpu_only = row.gpu_only_mib(backend);
        let within = difference.abs() <= row.tolerance_mib();
        out_of_tolerance |= !within;
        let verdict = match (within, compared != record.measured_mib) {
            (true, false) => "ok".to_owned(),
            (true, true) => "ok, with the GPU-only workspaces*".to_owned(),
            (false, _) => format!("off by more than {}", format_mib(row.tolerance_mib() * MIB)),
        };
        text.push_str(&format!(
            "{:<54} {:>10} {:>10} {:>19} {:>10}  {verdict}\n",
            row.name,
            format_mib(row.published_mib * MIB),
            format_mib(record.measured_mib * MIB),
            format!("{} ({percent:+.1}%)", signed(format_mib(difference * MIB))),
            gpu_only.map(|m| format_mib(m * MIB)).unwrap_or_else(|| "-".into()),
        ));
        json_rows.push(json!({
            "name": row.name,
            "published_mib": row.published_mib,
            "measured_mib": record.measured_mib,
            "difference_mib": round2(difference),
            "difference_percent": round2(percent),
            "gpu_only_mib": gpu_only,
            "tolerance_mib": round2(row.tolerance_mib()),
            "compared_mib": round2(compared),
            "within_tolerance": within,
            "backend": record.backend,
            "device": record.device,
            "torch": record.torch,
            "gpu": record.gpu,
        }));
    }
    if backend != Backend::Cuda {
        text.push_str(&format!(
            "* cuBLAS workspace a GPU allocates at the first backward pass (about {GPU_WORKSPACE_MIB} MiB in the \
             published runs): the {backend} backend cannot see it, and it is not added to \"ours\".\n  The autocast \
             rows run on the emulated CUDA device (fake backend, CUDA's autocast policy); a GPU also holds cuDNN's \
             fp16 convolution\n  workspace, modelled as {CUDNN_FP16_WORKSPACE_MIB_PER_SAMPLE} MiB a sample (fitted on \
             the batch-64 row): their difference is ours + both workspaces vs published.\n"
        ));
    }
    if let Some((_, record, _)) = rows.first() {
        let on = record.gpu.as_ref().map(describe_device).unwrap_or_else(|| record.device.clone());
        text.push_str(&format!("measured on {on}, {} backend, torch {}\n", record.backend, record.torch));
    }
    match format {
        ListFormat::Json => {
            (format!("{}\n", serde_json::to_string_pretty(&json_rows).unwrap_or_default()), out_of_tolerance)
        }
        ListFormat::Text => (text, out_of_tolerance),
    }
}

fn signed(text: String) -> String {
    if text.starts_with('-') { text } else { format!("+{text}") }
}

/// Merges the runs into the measurements file and rewrites each measured rule's
/// "Measured cost" docs section from the merged figures.
fn write(file: &Path, fixtures: &Path, measured: &Measured) -> Result<(), String> {
    let mut recorded = match std::fs::read_to_string(file) {
        Ok(text) => Measurements::parse(&text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Measurements::default(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    recorded.about = "Written by `oomlint measure --write`: each rule's fixtures and the reference table, per \
                      backend and device, with the environment they ran in. Compiled into the rule metadata."
        .into();
    recorded.merge_runs(measured.runs.clone());
    recorded.merge_reference(measured.reference.iter().map(|(_, record, _)| record.clone()).collect());
    let written = if file.exists() {
        write_atomically(file, recorded.to_json().as_bytes())
    } else {
        std::fs::write(file, recorded.to_json())
    };
    written.map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    eprintln!("wrote {}", file.display());
    let docs = fixtures.parent().unwrap_or(Path::new(".")).join("docs/rules");
    for rule in RULES {
        let Ok(quote) = cost::quote(rule, &recorded) else { continue };
        let path = docs.join(format!("{}-{}.md", rule.code, rule.slug));
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let updated = with_cost_section(&text, &quote);
        if updated != text {
            write_atomically(&path, updated.as_bytes()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}
