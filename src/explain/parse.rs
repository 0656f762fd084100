//! Reading the figures out of an out-of-memory message, in every family people paste:
//! PyTorch 2.x's CUDA caching allocator message (and ROCm's "HIP out of memory"), the
//! 1.x message, the driver-level "CUDA error: out of memory", the MPS backend's message,
//! and the text of `torch.cuda.memory_summary()`. Logs are cleaned first: ANSI colour
//! codes removed and whitespace (including line wraps) collapsed.

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
    /// "CUDA error: out of memory": the driver failed outside the caching allocator.
    Driver,
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
            Family::Driver => "cuda-driver",
            Family::Mps => "mps",
            Family::MemorySummary => "memory-summary",
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
    /// MPS: memory outside PyTorch's MPS allocations, and the limit.
    pub other_allocations: Option<f64>,
    pub max_allowed: Option<f64>,
    /// memory_summary: peaks and the allocator's retries.
    pub allocated_peak: Option<f64>,
    pub reserved_peak: Option<f64>,
    pub cuda_malloc_retries: Option<u64>,
    pub ooms: Option<u64>,
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
            self.other_allocations,
            self.max_allowed,
        ]
        .iter()
        .filter(|f| f.is_some())
        .count()
            + self.other_processes.len()
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
        re(
            r"(?:CUDA|HIP) out of memory\.|CUDA error: out of memory|MPS backend out of memory|PyTorch CUDA memory summary",
        )
    });
    let starts: Vec<usize> = START.find_iter(text).map(|m| m.start()).collect();
    starts
        .iter()
        .enumerate()
        .filter_map(|(i, &start)| {
            let end = starts.get(i + 1).copied().unwrap_or(text.len());
            parse_one(&text[start..end])
        })
        .collect()
}

fn parse_one(text: &str) -> Option<Message> {
    static REQUEST: LazyLock<Regex> = LazyLock::new(|| re(r"Tried to allocate SIZE"));
    static GPU2: LazyLock<Regex> =
        LazyLock::new(|| re(r"GPU (\d+) has a total capac[a-z]* of SIZE(?: of which SIZE is free)?"));
    static PROCESS: LazyLock<Regex> = LazyLock::new(|| re(r"Process (\d+) has SIZE memory in use"));
    static THIS: LazyLock<Regex> =
        LazyLock::new(|| re(r"Including non-PyTorch memory, this process has SIZE memory in use"));
    static SPLIT: LazyLock<Regex> = LazyLock::new(|| {
        re(r"Of the allocated memory SIZE is allocated by PyTorch,? and SIZE is reserved by PyTorch but unallocated")
    });
    static GPU1: LazyLock<Regex> = LazyLock::new(|| re(r"\(GPU (\d+); SIZE total capacity"));
    static ALREADY: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE already allocated"));
    static FREE1: LazyLock<Regex> = LazyLock::new(|| re(r"; SIZE free"));
    static RESERVED1: LazyLock<Regex> = LazyLock::new(|| re(r"SIZE (?:reserved in total by PyTorch|cached)"));
    static MPS: LazyLock<Regex> =
        LazyLock::new(|| re(r"MPS allocated: SIZE, other allocations: SIZE, max allowed: SIZE"));

    let mut figures = Figures { requested: REQUEST.captures(text).and_then(|c| get(&c, 1)), ..Figures::default() };
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
    } else if let Some(caps) = GPU1.captures(text) {
        figures.device = caps[1].parse().ok();
        figures.capacity = get(&caps, 2);
        figures.allocated = ALREADY.captures(text).and_then(|c| get(&c, 1));
        figures.free = FREE1.captures(text).and_then(|c| get(&c, 1));
        let reserved = RESERVED1.captures(text).and_then(|c| get(&c, 1));
        figures.reserved_unallocated = match (reserved, figures.allocated) {
            (Some(reserved), Some(allocated)) => Some((reserved - allocated).max(0.0)),
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
        figures.process_total = THIS.captures(text).and_then(|c| get(&c, 1));
        if let Some(caps) = SPLIT.captures(text) {
            figures.allocated = get(&caps, 1);
            figures.reserved_unallocated = get(&caps, 3);
        }
        if text.starts_with("HIP") { Family::Hip } else { Family::Cuda2 }
    };
    let end = text.find(" Traceback ").unwrap_or(text.len()).min(600);
    let end = (0..=end).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    Some(Message { family, figures, text: text[..end].trim().to_owned() })
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
