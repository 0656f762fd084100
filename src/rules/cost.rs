//! What a rule costs, as the rule declares it: which figure of which run of its fixtures
//! shows the cost, or which behaviour does, and where the memory lands. `measure` runs
//! the fixtures accordingly and quotes the figures; the rule only declares.

/// How a rule's cost is shown: part of each rule's metadata.
#[derive(Debug, Clone, Copy)]
pub enum Cost {
    /// Memory: one figure of `bad.py` against the same figure of `good.py`, quoted as
    /// "{bad figure} {bad} vs {good figure} {good}".
    Memory { figure: Figure, bad: &'static str, good: &'static str },
    /// Memory that is about where tensors land (the GPU, not the host), quoted as
    /// `Memory` is. Off a GPU the fixtures run with a CUDA device emulated by fake
    /// tensors, and only what that device would hold is counted.
    DeviceMemory { figure: Figure, bad: &'static str, good: &'static str },
    /// No memory cost: a behaviour a real run shows.
    Evidence(Evidence),
    /// A rule about the linter's own comments: nothing to run, `why` says what it saves.
    Housekeeping { why: &'static str },
    /// A cost only a CUDA device shows (time, the allocator's own state): its fixtures run
    /// only on a GPU. Until a GPU run is recorded, the `documented` behaviour is quoted
    /// with its `source`, marked as not measured here yet.
    Device { measure: DeviceMeasure, documented: &'static str, source: &'static str },
}

/// What a GPU run of a [`Cost::Device`] rule's fixtures shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceMeasure {
    /// Time per step, and bytes the allocator obtained from the driver (`cudaMalloc`) per
    /// step, of `bad.py` against `good.py`: "{time} per step {bad} vs {time} {good}".
    StepTime { bad: &'static str, good: &'static str },
    /// The settings the allocator reports after the first CUDA allocation, as each
    /// fixture prints them (`allocator settings: ...`).
    AllocatorSettings,
}

impl Cost {
    /// The memory figure and the words quoted with it, for a memory cost.
    pub fn memory(self) -> Option<(Figure, &'static str, &'static str)> {
        match self {
            Cost::Memory { figure, bad, good } | Cost::DeviceMemory { figure, bad, good } => Some((figure, bad, good)),
            Cost::Evidence(_) | Cost::Housekeeping { .. } | Cost::Device { .. } => None,
        }
    }
}

/// Which memory figure of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The most memory live at once.
    Peak,
    /// Live when the script's `main()` returns.
    End,
    /// Live at the end less live when the first batch was drawn.
    Growth,
    /// How much more is live at each batch than at the one before (from the second on).
    PerStep,
}

/// Behaviour that shows a rule's cost when it is not memory. Read from real runs (never
/// the fake backend, whose values are placeholders).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// `bad.py` emits warnings of this category (`what` says what does), `good.py` none,
    /// and both print the same output.
    Warning { category: &'static str, what: &'static str },
    /// `bad.py` uses a deprecated API: it emits PyTorch's `FutureWarning` (`what` says
    /// what does), `good.py` none, with the same output. Editors strike such findings
    /// through.
    Deprecation { what: &'static str },
    /// `bad.py` prints a non-zero "max gradient difference", `good.py` zero.
    GradientDifference,
}
