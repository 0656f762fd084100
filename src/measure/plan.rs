//! What `oomlint measure` runs: each rule's bad/good fixtures, and the reference table.

use super::Backend;
use super::measurements::Variant;
use crate::rules::{Cost, Figure, Rule};

/// One script run.
#[derive(Clone)]
pub struct Job {
    /// The script, relative to the fixtures directory.
    pub script: String,
    pub args: Vec<String>,
    pub backend: Backend,
    pub subject: Subject,
}

#[derive(Clone, Copy)]
pub enum Subject {
    Rule { rule: &'static Rule, variant: Variant },
    Reference(&'static ReferenceRow),
}

/// Each rule's pair. Memory costs run on the chosen backend at the fixtures' own
/// settings; a cost about where memory lands (`Cost::DeviceMemory`) runs off a GPU on the
/// fake backend with a CUDA device emulated by fake tensors, counting only what that
/// device would hold; evidence needs real values, so off a GPU it runs on the CPU backend
/// with small images (the behaviour does not depend on the size).
pub fn rule_jobs(rules: &[&'static Rule], backend: Backend) -> Vec<Job> {
    let mut jobs = Vec::new();
    for &rule in rules.iter().filter(|r| r.has_fixtures()) {
        // What these show exists only on a GPU: nothing to run elsewhere.
        if matches!(rule.cost, Cost::Device { .. }) && backend != Backend::Cuda {
            continue;
        }
        let (backend, args) = match (rule.cost, backend) {
            (Cost::DeviceMemory { .. }, Backend::Fake | Backend::Cpu) => {
                (Backend::Fake, vec!["--device".into(), "cuda".into()])
            }
            (Cost::Evidence(_), Backend::Fake | Backend::Cpu) => {
                (Backend::Cpu, vec!["--image-size".into(), "32".into()])
            }
            _ => (backend, Vec::new()),
        };
        for variant in [Variant::Bad, Variant::Good] {
            jobs.push(Job {
                script: format!("{}-{}/{}.py", rule.code, rule.slug, variant.as_str()),
                args: args.clone(),
                backend,
                subject: Subject::Rule { rule, variant },
            });
        }
    }
    jobs
}

/// A configuration of the published reference table (GTX 1070, PyTorch 2.4.1,
/// `torch.cuda.max_memory_allocated()`, one fresh process per row).
#[derive(Debug)]
pub struct ReferenceRow {
    pub name: &'static str,
    pub script: &'static str,
    pub args: &'static [&'static str],
    pub published_mib: f64,
    pub figure: Figure,
    /// Runs a backward pass: on a GPU that allocates cuBLAS workspace the CPU never sees.
    pub backward: bool,
    /// fp16 autocast: cuDNN's fp16 workspaces exist only on a GPU, so only a GPU run can
    /// reproduce the row.
    pub gpu_only: bool,
}

/// What the published runs hold after a backward pass that no CPU run can see (cuBLAS
/// workspaces): shown in its own column, never added to our figure.
pub const GPU_WORKSPACE_MIB: f64 = 16.5;

impl ReferenceRow {
    /// How far ours may be from the published figure: 2%, or 20 MiB below 100 MiB.
    pub fn tolerance_mib(&self) -> f64 {
        if self.published_mib < 100.0 { 20.0 } else { self.published_mib * 0.02 }
    }

    /// Whether this row is held to its tolerance on `backend`.
    pub fn checked_on(&self, backend: Backend) -> bool {
        backend == Backend::Cuda || !self.gpu_only
    }
}

const TRAIN: &str = "reference/train.py";
const EVALUATE_BAD: &str = "OOM002-eval-without-no-grad/bad.py";
const EVALUATE_GOOD: &str = "OOM002-eval-without-no-grad/good.py";
const VALIDATE_BAD: &str = "OOM001-loss-tensor-kept/bad.py";
const VALIDATE_GOOD: &str = "OOM001-loss-tensor-kept/good.py";

const fn row(
    name: &'static str,
    script: &'static str,
    args: &'static [&'static str],
    published_mib: f64,
    figure: Figure,
    backward: bool,
) -> ReferenceRow {
    ReferenceRow { name, script, args, published_mib, figure, backward, gpu_only: false }
}

pub static REFERENCE: &[ReferenceRow] = &[
    row("train, batch 16", TRAIN, &["--batch-size", "16"], 1239.0, Figure::Peak, true),
    row("train, batch 64", TRAIN, &["--batch-size", "64"], 4896.0, Figure::Peak, true),
    row("train, batch 96", TRAIN, &["--batch-size", "96"], 7334.0, Figure::Peak, true),
    ReferenceRow {
        gpu_only: true,
        ..row("batch 64, autocast fp16", TRAIN, &["--batch-size", "64", "--autocast"], 3367.0, Figure::Peak, true)
    },
    ReferenceRow {
        gpu_only: true,
        ..row("batch 96, autocast fp16", TRAIN, &["--batch-size", "96", "--autocast"], 5040.0, Figure::Peak, true)
    },
    row(
        "batch 64, each block checkpointed",
        TRAIN,
        &["--batch-size", "64", "--checkpoint"],
        3104.0,
        Figure::Peak,
        true,
    ),
    row("evaluation forward, batch 64, without no_grad", EVALUATE_BAD, &[], 4621.0, Figure::Peak, false),
    row("evaluation forward, batch 64, with no_grad", EVALUATE_GOOD, &[], 781.0, Figure::Peak, false),
    row("validation, 4 batches of 8, losses kept as tensors", VALIDATE_BAD, &[], 2184.0, Figure::End, false),
    row("validation, 4 batches of 8, losses kept with .item()", VALIDATE_GOOD, &[], 8.0, Figure::End, false),
    row(
        "training, 20 steps, losses kept as tensors (growth)",
        TRAIN,
        &["--steps", "20", "--keep-loss", "tensor"],
        20.5,
        Figure::Growth,
        true,
    ),
    row("training, 20 steps, losses kept with .item() (growth)", TRAIN, &["--steps", "20"], 20.4, Figure::Growth, true),
];

pub fn reference_jobs(backend: Backend) -> Vec<Job> {
    REFERENCE
        .iter()
        .map(|row| Job {
            script: row.script.to_owned(),
            args: row.args.iter().map(|a| a.to_string()).collect(),
            backend,
            subject: Subject::Reference(row),
        })
        .collect()
}
