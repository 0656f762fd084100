//! What an out-of-memory message means: one verdict (with the numbers and the ratio that
//! decided it), the other readings that also hold, the fixes in the order to try them,
//! and whether `torch.cuda.empty_cache()` would help.

use super::parse::{Family, Figures, Message};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// One request is a large share of (or more than) the card.
    EnormousRequest,
    /// The card is full, but not with this process's PyTorch memory.
    HeldOutsidePytorch,
    /// PyTorch reserves enough, but in blocks too fragmented for the request.
    Fragmentation,
    /// PyTorch's tensors fill the card.
    Exhaustion,
    /// A CUDA call outside PyTorch's caching allocator failed.
    DriverLevel,
    /// The message is cut short: too few figures for a verdict.
    Incomplete,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::EnormousRequest => "one enormous request",
            Verdict::HeldOutsidePytorch => "memory held outside this process's PyTorch",
            Verdict::Fragmentation => "fragmentation",
            Verdict::Exhaustion => "exhaustion",
            Verdict::DriverLevel => "driver-level failure",
            Verdict::Incomplete => "incomplete message",
        }
    }
}

/// A message explained.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub verdict: Verdict,
    /// The figures and the ratio that decided the verdict.
    pub evidence: Vec<String>,
    /// Other verdicts whose conditions also hold.
    pub also: Vec<Verdict>,
    /// What to do, in the order to try it.
    pub fixes: Vec<String>,
    /// Whether `torch.cuda.empty_cache()` would help, and why.
    pub empty_cache_helps: bool,
    pub empty_cache: String,
    /// With `--batch-size N` on exhaustion: the largest batch that would fit, at most.
    pub batch_that_fits: Option<u64>,
}

/// Shares of the card above which a reading holds.
const ENORMOUS_SHARE: f64 = 0.5;
const OUTSIDE_SHARE: f64 = 0.3;
const FRAGMENTED_SHARE: f64 = 0.05;
const EXHAUSTED_SHARE: f64 = 0.75;
/// What a batch estimate leaves free.
const SAFETY: f64 = 0.9;

/// Bytes as PyTorch prints them: `512 bytes`, `20.00 MiB`, `79.15 GiB`.
pub fn human(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024.0 {
        return format!("{bytes:.0} bytes");
    }
    let mut value = bytes / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

fn percent(part: f64, whole: f64) -> String {
    format!("{:.0}%", 100.0 * part / whole)
}

pub fn explain(message: &Message, batch_size: Option<u64>) -> Explanation {
    let f = &message.figures;
    match message.family {
        Family::Driver => driver_level(),
        Family::Mps => mps(f),
        Family::MemorySummary => summary(f),
        Family::Cuda2 | Family::Hip | Family::Cuda1 => caching_allocator(message.family, f, batch_size),
    }
}

/// The CUDA (or HIP) caching allocator's message.
fn caching_allocator(family: Family, f: &Figures, batch_size: Option<u64>) -> Explanation {
    let (Some(capacity), Some(requested)) = (f.capacity, f.requested) else {
        return incomplete(f);
    };
    if f.free.is_none() && f.allocated.is_none() {
        return incomplete(f);
    }
    let allocated = f.allocated.unwrap_or(0.0);
    let unallocated = f.reserved_unallocated.unwrap_or(0.0);
    let reserved = allocated + unallocated;
    let free = f.free.unwrap_or(0.0);
    // Held outside this process's PyTorch: other processes, and this process's own
    // non-PyTorch memory (CUDA context, NCCL, library workspaces). Unknown without `free`.
    let outside = if f.free.is_some() { (capacity - free - reserved).max(0.0) } else { 0.0 };
    let env = if family == Family::Hip { "PYTORCH_HIP_ALLOC_CONF" } else { "PYTORCH_CUDA_ALLOC_CONF" };

    let mut holds: Vec<(Verdict, Vec<String>)> = Vec::new();
    if requested >= ENORMOUS_SHARE * capacity {
        holds.push((
            Verdict::EnormousRequest,
            vec![format!(
                "the request alone is {} of the card's {} ({})",
                human(requested),
                human(capacity),
                percent(requested, capacity)
            )],
        ));
    }
    if outside >= OUTSIDE_SHARE * capacity && reserved < 0.5 * capacity {
        let mut evidence = vec![format!(
            "{} ({}) of the card is held outside this process's PyTorch, which reserves only {} ({})",
            human(outside),
            percent(outside, capacity),
            human(reserved),
            percent(reserved, capacity)
        )];
        if let Some(process) = f.process_total {
            evidence.push(format!(
                "of that, this process holds {} outside PyTorch (CUDA context, NCCL, library workspaces) and other \
                 processes {}",
                human((process - reserved).max(0.0)),
                human((capacity - free - process).max(0.0))
            ));
        }
        for (pid, bytes) in &f.other_processes {
            evidence.push(format!("process {pid} has {} in use", human(*bytes)));
        }
        holds.push((Verdict::HeldOutsidePytorch, evidence));
    }
    if f.reserved_unallocated.is_some() && unallocated >= requested && unallocated >= FRAGMENTED_SHARE * capacity {
        holds.push((
            Verdict::Fragmentation,
            vec![format!(
                "{} is reserved by PyTorch but unallocated — {:.1}× the {} requested and {} of the card — yet no \
                 free block is large enough",
                human(unallocated),
                unallocated / requested,
                human(requested),
                percent(unallocated, capacity)
            )],
        ));
    }
    if f.allocated.is_some() && allocated >= EXHAUSTED_SHARE * capacity {
        holds.push((
            Verdict::Exhaustion,
            vec![format!(
                "PyTorch has allocated {} of the card's {} ({}) to tensors",
                human(allocated),
                human(capacity),
                percent(allocated, capacity)
            )],
        ));
    }
    if holds.is_empty() {
        // No reading passes its threshold: the largest holder decides.
        let largest = [
            (Verdict::Exhaustion, allocated, "PyTorch's tensors"),
            (Verdict::Fragmentation, unallocated, "PyTorch's reserved but unallocated blocks"),
            (Verdict::HeldOutsidePytorch, outside, "memory outside this process's PyTorch"),
            (Verdict::EnormousRequest, requested, "the request"),
        ]
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((verdict, bytes, what)) = largest {
            holds.push((
                verdict,
                vec![format!(
                    "the largest share of the card is {what}: {} ({})",
                    human(bytes),
                    percent(bytes, capacity)
                )],
            ));
        }
    }
    let (verdict, mut evidence) = holds.remove(0);
    evidence.push(format!("card {}: {} free, {} requested", human(capacity), human(free), human(requested)));
    let batch_that_fits = match (verdict, batch_size) {
        (Verdict::Exhaustion, Some(batch)) if allocated + requested > 0.0 => {
            Some(((batch as f64) * SAFETY * capacity / (allocated + requested)).floor() as u64)
        }
        _ => None,
    };
    let mut fixes = fixes_for(verdict, env, family);
    if let Some(fits) = batch_that_fits {
        fixes.insert(
            0,
            format!(
                "with activations scaling with the batch, batch {} needs about {}; at most batch {fits} fits in {} of \
                 the card (weights and optimizer state do not shrink, so start a little lower)",
                batch_size.unwrap_or(0),
                human(allocated + requested),
                percent(SAFETY, 1.0)
            ),
        );
    }
    Explanation {
        verdict,
        evidence,
        also: holds.into_iter().map(|(v, _)| v).collect(),
        fixes,
        empty_cache_helps: false,
        empty_cache: format!(
            "torch.cuda.empty_cache() would not help: before raising this error the allocator already released its \
             unused cached blocks and retried; the {} it still reserves lies in partly used segments",
            human(unallocated)
        ),
        batch_that_fits,
    }
}

fn fixes_for(verdict: Verdict, env: &str, family: Family) -> Vec<String> {
    let list: Vec<String> = match verdict {
        Verdict::Fragmentation => {
            let mut fixes = vec![format!(
                "set {env}=expandable_segments:True before CUDA starts (in the environment, or in os.environ before \
                 the first CUDA call): segments then grow instead of splitting"
            )];
            if family == Family::Cuda1 {
                fixes.push(format!(
                    "on PyTorch before 2.1, {env}=max_split_size_mb:128 stops large blocks from being split"
                ));
            }
            fixes.push(
                "keep tensor shapes steady (pad or bucket variable-length batches) so freed blocks are reused".into(),
            );
            fixes.extend(exhaustion_fixes());
            fixes
        }
        Verdict::Exhaustion => exhaustion_fixes(),
        Verdict::EnormousRequest => vec![
            "print the shapes of the operation that failed: an accidental broadcast ((N, 1) against (N,) makes N × N) \
             or a missing reshape/view creates a tensor far larger than intended"
                .into(),
            "for attention over long sequences (memory grows with length²), use \
             torch.nn.functional.scaled_dot_product_attention or shorter chunks"
                .into(),
            "split the operation into chunks along the batch or sequence dimension".into(),
        ],
        Verdict::HeldOutsidePytorch => vec![
            "find who holds the card: nvidia-smi (or nvidia-smi --query-compute-apps=pid,used_memory --format=csv)"
                .into(),
            "a Jupyter kernel still holding tensors, DataLoader workers that touched CUDA, or another job: stop it, or \
             pick a free GPU with CUDA_VISIBLE_DEVICES"
                .into(),
            "inside this process, NCCL buffers and library workspaces count here too: fewer communicators, smaller \
             NCCL_BUFFSIZE"
                .into(),
        ],
        Verdict::DriverLevel => vec![
            "run with CUDA_LAUNCH_BLOCKING=1 to see which call failed: errors are reported asynchronously".into(),
            "check what else uses the card: nvidia-smi".into(),
            "libraries (cuBLAS, cuDNN, NCCL) allocate outside PyTorch's cache: leave them headroom with a smaller \
             batch, or torch.cuda.set_per_process_memory_fraction"
                .into(),
        ],
        Verdict::Incomplete => {
            let mut fixes = vec![
                "paste the whole message: the capacity, free and reserved figures decide between fragmentation, \
                 exhaustion and memory held elsewhere"
                    .into(),
            ];
            fixes.extend(exhaustion_fixes());
            fixes
        }
    };
    list
}

fn exhaustion_fixes() -> Vec<String> {
    vec![
        "a smaller batch, with gradient accumulation to keep the effective batch".into(),
        "torch.no_grad() (or torch.inference_mode()) around evaluation".into(),
        "loss.item() when logging or accumulating losses, so graphs are not kept".into(),
        "mixed precision: torch.autocast(\"cuda\", dtype=torch.bfloat16)".into(),
        "gradient checkpointing (torch.utils.checkpoint.checkpoint(..., use_reentrant=False))".into(),
    ]
}

fn driver_level() -> Explanation {
    Explanation {
        verdict: Verdict::DriverLevel,
        evidence: vec![
            "\"CUDA error: out of memory\" comes from a CUDA call outside PyTorch's caching allocator (a library \
             workspace, a kernel launch, context creation), not from a tensor allocation"
                .into(),
        ],
        also: Vec::new(),
        fixes: fixes_for(Verdict::DriverLevel, "PYTORCH_CUDA_ALLOC_CONF", Family::Driver),
        empty_cache_helps: true,
        empty_cache:
            "torch.cuda.empty_cache() may help here: it hands PyTorch's cached free blocks back to the driver, \
                      where the failing library can use them"
                .into(),
        batch_that_fits: None,
    }
}

fn mps(f: &Figures) -> Explanation {
    let (Some(allocated), Some(other), Some(limit)) = (f.allocated, f.other_allocations, f.max_allowed) else {
        return incomplete(f);
    };
    let requested = f.requested.unwrap_or(0.0);
    let (verdict, evidence) = if other >= OUTSIDE_SHARE * limit {
        (
            Verdict::HeldOutsidePytorch,
            format!(
                "other allocations hold {} ({} of the {} limit)",
                human(other),
                percent(other, limit),
                human(limit)
            ),
        )
    } else if requested >= ENORMOUS_SHARE * limit {
        (
            Verdict::EnormousRequest,
            format!(
                "the request alone is {} ({} of the {} limit)",
                human(requested),
                percent(requested, limit),
                human(limit)
            ),
        )
    } else {
        (
            Verdict::Exhaustion,
            format!(
                "MPS tensors hold {} of the {} limit ({}), and {} more was requested",
                human(allocated),
                human(limit),
                percent(allocated, limit),
                human(requested)
            ),
        )
    };
    let mut fixes = fixes_for(verdict, "PYTORCH_MPS_ALLOC_CONF", Family::Mps);
    fixes.push(
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO raises the limit, at the risk of the whole system running out of memory"
            .into(),
    );
    Explanation {
        verdict,
        evidence: vec![evidence],
        also: Vec::new(),
        fixes,
        empty_cache_helps: false,
        empty_cache: "torch.mps.empty_cache() would not help: the limit counts memory in use by live tensors".into(),
        batch_that_fits: None,
    }
}

fn summary(f: &Figures) -> Explanation {
    let allocated = f.allocated.unwrap_or(0.0);
    let gap = f.reserved_unallocated.unwrap_or(0.0);
    let reserved = allocated + gap;
    let mut evidence = vec![format!(
        "allocated {}, reserved {}: {} reserved but unallocated ({} of the reservation)",
        human(allocated),
        human(reserved),
        human(gap),
        if reserved > 0.0 { percent(gap, reserved) } else { "0%".into() }
    )];
    if let (Some(peak_allocated), Some(peak_reserved)) = (f.allocated_peak, f.reserved_peak) {
        evidence.push(format!("peaks: allocated {}, reserved {}", human(peak_allocated), human(peak_reserved)));
    }
    if let Some(retries) = f.cuda_malloc_retries.filter(|&r| r > 0) {
        evidence.push(format!(
            "{retries} cudaMalloc retries: the allocator had to free its cache to satisfy a request, a sign of \
             memory pressure or fragmentation"
        ));
    }
    let fragmented = reserved > 0.0 && gap >= 0.25 * reserved && gap >= 256.0 * 1024.0 * 1024.0;
    let verdict = if fragmented { Verdict::Fragmentation } else { Verdict::Exhaustion };
    Explanation {
        verdict,
        evidence,
        also: Vec::new(),
        fixes: fixes_for(verdict, "PYTORCH_CUDA_ALLOC_CONF", Family::MemorySummary),
        empty_cache_helps: false,
        empty_cache: format!(
            "torch.cuda.empty_cache() would return up to {} of cached blocks to the driver: that helps other \
             processes, not this one's next allocation (the allocator reuses or frees its cache itself)",
            human(gap)
        ),
        batch_that_fits: None,
    }
}

fn incomplete(f: &Figures) -> Explanation {
    let mut evidence = Vec::new();
    if let Some(requested) = f.requested {
        evidence.push(format!("the message says only that {} was requested", human(requested)));
    } else {
        evidence.push("the message gives no figures".into());
    }
    Explanation {
        verdict: Verdict::Incomplete,
        evidence,
        also: Vec::new(),
        fixes: fixes_for(Verdict::Incomplete, "PYTORCH_CUDA_ALLOC_CONF", Family::Cuda2),
        empty_cache_helps: false,
        empty_cache: "torch.cuda.empty_cache() would not help: the allocator frees its unused cache and retries \
                      before raising"
            .into(),
        batch_that_fits: None,
    }
}
