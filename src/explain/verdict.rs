//! What an out-of-memory message means: one verdict (with the numbers and the ratio that
//! decided it), the other readings that also hold, the fixes in the order to try them
//! (for the platform: CUDA, ROCm or Apple's MPS), and whether `torch.cuda.empty_cache()`
//! would help.
//!
//! The readings of the caching allocator's figures, in the order they decide (R requested,
//! C the card, F free, A allocated to tensors, U reserved but unallocated, L the process's
//! cap, O = C - F - A - U held outside this process's PyTorch):
//!   1. one enormous request       R >= C
//!   2. the process hit its cap    L given, and F >= R or A + U + R > L
//!   3. one enormous request       R >= 50% of C
//!   4. figures do not explain it  no cap, and F >= R + 1% of C
//!   5. memory outside PyTorch     O >= 30% of C (exhaustion named too when A > O)
//!   6. fragmentation              U >= R and U >= 5% of C (of L when capped)
//!   7. exhaustion                 A >= 75% of C (of L when capped)
//!   8. otherwise the largest of A, U and O.
//!
//! A reading whose figures the message does not give is not drawn: a missing figure is
//! never taken as zero.

use super::parse::{Family, Figures, Message};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// One request is a large share of (or more than) the card.
    EnormousRequest,
    /// The process reached its own cap (set_per_process_memory_fraction), not the card's end.
    ProcessCap,
    /// The card had more free memory than was requested: the figures do not explain it.
    Unexplained,
    /// A large share of the card is held outside this process's PyTorch.
    HeldOutsidePytorch,
    /// PyTorch reserves enough, but in blocks too fragmented for the request.
    Fragmentation,
    /// PyTorch's tensors fill the card.
    Exhaustion,
    /// A CUDA call outside PyTorch's caching allocator failed.
    DriverLevel,
    /// Too few figures for a verdict: the message is cut short or carries none.
    Incomplete,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::EnormousRequest => "one enormous request",
            Verdict::ProcessCap => "the process hit its own memory cap",
            Verdict::Unexplained => "these figures do not explain the failure",
            Verdict::HeldOutsidePytorch => "memory held outside this process's PyTorch",
            Verdict::Fragmentation => "fragmentation",
            Verdict::Exhaustion => "exhaustion",
            Verdict::DriverLevel => "driver-level failure",
            Verdict::Incomplete => "too few figures for a verdict",
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
/// Free memory must cover the request with this share of the card to spare before the
/// figures count as not explaining the failure (the driver's granularity, a CUDA context
/// that grew).
const UNEXPLAINED_MARGIN: f64 = 0.01;
/// What a batch estimate leaves free.
const SAFETY: f64 = 0.9;

/// Where the message came from: the tools and settings to name differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Platform {
    Cuda,
    Rocm,
    Mps,
}

impl Platform {
    fn of(family: Family) -> Platform {
        match family {
            Family::Hip | Family::HipDriver => Platform::Rocm,
            Family::Mps => Platform::Mps,
            _ => Platform::Cuda,
        }
    }
}

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
    let platform = Platform::of(message.family);
    match message.family {
        Family::Driver | Family::HipDriver | Family::Cublas => driver_level(message.family, platform),
        Family::Legacy => incomplete(f, message.family),
        Family::Mps => mps(f),
        Family::MemorySummary => summary(f),
        Family::Cuda2 | Family::Hip | Family::Cuda1 | Family::MallocAsync => {
            caching_allocator(message.family, f, batch_size)
        }
    }
}

/// The readings that hold, in the order they decide, each with its evidence.
struct Readings(Vec<(Verdict, Vec<String>)>);

impl Readings {
    fn add(&mut self, verdict: Verdict, evidence: Vec<String>) {
        if !self.0.iter().any(|(v, _)| *v == verdict) {
            self.0.push((verdict, evidence));
        }
    }
}

/// The CUDA (or HIP) caching allocator's message, and cudaMallocAsync's.
fn caching_allocator(family: Family, f: &Figures, batch_size: Option<u64>) -> Explanation {
    let platform = Platform::of(family);
    let (requested, capacity, free, allocated, cap) = (f.requested, f.capacity, f.free, f.allocated, f.allowed);
    // cudaMallocAsync keeps no cache of its own by the time it raises: nothing is reserved
    // but unallocated.
    let unallocated = if family == Family::MallocAsync { Some(0.0) } else { f.reserved_unallocated };
    // Shares of what the process may use: the cap when there is one.
    let limit = cap.or(capacity);
    let (limit_name, limit_owner) = if cap.is_some() { ("the cap", "the cap's") } else { ("the card", "the card's") };

    let mut holds = Readings(Vec::new());
    // 1 and 3: one request that the card cannot hold, or most of it.
    let enormous = |r: f64, c: f64| {
        vec![format!("the request alone is {} of the card's {} ({})", human(r), human(c), percent(r, c))]
    };
    if let (Some(r), Some(c)) = (requested, capacity)
        && r >= c
    {
        holds.add(Verdict::EnormousRequest, enormous(r, c));
    }
    // 2: the process's own cap refused the request.
    if let (Some(cap), Some(r)) = (cap, requested) {
        let reserved = allocated.map(|a| a + unallocated.unwrap_or(0.0));
        let card_had_room = free.is_some_and(|free| free >= r);
        let over_cap = reserved.is_some_and(|reserved| reserved + r > cap);
        if card_had_room || over_cap {
            let mut evidence = vec![format!(
                "this process may use at most {} (torch.cuda.set_per_process_memory_fraction){}",
                human(cap),
                capacity.map(|c| format!(", {} of the card's {}", percent(cap, c), human(c))).unwrap_or_default()
            )];
            if let Some(reserved) = reserved.filter(|_| over_cap) {
                evidence.push(format!(
                    "PyTorch reserves {}{} and asked for {} more: {} is over the cap",
                    human(reserved),
                    if unallocated.is_none() { " or more" } else { "" },
                    human(r),
                    human(reserved + r)
                ));
            }
            if let Some(free) = free.filter(|_| card_had_room) {
                evidence.push(format!(
                    "the card still had {} free, more than the {} requested: the cap refused it, not the card",
                    human(free),
                    human(r)
                ));
            }
            holds.add(Verdict::ProcessCap, evidence);
        }
    }
    if let (Some(r), Some(c)) = (requested, capacity)
        && r >= ENORMOUS_SHARE * c
    {
        holds.add(Verdict::EnormousRequest, enormous(r, c));
    }
    // 4: free memory covers the request.
    if let (None, Some(r), Some(c), Some(free)) = (cap, requested, capacity, free)
        && free >= r + UNEXPLAINED_MARGIN * c
    {
        holds.add(
            Verdict::Unexplained,
            vec![format!(
                "the card reports {} free ({} of it), more than the {} requested: lack of memory on the card does \
                 not explain this failure",
                human(free),
                percent(free, c),
                human(r)
            )],
        );
    }
    // 5: held outside this process's PyTorch, exactly, or at least (from this process's total).
    let outside = match (capacity, free, allocated, unallocated) {
        (Some(c), Some(free), Some(a), Some(u)) => Some((c - free - a - u).max(0.0)),
        _ => None,
    };
    let outside_at_least = outside.or(match (capacity, free, f.process_total) {
        (Some(c), Some(free), Some(total)) => Some((c - free - total).max(0.0)),
        _ => None,
    });
    let mut say_both = false;
    if let (Some(c), Some(o)) = (capacity, outside_at_least)
        && o >= OUTSIDE_SHARE * c
    {
        let mut evidence = vec![match (allocated, unallocated, outside) {
            (Some(a), Some(u), Some(_)) => format!(
                "{} ({}) of the card is held outside this process's PyTorch, which reserves {} ({})",
                human(o),
                percent(o, c),
                human(a + u),
                percent(a + u, c)
            ),
            _ => format!("at least {} ({}) of the card is held by other processes", human(o), percent(o, c)),
        }];
        if let (Some(process), Some(free), Some(a), Some(u)) = (f.process_total, free, allocated, unallocated) {
            let inside = match platform {
                Platform::Rocm => "HIP context, RCCL, library workspaces",
                _ => "CUDA context, NCCL, library workspaces",
            };
            evidence.push(format!(
                "of that, this process holds {} outside PyTorch ({inside}) and other processes {}",
                human((process - a - u).max(0.0)),
                human((c - free - process).max(0.0))
            ));
        }
        for (pid, bytes) in &f.other_processes {
            evidence.push(format!("process {pid} has {} in use", human(*bytes)));
        }
        if let Some(a) = allocated.filter(|&a| a > o) {
            say_both = true;
            evidence.push(format!(
                "PyTorch's own tensors hold more still: {} ({}), so both shrinking this job and freeing the card help",
                human(a),
                percent(a, c)
            ));
        }
        holds.add(Verdict::HeldOutsidePytorch, evidence);
    }
    // 6: reserved but unallocated, enough for the request, yet no block fits.
    if let (Some(u), Some(r), Some(base)) = (unallocated, requested, limit)
        && u >= r
        && u >= FRAGMENTED_SHARE * base
    {
        holds.add(
            Verdict::Fragmentation,
            vec![format!(
                "{} is reserved by PyTorch but unallocated — {:.1}× the {} requested and {} of {limit_name} — yet no \
                 free block is large enough",
                human(u),
                u / r,
                human(r),
                percent(u, base)
            )],
        );
    }
    // 7: tensors fill the card (or the cap).
    if let (Some(a), Some(base)) = (allocated, limit)
        && (a >= EXHAUSTED_SHARE * base || say_both)
    {
        holds.add(
            Verdict::Exhaustion,
            vec![format!(
                "PyTorch has allocated {} of {limit_owner} {} ({}) to tensors",
                human(a),
                human(base),
                percent(a, base)
            )],
        );
    }
    // 8: no reading passes its threshold: the largest holder decides, when all are known.
    if holds.0.is_empty()
        && let (Some(a), Some(u), Some(o), Some(c)) = (allocated, unallocated, outside, capacity)
    {
        let largest = [
            (Verdict::Exhaustion, a, "PyTorch's tensors"),
            (Verdict::Fragmentation, u, "PyTorch's reserved but unallocated blocks"),
            (Verdict::HeldOutsidePytorch, o, "memory outside this process's PyTorch"),
        ]
        .into_iter()
        .max_by(|x, y| x.1.total_cmp(&y.1));
        if let Some((verdict, bytes, what)) = largest {
            holds.add(
                verdict,
                vec![format!("the largest share of the card is {what}: {} ({})", human(bytes), percent(bytes, c))],
            );
        }
    }
    if holds.0.is_empty() {
        return incomplete(f, family);
    }
    let mut holds = holds.0;
    let (verdict, mut evidence) = holds.remove(0);
    let known = [
        capacity.map(|c| format!("card {}", human(c))),
        free.map(|free| format!("{} free", human(free))),
        requested.map(|r| format!("{} requested", human(r))),
    ];
    let known: Vec<String> = known.into_iter().flatten().collect();
    if !known.is_empty() {
        evidence.push(known.join(", "));
    }
    evidence.extend(gaps(f));
    let batch_that_fits = match (verdict, batch_size, allocated, requested, limit) {
        (Verdict::Exhaustion, Some(batch), Some(a), Some(r), Some(base)) if a + r > 0.0 => {
            Some(((batch as f64) * SAFETY * base / (a + r)).floor() as u64)
        }
        _ => None,
    };
    let also: Vec<Verdict> = holds.into_iter().map(|(v, _)| v).collect();
    let mut fixes = fixes_for(verdict, family, f);
    if verdict == Verdict::ProcessCap && also.contains(&Verdict::Fragmentation) {
        fixes.insert(1, expandable_segments(family));
    }
    if let (Some(fits), Some(a), Some(r)) = (batch_that_fits, allocated, requested) {
        fixes.insert(
            0,
            format!(
                "with activations scaling with the batch, batch {} needs about {}; at most batch {fits} fits in {} of \
                 {limit_name} (weights and optimizer state do not shrink, so start a little lower)",
                batch_size.unwrap_or(0),
                human(a + r),
                percent(SAFETY, 1.0)
            ),
        );
    }
    let empty_cache = match unallocated {
        Some(u) if family != Family::MallocAsync => format!(
            "torch.cuda.empty_cache() would not help: before raising this error the allocator already released its \
             unused cached blocks and retried; the {} it still reserves lies in partly used segments",
            human(u)
        ),
        _ => "torch.cuda.empty_cache() would not help: before raising this error the allocator already released its \
              unused cached memory and retried"
            .into(),
    };
    Explanation { verdict, evidence, also, fixes, empty_cache_helps: false, empty_cache, batch_that_fits }
}

/// Evidence lines naming what the message does not give, or gives garbled.
fn gaps(f: &Figures) -> Vec<String> {
    let mut lines = Vec::new();
    if !f.missing.is_empty() {
        lines.push(format!(
            "not in the message: {} — only the readings the given figures support are drawn",
            f.missing.iter().map(|m| m.replace('_', " ")).collect::<Vec<_>>().join(", ")
        ));
    }
    for garbled in &f.garbled {
        lines.push(format!("{garbled} is more than any card holds: a garbled figure, not used"));
    }
    lines
}

fn expandable_segments(family: Family) -> String {
    let env = if family == Family::Hip { "PYTORCH_HIP_ALLOC_CONF" } else { "PYTORCH_CUDA_ALLOC_CONF" };
    format!(
        "set {env}=expandable_segments:True before {} starts (in the environment, or in os.environ before the first \
         {} call): segments then grow instead of splitting",
        if family == Family::Hip { "HIP" } else { "CUDA" },
        if family == Family::Hip { "HIP" } else { "CUDA" },
    )
}

fn fixes_for(verdict: Verdict, family: Family, f: &Figures) -> Vec<String> {
    let platform = Platform::of(family);
    match verdict {
        Verdict::Fragmentation => {
            let mut fixes = vec![expandable_segments(family)];
            if family == Family::Cuda1 {
                fixes.push(
                    "on PyTorch before 2.1, PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 stops large blocks from \
                     being split"
                        .into(),
                );
            }
            fixes.push(
                "keep tensor shapes steady (pad or bucket variable-length batches) so freed blocks are reused".into(),
            );
            fixes.extend(exhaustion_fixes(platform));
            fixes
        }
        Verdict::Exhaustion => exhaustion_fixes(platform),
        Verdict::EnormousRequest => vec![
            "print the shapes of the operation that failed: an accidental broadcast ((N, 1) against (N,) makes N × N) \
             or a missing reshape/view creates a tensor far larger than intended"
                .into(),
            "for attention over long sequences (memory grows with length²), use \
             torch.nn.functional.scaled_dot_product_attention or shorter chunks"
                .into(),
            "split the operation into chunks along the batch or sequence dimension".into(),
        ],
        Verdict::ProcessCap => {
            let room = match (f.free, f.allowed) {
                (Some(free), Some(cap)) => format!(" (the card had {} free; the cap is {})", human(free), human(cap)),
                _ => String::new(),
            };
            let mut fixes = vec![format!(
                "the cap comes from torch.cuda.set_per_process_memory_fraction (or per_process_memory_fraction in \
                 PYTORCH_CUDA_ALLOC_CONF): raise the fraction if nothing else needs the rest of the card{room}"
            )];
            fixes.push("or make the work fit under the cap:".into());
            fixes.extend(exhaustion_fixes(platform));
            fixes
        }
        Verdict::Unexplained => {
            let mut fixes = vec![
                "free memory covered the request, so a limit other than the card's memory refused it; the usual \
                 ones: WSL2 or Windows (WDDM), where the driver reports free memory it will not hand out (and pinned \
                 host memory, pin_memory=True, counts against it); a MIG slice or vGPU smaller than the figures \
                 suggest; a limit set outside PyTorch (a container, or CUDA MPS's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)"
                    .into(),
            ];
            fixes.push(match platform {
                Platform::Rocm => "on ROCm, an APU or unified-memory system counts system memory as free that the \
                                   GPU may not map (VRAM carve-out, amdgpu.gttsize): check rocm-smi --showmeminfo \
                                   vram (or amd-smi) against the figures"
                    .into(),
                _ => "check the card from outside the process while the job runs: nvidia-smi (under WSL, on the \
                      Windows host too), and nvidia-smi -L for MIG slices"
                    .into(),
            });
            fixes.push(
                "a smaller batch may not help: find which limit refused the allocation first (retry the step once \
                 after torch.cuda.synchronize() to rule out memory another process was releasing)"
                    .into(),
            );
            fixes
        }
        Verdict::HeldOutsidePytorch => match platform {
            Platform::Rocm => vec![
                "find who holds the card: rocm-smi --showpids (or amd-smi process)".into(),
                "a Jupyter kernel still holding tensors, DataLoader workers that touched the GPU, or another job: stop \
                 it, or pick a free GPU with HIP_VISIBLE_DEVICES"
                    .into(),
                "inside this process, RCCL buffers and library workspaces (rocBLAS, MIOpen) count here too: fewer \
                 communicators, smaller NCCL_BUFFSIZE"
                    .into(),
            ],
            _ => vec![
                "find who holds the card: nvidia-smi (or nvidia-smi --query-compute-apps=pid,used_memory --format=csv)"
                    .into(),
                "a Jupyter kernel still holding tensors, DataLoader workers that touched CUDA, or another job: stop \
                 it, or pick a free GPU with CUDA_VISIBLE_DEVICES"
                    .into(),
                "inside this process, NCCL buffers and library workspaces count here too: fewer communicators, smaller \
                 NCCL_BUFFSIZE"
                    .into(),
            ],
        },
        Verdict::DriverLevel => match (family, platform) {
            (Family::Cublas, _) => vec![
                "cuBLAS allocates its handle and workspace outside PyTorch's cache, on the first matrix multiply on \
                 each device and stream: leave it headroom with a smaller batch, or \
                 torch.cuda.set_per_process_memory_fraction(0.9)"
                    .into(),
                "check what else uses the card: nvidia-smi (a wrong CUDA_VISIBLE_DEVICES puts two jobs on one card)"
                    .into(),
                "run with CUDA_LAUNCH_BLOCKING=1 to see which call failed: errors are reported asynchronously".into(),
            ],
            (_, Platform::Rocm) => vec![
                "run with AMD_SERIALIZE_KERNEL=3 to see which call failed: errors are reported asynchronously".into(),
                "check what else uses the card: rocm-smi --showpids (or amd-smi process)".into(),
                "libraries (rocBLAS, MIOpen, RCCL) allocate outside PyTorch's cache: leave them headroom with a \
                 smaller batch, or torch.cuda.set_per_process_memory_fraction"
                    .into(),
            ],
            _ => vec![
                "run with CUDA_LAUNCH_BLOCKING=1 to see which call failed: errors are reported asynchronously".into(),
                "check what else uses the card: nvidia-smi".into(),
                "libraries (cuBLAS, cuDNN, NCCL) allocate outside PyTorch's cache: leave them headroom with a smaller \
                 batch, or torch.cuda.set_per_process_memory_fraction"
                    .into(),
            ],
        },
        Verdict::Incomplete => {
            let mut fixes = vec![if family == Family::Legacy {
                "PyTorch 0.4 and older print no figures: print torch.cuda.memory_allocated() and \
                 torch.cuda.memory_cached() before the failing step, and watch nvidia-smi, to tell a full card from \
                 memory held elsewhere (newer PyTorch prints these figures in the message)"
                    .into()
            } else {
                "paste the whole message: the capacity, free and reserved figures decide between fragmentation, \
                 exhaustion and memory held elsewhere"
                    .into()
            }];
            fixes.extend(exhaustion_fixes(platform));
            fixes
        }
    }
}

fn exhaustion_fixes(platform: Platform) -> Vec<String> {
    vec![
        "a smaller batch, with gradient accumulation to keep the effective batch".into(),
        "torch.no_grad() (or torch.inference_mode()) around evaluation".into(),
        "loss.item() when logging or accumulating losses, so graphs are not kept".into(),
        match platform {
            Platform::Mps => "mixed precision: torch.autocast(\"mps\", dtype=torch.float16)".into(),
            _ => "mixed precision: torch.autocast(\"cuda\", dtype=torch.bfloat16)".into(),
        },
        "gradient checkpointing (torch.utils.checkpoint.checkpoint(..., use_reentrant=False))".into(),
    ]
}

fn driver_level(family: Family, platform: Platform) -> Explanation {
    let evidence = match family {
        Family::Cublas => {
            "CUBLAS_STATUS_ALLOC_FAILED: cuBLAS could not allocate its handle or workspace, which it \
                           takes from the card outside PyTorch's caching allocator (most often because PyTorch's \
                           cache or another process already holds the card)"
        }
        Family::HipDriver => {
            "\"HIP error: out of memory\" comes from a HIP call outside PyTorch's caching allocator \
                              (a library workspace, a kernel launch, context creation), not from a tensor allocation"
        }
        _ => {
            "\"CUDA error: out of memory\" comes from a CUDA call outside PyTorch's caching allocator (a library \
              workspace, a kernel launch, context creation), not from a tensor allocation"
        }
    };
    Explanation {
        verdict: Verdict::DriverLevel,
        evidence: vec![evidence.into()],
        also: Vec::new(),
        fixes: fixes_for(Verdict::DriverLevel, family, &Figures::default()),
        empty_cache_helps: true,
        empty_cache: format!(
            "torch.cuda.empty_cache() may help here: it hands PyTorch's cached free blocks back to the driver, where \
             the failing {} can use them",
            if platform == Platform::Rocm { "HIP call" } else { "library" }
        ),
        batch_that_fits: None,
    }
}

/// The MPS backend's message: its limit is PYTORCH_MPS_HIGH_WATERMARK_RATIO × the Mac's
/// recommended working set, and "other allocations" is what the Metal driver holds for
/// this process outside PyTorch's MPS tensors.
fn mps(f: &Figures) -> Explanation {
    let (Some(allocated), Some(other), Some(limit)) = (f.allocated, f.other_allocations, f.max_allowed) else {
        return incomplete(f, Family::Mps);
    };
    let mut holds = Readings(Vec::new());
    if let Some(r) = f.requested {
        if r >= ENORMOUS_SHARE * limit {
            holds.add(
                Verdict::EnormousRequest,
                vec![format!(
                    "the request alone is {} ({} of the {} limit)",
                    human(r),
                    percent(r, limit),
                    human(limit)
                )],
            );
        }
        if allocated + other + r <= limit {
            holds.add(
                Verdict::Unexplained,
                vec![format!(
                    "MPS tensors ({}), other allocations ({}) and the request ({}) come to {}, within the {} limit: \
                     these figures do not explain the failure",
                    human(allocated),
                    human(other),
                    human(r),
                    human(allocated + other + r),
                    human(limit)
                )],
            );
        }
    }
    let tensors = format!(
        "MPS tensors hold {} of the {} limit ({}){}",
        human(allocated),
        human(limit),
        percent(allocated, limit),
        f.requested.map(|r| format!(", and {} more was requested", human(r))).unwrap_or_default()
    );
    if other >= OUTSIDE_SHARE * limit {
        holds.add(
            Verdict::HeldOutsidePytorch,
            vec![format!(
                "other allocations (Metal memory this process holds outside PyTorch's MPS tensors) take {} ({} of the \
                 {} limit)",
                human(other),
                percent(other, limit),
                human(limit)
            )],
        );
        if allocated > other {
            holds.add(Verdict::Exhaustion, vec![tensors.clone()]);
        }
    }
    if holds.0.is_empty() {
        if allocated >= other {
            holds.add(Verdict::Exhaustion, vec![tensors]);
        } else {
            holds.add(
                Verdict::HeldOutsidePytorch,
                vec![format!(
                    "other allocations ({}) are larger than the MPS tensors ({})",
                    human(other),
                    human(allocated)
                )],
            );
        }
    }
    let mut holds = holds.0;
    let (verdict, mut evidence) = holds.remove(0);
    evidence.extend(gaps(f));
    let mut fixes = match verdict {
        Verdict::HeldOutsidePytorch => vec![
            "see what holds the Mac's unified memory: Activity Monitor (the Memory tab, and Window > GPU History)"
                .into(),
            "other models or pipelines loaded in this process keep their Metal buffers: load fewer at once, or move \
             idle ones to the CPU"
                .into(),
            "close other apps that use a lot of memory: on unified memory they share the limit's headroom".into(),
        ],
        Verdict::Unexplained => vec![
            "the limit was not reached by these figures: macOS memory pressure from other apps can refuse an \
             allocation first; watch Activity Monitor's Memory Pressure graph while the job runs"
                .into(),
        ],
        other => fixes_for(other, Family::Mps, f),
    };
    fixes.push(
        "PYTORCH_MPS_HIGH_WATERMARK_RATIO raises the limit (0.0 removes it), at the risk of the whole system running \
         out of memory"
            .into(),
    );
    Explanation {
        verdict,
        evidence,
        also: holds.into_iter().map(|(v, _)| v).collect(),
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
        fixes: fixes_for(verdict, Family::MemorySummary, f),
        empty_cache_helps: false,
        empty_cache: format!(
            "torch.cuda.empty_cache() would return up to {} of cached blocks to the driver: that helps other \
             processes, not this one's next allocation (the allocator reuses or frees its cache itself)",
            human(gap)
        ),
        batch_that_fits: None,
    }
}

fn incomplete(f: &Figures, family: Family) -> Explanation {
    let mut evidence = Vec::new();
    if family == Family::Legacy {
        evidence.push(
            "\"cuda runtime error (2) : out of memory\" is PyTorch 0.4's (and older) message: it names no figures, so \
             a full card, fragmentation and memory held elsewhere cannot be told apart"
                .into(),
        );
    } else if let Some(requested) = f.requested {
        evidence.push(format!("the message says only that {} was requested", human(requested)));
    } else {
        evidence.push("the message gives no figures that decide a verdict".into());
    }
    if family != Family::Legacy {
        evidence.extend(gaps(f));
    }
    Explanation {
        verdict: Verdict::Incomplete,
        evidence,
        also: Vec::new(),
        fixes: fixes_for(Verdict::Incomplete, family, f),
        empty_cache_helps: false,
        empty_cache: "torch.cuda.empty_cache() would not help: the allocator frees its unused cache and retries \
                      before raising"
            .into(),
        batch_that_fits: None,
    }
}
