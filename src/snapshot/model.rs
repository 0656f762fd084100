//! What a memory snapshot holds, in the terms of PyTorch's caching allocator.

use std::sync::Arc;

/// Who wrote the snapshot: the CUDA caching allocator (`_dump_snapshot`) or the profiler
/// (`_profile_to_snapshot`), whose segments are one synthetic range per device and whose
/// allocations carry a category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotKind {
    Allocator,
    Profiler,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub kind: SnapshotKind,
    /// The allocator's segments when the snapshot was dumped.
    pub segments: Vec<Segment>,
    /// One event list per device, oldest first (a ring buffer: the oldest may be gone).
    pub device_traces: Vec<Vec<Event>>,
}

#[derive(Debug, Clone)]
pub struct Segment {
    pub device: usize,
    pub address: u64,
    pub total_size: u64,
    pub stream: i64,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone)]
pub struct Block {
    /// Computed from the segment's address and the sizes of the blocks before it.
    pub address: u64,
    pub size: u64,
    pub requested_size: u64,
    pub state: BlockState,
    pub frames: Arc<[Frame]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    ActiveAllocated,
    /// Freed by the program, but still in use by a stream (`record_stream`).
    ActivePendingFree,
    Inactive,
}

#[derive(Debug, Clone)]
pub struct Event {
    pub action: Action,
    pub address: u64,
    pub size: u64,
    pub stream: i64,
    /// Shared between the events of one allocation, as in the pickle.
    pub frames: Arc<[Frame]>,
    /// The profiler's category (`parameter`, `activation`, …).
    pub category: Option<String>,
    /// On `oom`: the bytes CUDA reported free on the device.
    pub device_free: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    /// Any other action (annotations, newer kinds): kept in the event count, not replayed.
    Other,
}

impl Action {
    pub fn parse(name: &str) -> Action {
        match name {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            "snapshot" => Action::Snapshot,
            "oom" => Action::Oom,
            _ => Action::Other,
        }
    }
}

/// One stack frame, innermost first in every list. Profiler frames name themselves
/// `file.py(12): function`; they are read into the same three fields. Frames that are not
/// Python source (C++ frames, `<built-in method …>`, `nn.Module: Linear_0`) keep their
/// name in `function` with `line` 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    pub file: String,
    pub line: u32,
    pub function: String,
}
