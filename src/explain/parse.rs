//! Reading the figures out of an out-of-memory message, in every family people paste:
//! PyTorch 2.x's CUDA caching allocator message (and ROCm's "HIP out of memory"), the
//! 1.x message (in its 1.0-1.3 wording too, where "cached" is the reserved but unallocated
//! memory), cudaMallocAsync's "Allocation on device N would exceed allowed memory", the
//! driver-level "CUDA error: out of memory" (and "HIP error: out of memory"), cuBLAS's
//! CUBLAS_STATUS_ALLOC_FAILED, PyTorch <= 0.4's "cuda runtime error (2)", the MPS
//! backend's message and the text of `torch.cuda.memory_summary()`. Logs are cleaned
//! first: ANSI colour codes removed and whitespace (including line wraps) collapsed.
//!
//! A figure the message should give but does not (cut short, garbled bytes, or a value no
//! card has) is `None` and named in `Figures::missing`: it is never read as zero.

use regex::Regex;
use std::sync::LazyLock;

/// Which message it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// PyTorch 2.x, CUDA: "GPU 0 has a total capacity of … of which … is free …".
    Cuda2,
    /// PyTorch 2.x on ROCm: the same message as "HIP out of memory".
    Hip,
    /// PyTorch 1.x (to 2.0): "(GPU 0; … total capacity; … already allocated; … free; …)".
    Cuda1,
    /// cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync): "Allocation on
    /// device N would exceed allowed memory. (out of memory)" with its figures.
    MallocAsync,
    /// "CUDA error: out of memory": the driver failed outside the caching allocator.
    Driver,
    /// "HIP error: out of memory": the same on ROCm.
    HipDriver,
    /// "CUBLAS_STATUS_ALLOC_FAILED": cuBLAS could not allocate its handle or workspace.
    Cublas,
    /// PyTorch <= 0.4: "cuda runtime error (2) : out of memory", with no figures.
    Legacy,
    /// "MPS backend out of memory (MPS allocated: …, other allocations: …, max allowed: …)".
    Mps,
    /// The text of `torch.cuda.memory_summary()`.
    MemorySummary,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Cuda2 => "cuda",
            Family::Hip => "hip",
            Family::Cuda1 => "cuda-1.x",
            Family::MallocAsync => "cuda-malloc-async",
            Family::Driver => "cuda-driver",
            Family::HipDriver => "hip-driver",
            Family::Cublas => "cublas",
            Family::Legacy => "cuda-0.x",
            Family::Mps => "mps",
            Family::MemorySummary => "memory-summary",
        }
    }

    /// The figures this family's message gives when it is whole.
    fn expected_figures(self) -> &'static [&'static str] {
        const CACHING: &[&str] = &["requested", "capacity", "free", "allocated", "reserved_unallocated"];
        match self {
            Family::Cuda2 | Family::Hip | Family::Cuda1 | Family::Legacy => CACHING,
            Family::MallocAsync => &["requested", "capacity", "free", "allocated"],
            Family::Mps => &["requested", "allocated", "other_allocations", "max_allowed"],
            Family::Driver | Family::HipDriver | Family::Cublas | Family::MemorySummary => &[],
        }
    }
}

/// The figures a message gives, in bytes; what it does not say is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    pub requested: Option<f64>,
    pub device: Option<u32>,
    pub capacity: Option<f64>,
    pub free: Option<f64>,
    /// Everything this process holds on the device, PyTorch's and not (2.x).
    pub process_total: Option<f64>,
    /// Memory other processes hold, as the message lists them (2.x).
    pub other_processes: Vec<(u32, f64)>,
    /// Allocated to tensors by PyTorch.
    pub allocated: Option<f64>,
    /// Reserved by PyTorch's caching allocator but not allocated to tensors.
    pub reserved_unallocated: Option<f64>,
    /// The per-process cap ("N allowed;"), set by torch.cuda.set_per_process_memory_fraction.
    pub allowed: Option<f64>,
    /// MPS: memory outside PyTorch's MPS allocations, and the limit.
    pub other_allocations: Option<f64>,
    pub max_allowed: Option<f64>,
    /// memory_summary: peaks and the allocator's retries.
    pub allocated_peak: Option<f64>,
    pub reserved_peak: Option<f64>,
    pub cuda_malloc_retries: Option<u64>,
    pub ooms: Option<u64>,
    /// The figures the message should have given and did not, or gave garbled.
    pub missing: Vec<&'static str>,
    /// Figures printed but impossible (more than the card holds), in words; not used.
    pub garbled: Vec<String>,
}

impl Figures {
    /// How many figures the message gave.
    pub fn count(&self) -> usize {
        [
            self.requested,
            self.capacity,
            self.free,
            self.process_total,
            self.allocated,
            self.reserved_unallocated,
            self.allowed,
            self.other_allocations,
            self.max_allowed,
        ]
        .iter()
        .filter(|f| f.is_some())
        .count()
            + self.other_processes.len()
    }

    fn note_missing(&mut self, family: Family) {
        for &name in family.expected_figures() {
            let present = match name {
                "requested" => self.requested.is_some(),
                "capacity" => self.capacity.is_some(),
                "free" => self.free.is_some(),
                "allocated" => self.allocated.is_some(),
                "reserved_unallocated" => self.reserved_unallocated.is_some(),
                "other_allocations" => self.other_allocations.is_some(),
                "max_allowed" => self.max_allowed.is_some(),
                _ => true,
            };
            if !present && !self.missing.contains(&name) {
                self.missing.push(name);
            }
        }
    }
}

/// One message found in the input.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub family: Family,
    pub figures: Figures,
    /// The message text as found (cleaned).
    pub text: String,
}

/// Removes ANSI colour codes and collapses whitespace, so that wrapped lines read as one;
/// lines are joined with `joiner` (a space, or nothing for lines hard-wrapped mid-word).
pub fn clean(input: &str, joiner: &str) -> String {
    static ANSI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").expect("valid regex"));
    let without_colour = ANSI.replace_all(input, "");
    let joined = without_colour.lines().collect::<Vec<_>>().join(joiner);
    joined.split_whitespace().collect::<Vec<_>>().join(" ")
}

const SIZE: &str = r"(\d+(?:\.\d+)?)\s*(bytes|byte|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b";

/// A size with its unit in bytes. PyTorch prints binary units; the MPS message's "GB" and
/// "MB" are binary too.
pub fn size(number: &str, unit: &str) -> Option<f64> {
    let value: f64 = number.parse().ok()?;
    let scale = match unit {
        "bytes" | "byte" | "B" => 1.0,
        "KiB" | "KB" => 1024.0,
        "MiB" | "MB" => 1024.0_f64.powi(2),
        "GiB" | "GB" => 1024.0_f64.powi(3),
        "TiB" | "TB" => 1024.0_f64.powi(4),
        _ => return None,
    };
    Some(value * scale)
}

/// Parses a size written with one of the units above (for `--gpu-memory` and friends).
pub fn parse_size(text: &str) -> Option<f64> {
    static ONE: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!("^{SIZE}$")).expect("valid regex"));
    let caps = ONE.captures(text.trim())?;
    size(&caps[1], &caps[2])
}

fn re(pattern: &str) -> Regex {
    Regex::new(&pattern.replace("SIZE", SIZE)).expect("valid regex")
}

fn get(caps: &regex::Captures<'_>, number: usize) -> Option<f64> {
    size(caps.get(number)?.as_str(), caps.get(number + 1)?.as_str())
}

/// Every message in `input`, in order. Lines are read as wrapped at spaces, and again as
/// hard-wrapped mid-word; the reading that finds more figures wins.
pub fn messages(input: &str) -> Vec<Message> {
    let spaced = messages_in(&clean(input, " "));
    let joined = messages_in(&clean(input, ""));
    let found = |messages: &[Message]| messages.iter().map(|m| m.figures.count()).sum::<usize>();
    if found(&joined) > found(&spaced) { joined } else { spaced }
}

fn messages_in(text: &str) -> Vec<Message> {
    static START: LazyLock<Regex> = LazyLock::new(|| {
        re(concat!(
            r"(?:CUDA|HIP) out of memory\.|(?:CUDA|HIP) error: out of memory|MPS backend out of memory",
            r"|PyTorch CUDA memory summary|Allocation on device \d+ would exceed allowed memory",
            r"|CUBLAS_STATUS_ALLOC_FAILED|cuda runtime error \(2\) ?: ?out of memory",
        ))
    });
    // A paste that begins after the message's head: at "Tried to allocate … (GPU 0; …" or
    // at the parenthesis itself. Read only where no head precedes it.
    static HEADLESS: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?:Tried to allocate SIZE )?\(GPU \d+; SIZE total capacity"));
    let mut starts: Vec<usize> = START.find_iter(text).map(|m| m.start()).collect();
    for found in HEADLESS.find_iter(text) {
        let owned = starts.iter().any(|&s| s <= found.start() && found.start() - s < 80);
        if !owned {
            starts.push(found.start());
        }
    }
    starts.sort_unstable();
    starts
        .iter()
        .enumerate()
        .filter_map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            parse_one(&text[start..end])
        })
        .collect()
}

/// PyTorch prints a huge power of two (17179869184.00 GiB, 2^64 bytes) where it could not
/// read a figure; a figure larger than this is no card's.
const IMPOSSIBLE: f64 = 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0 * 16.0;

fn parse_one(text: &str) -> Option<Message> {
    static REQUEST: LazyLock<Regex> = LazyLock::new(|| re(r"Tried to allocate SIZE"));
    static GPU2: LazyLock<Regex> =
        LazyLock::new(|| re(r"GPU (\d+) has a total capac[a-z]* of SIZE(?: of which SIZE is free)?"));
    static PROCESS: LazyLock<Regex> = LazyLock::new(|| re(r"Process (\d+) has SIZE memory in use"));
    static THIS: LazyLock<Regex> =
        LazyLock::new(|| re(r"Including non-PyTorch memory, this process has SIZE memory in use"));
    static ALLOWED: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE allowed;"));
    static ALLOCATED2: LazyLock<Regex> = LazyLock::new(|| re(r"Of the allocated memory SIZE is"));
    static UNALLOCATED2: LazyLock<Regex> = LazyLock::new(|| re(r"\band SIZE is reserved by"));
    static GPU1: LazyLock<Regex> = LazyLock::new(|| re(r"\(GPU (\d+); SIZE total capacity"));
    static ALREADY: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE already allocated"));
    static FREE1: LazyLock<Regex> = LazyLock::new(|| re(r"; SIZE free"));
    static RESERVED1: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE reserved in total by PyTorch"));
    static CACHED1: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE cached"));
    static MPS: LazyLock<Regex> =
        LazyLock::new(|| re(r"MPS allocated: SIZE, other allocations: SIZE, max allowed: SIZE"));
    static ASYNC_DEVICE: LazyLock<Regex> = LazyLock::new(|| re(r"Allocation on device (\d+)"));
    static ASYNC: LazyLock<[Regex; 5]> = LazyLock::new(|| {
        [
            re(r"Currently allocated\s*: SIZE"),
            re(r"Requested\s*: SIZE"),
            re(r"Device limit\s*: SIZE"),
            re(r"Free \(according to CUDA\)\s*: SIZE"),
            re(r"PyTorch limit \(set by user-supplied memory fraction\)\s*: SIZE"),
        ]
    });
    let first = |regex: &Regex| regex.captures(text).and_then(|c| get(&c, 1));

    let mut figures = Figures { requested: first(&REQUEST), ..Figures::default() };
    let family = if text.starts_with("PyTorch CUDA memory summary") {
        return parse_summary(text);
    } else if text.starts_with("MPS backend") {
        if let Some(caps) = MPS.captures(text) {
            figures.allocated = get(&caps, 1);
            figures.other_allocations = get(&caps, 3);
            figures.max_allowed = get(&caps, 5);
        }
        Family::Mps
    } else if text.starts_with("CUDA error") {
        Family::Driver
    } else if text.starts_with("HIP error") {
        Family::HipDriver
    } else if text.starts_with("CUBLAS") {
        Family::Cublas
    } else if text.starts_with("cuda runtime error") {
        Family::Legacy
    } else if text.starts_with("Allocation on device") {
        let [allocated, requested, limit, free, cap] = &*ASYNC;
        figures.device = ASYNC_DEVICE.captures(text).and_then(|c| c[1].parse().ok());
        figures.allocated = first(allocated);
        figures.requested = first(requested);
        figures.capacity = first(limit);
        figures.free = first(free);
        // Unset, the limit prints as the largest size there is.
        figures.allowed = first(cap).filter(|&cap| figures.capacity.is_none_or(|capacity| cap < capacity));
        Family::MallocAsync
    } else if let Some(caps) = GPU1.captures(text) {
        figures.device = caps[1].parse().ok();
        figures.capacity = get(&caps, 2);
        figures.allocated = first(&ALREADY);
        figures.free = first(&FREE1);
        figures.allowed = first(&ALLOWED);
        // PyTorch 1.0-1.3 printed "cached" as reserved minus allocated; from 1.4 on the
        // message gives the reserved total.
        figures.reserved_unallocated = match (first(&CACHED1), first(&RESERVED1), figures.allocated) {
            (Some(cached), _, _) => Some(cached),
            (None, Some(reserved), Some(allocated)) => Some((reserved - allocated).max(0.0)),
            _ => None,
        };
        Family::Cuda1
    } else {
        if let Some(caps) = GPU2.captures(text) {
            figures.device = caps[1].parse().ok();
            figures.capacity = get(&caps, 2);
            figures.free = get(&caps, 4);
        }
        figures.other_processes =
            PROCESS.captures_iter(text).filter_map(|c| Some((c[1].parse().ok()?, get(&c, 2)?))).collect();
        figures.process_total = first(&THIS);
        figures.allowed = first(&ALLOWED);
        figures.allocated = first(&ALLOCATED2);
        figures.reserved_unallocated = first(&UNALLOCATED2);
        if text.starts_with("HIP") { Family::Hip } else { Family::Cuda2 }
    };
    drop_impossible(&mut figures);
    figures.note_missing(family);
    let end = text.find(" Traceback ").unwrap_or(text.len()).min(600);
    let end = (0..=end).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    Some(Message { family, figures, text: text[..end].trim().to_owned() })
}

/// Figures no card can hold (PyTorch's unreadable-value marker, or garbled digits) are
/// dropped and named, never used.
fn drop_impossible(figures: &mut Figures) {
    let limit = figures.capacity.map_or(IMPOSSIBLE, |c| (4.0 * c).min(IMPOSSIBLE));
    if let Some(total) = figures.process_total.filter(|&t| t > limit) {
        figures.garbled.push(format!("this process's total ({})", super::verdict::human(total)));
        figures.process_total = None;
        figures.missing.push("process_total");
    }
    let before = figures.other_processes.len();
    figures.other_processes.retain(|&(_, bytes)| bytes <= limit);
    if figures.other_processes.len() < before {
        figures.garbled.push("another process's figure".into());
    }
}

fn parse_summary(text: &str) -> Option<Message> {
    static ROW: LazyLock<Regex> = LazyLock::new(|| {
        re(r"\| (Allocated memory|GPU reserved memory|Reserved memory|Non-releasable memory) +\| +SIZE +\| +SIZE")
    });
    static COUNTS: LazyLock<Regex> = LazyLock::new(|| re(r"CUDA OOMs: (\d+) +\| +cudaMalloc retries: (\d+)"));
    static DEVICE: LazyLock<Regex> = LazyLock::new(|| re(r"device ID:? (\d+)"));
    let mut figures = Figures::default();
    let mut reserved = None;
    for caps in ROW.captures_iter(text) {
        let (current, peak) = (get(&caps, 2), get(&caps, 4));
        match &caps[1] {
            "Allocated memory" if figures.allocated.is_none() => {
                figures.allocated = current;
                figures.allocated_peak = peak;
            }
            "GPU reserved memory" | "Reserved memory" if reserved.is_none() => {
                reserved = current;
                figures.reserved_peak = peak;
            }
            _ => {}
        }
    }
    let (allocated, reserved) = (figures.allocated?, reserved?);
    figures.reserved_unallocated = Some((reserved - allocated).max(0.0));
    if let Some(caps) = COUNTS.captures(text) {
        figures.ooms = caps[1].parse().ok();
        figures.cuda_malloc_retries = caps[2].parse().ok();
    }
    figures.device = DEVICE.captures(text).and_then(|c| c[1].parse().ok());
    Some(Message { family: Family::MemorySummary, figures, text: "PyTorch CUDA memory summary".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::measure::MIB;

    #[test]
    fn sizes_in_every_unit() {
        assert_eq!(parse_size("512 bytes"), Some(512.0));
        assert_eq!(parse_size("512.00 B"), Some(512.0));
        assert_eq!(parse_size("1024.00 KiB"), Some(1024.0 * 1024.0));
        assert_eq!(parse_size("20.00 MiB"), Some(20.0 * MIB));
        assert_eq!(parse_size("24GiB"), Some(24.0 * 1024.0 * MIB));
        assert_eq!(parse_size("1.5 GB"), Some(1.5 * 1024.0 * MIB));
        assert_eq!(parse_size("12 parsecs"), None);
    }

    #[test]
    fn colour_codes_and_wrapped_lines_are_cleaned() {
        let wrapped = "\x1b[31mtorch.OutOfMemoryError\x1b[0m: CUDA out of memory. Tried to allocate 2.00\n GiB. GPU 0";
        assert_eq!(
            clean(wrapped, " "),
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0"
        );
        assert_eq!(clean("Tried to allo\ncate 2.00 GiB", ""), "Tried to allocate 2.00 GiB");
    }
}
