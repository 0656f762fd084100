//! What a snapshot says, summed: at the out-of-memory event (else at the peak) the live
//! bytes by the user's line and function, by category, the segments' fragmentation, the
//! failed request, and the timeline of allocated memory.

use super::frames::{deepest_user_frame, is_user};
use super::model::{Action, BlockState, Frame, Snapshot, SnapshotKind};
use super::read::SnapshotError;
use super::replay::{Allocation, DeviceReplay, Moment, chosen, replay};
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone)]
pub struct Report {
    pub kind: SnapshotKind,
    /// `cuda:0`, or `cpu` for the profiler's host-memory trace.
    pub device: String,
    pub moment: Moment,
    /// Events in the device's trace.
    pub events: usize,
    /// Bytes live at the moment.
    pub allocated_bytes: u64,
    /// The highest allocated memory the trace shows.
    pub peak_bytes: u64,
    /// Largest first.
    pub lines: Vec<LineUse>,
    /// Largest first.
    pub functions: Vec<FunctionUse>,
    /// By the profiler's category; empty when the snapshot has none.
    pub categories: BTreeMap<String, u64>,
    /// Live bytes whose stack has no frame of the user's code.
    pub library_bytes: u64,
    /// Live bytes recorded without any stack (allocated before recording began).
    pub no_stack_bytes: u64,
    /// The allocator's segments at the moment (`None` for profiler-made snapshots).
    pub segments: Option<SegmentUse>,
    pub oom: Option<OomAt>,
    /// Allocated bytes over the trace, at most `TIMELINE_POINTS` points `(event, bytes)`,
    /// each the highest of the events it stands for.
    pub timeline: Vec<(usize, u64)>,
    /// The heaviest lines' bytes at each timeline point (then one band for the rest): the
    /// stacked bands of the plot.
    pub bands: Vec<Band>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Band {
    /// `file:line function`, or `None` for everything else.
    pub line: Option<(String, u32, String)>,
    /// Aligned with `Report::timeline`.
    pub values: Vec<u64>,
}

/// How many lines get a band of their own in the plot.
pub const BANDS: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineUse {
    pub file: String,
    pub line: u32,
    pub function: String,
    pub bytes: u64,
    pub allocations: usize,
    /// The user's frames that called it (innermost first), from its largest allocation.
    pub callers: Vec<Frame>,
    pub categories: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionUse {
    pub file: String,
    pub function: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUse {
    pub count: usize,
    pub reserved_bytes: u64,
    pub allocated_bytes: u64,
    /// Reserved but not allocated: what the caching allocator holds free.
    pub free_bytes: u64,
    pub largest_free_block: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomAt {
    pub event: usize,
    pub requested_bytes: u64,
    /// What CUDA reported free on the device when the request failed.
    pub device_free_bytes: Option<u64>,
}

pub const TIMELINE_POINTS: usize = 240;

pub fn analyse(snapshot: &Snapshot) -> Result<Report, SnapshotError> {
    let replays = replay(snapshot);
    let Some(r) = chosen(&replays) else {
        return Err(SnapshotError(
            "the snapshot is empty: nothing was allocated while it recorded (was \
             torch.cuda.memory._record_memory_history() called before the run, on the device that ran it?)"
                .into(),
        ));
    };
    if r.allocations.iter().all(|a| a.frames.is_empty()) {
        let how = match snapshot.kind {
            SnapshotKind::Profiler => "profile with `with_stack=True`",
            SnapshotKind::Allocator => {
                "record with torch.cuda.memory._record_memory_history(max_entries=100000) before the run (stacks \
                 \"python\" or \"all\")"
            }
        };
        return Err(SnapshotError(format!(
            "the snapshot has no stack frames, so nothing can be charged to a line: {how}"
        )));
    }
    let live: Vec<&Allocation> = r.live().collect();
    let allocated_bytes = live.iter().map(|a| a.size).sum();
    let (lines, functions, library_bytes, no_stack_bytes) = by_line(&live);
    let mut categories = BTreeMap::new();
    if live.iter().any(|a| a.category.is_some()) {
        for a in &live {
            *categories.entry(a.category.unwrap_or("unknown").to_string()).or_insert(0) += a.size;
        }
    }
    let device = match snapshot.kind {
        SnapshotKind::Profiler if r.device + 1 == snapshot.device_traces.len().max(1) => "cpu".to_string(),
        _ => format!("cuda:{}", r.device),
    };
    let segments = match snapshot.kind {
        SnapshotKind::Allocator => Some(segment_use(snapshot, r, &live)),
        SnapshotKind::Profiler => None,
    };
    let oom = r.oom_event().map(|e| OomAt {
        event: r.moment_index().unwrap_or(0),
        requested_bytes: e.size,
        device_free_bytes: e.device_free,
    });
    let timeline = timeline(r);
    let bands = bands(r, &lines, &timeline);
    Ok(Report {
        kind: snapshot.kind,
        device,
        moment: r.moment,
        events: r.events.len(),
        allocated_bytes,
        peak_bytes: r.peak_bytes,
        lines,
        functions,
        categories,
        library_bytes,
        no_stack_bytes,
        segments,
        oom,
        timeline,
        bands,
    })
}

type ByLine = (Vec<LineUse>, Vec<FunctionUse>, u64, u64);

fn by_line(live: &[&Allocation]) -> ByLine {
    let mut lines: HashMap<(&str, u32, &str), LineUse> = HashMap::new();
    let mut largest: HashMap<(&str, u32, &str), u64> = HashMap::new();
    let (mut library_bytes, mut no_stack_bytes) = (0, 0);
    for a in live {
        let Some(frame) = deepest_user_frame(a.frames) else {
            if a.frames.is_empty() {
                no_stack_bytes += a.size;
            } else {
                library_bytes += a.size;
            }
            continue;
        };
        let key = (frame.file.as_str(), frame.line, frame.function.as_str());
        let entry = lines.entry(key).or_insert_with(|| LineUse {
            file: frame.file.clone(),
            line: frame.line,
            function: frame.function.clone(),
            bytes: 0,
            allocations: 0,
            callers: Vec::new(),
            categories: BTreeMap::new(),
        });
        entry.bytes += a.size;
        entry.allocations += 1;
        if let Some(category) = a.category {
            *entry.categories.entry(category.to_string()).or_insert(0) += a.size;
        }
        let biggest = largest.entry(key).or_insert(0);
        if a.size >= *biggest {
            *biggest = a.size;
            let position = a.frames.iter().position(|f| std::ptr::eq(f, frame)).unwrap_or(0);
            entry.callers = a.frames[position + 1..].iter().filter(|f| is_user(f)).cloned().collect();
        }
    }
    let mut lines: Vec<LineUse> = lines.into_values().collect();
    lines.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line))));
    let mut functions: BTreeMap<(String, String), u64> = BTreeMap::new();
    for l in &lines {
        *functions.entry((l.file.clone(), l.function.clone())).or_insert(0) += l.bytes;
    }
    let mut functions: Vec<FunctionUse> =
        functions.into_iter().map(|((file, function), bytes)| FunctionUse { file, function, bytes }).collect();
    functions.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| (&a.file, &a.function).cmp(&(&b.file, &b.function))));
    (lines, functions, library_bytes, no_stack_bytes)
}

/// The segments at the moment: the dumped ones, rewound over the segment events after
/// it (a `segment_free` after the moment means the segment still existed then).
fn segment_use(snapshot: &Snapshot, r: &DeviceReplay, live: &[&Allocation]) -> SegmentUse {
    let mut ranges: Vec<(u64, u64)> =
        snapshot.segments.iter().filter(|s| s.device == r.device).map(|s| (s.address, s.total_size)).collect();
    let Some(moment) = r.moment_index() else {
        // At the dump the blocks themselves say what is free.
        let blocks = snapshot.segments.iter().filter(|s| s.device == r.device).flat_map(|s| &s.blocks);
        let (mut allocated, mut largest_free) = (0, 0);
        for b in blocks {
            match b.state {
                BlockState::ActiveAllocated => allocated += b.requested_size,
                BlockState::Inactive => largest_free = largest_free.max(b.size),
                BlockState::ActivePendingFree => {}
            }
        }
        let reserved: u64 = ranges.iter().map(|r| r.1).sum();
        return SegmentUse {
            count: ranges.len(),
            reserved_bytes: reserved,
            allocated_bytes: allocated,
            free_bytes: reserved.saturating_sub(allocated),
            largest_free_block: largest_free,
        };
    };
    for e in r.events.iter().skip(moment).rev() {
        match e.action {
            Action::SegmentFree | Action::SegmentUnmap => ranges.push((e.address, e.size)),
            Action::SegmentAlloc | Action::SegmentMap => {
                if let Some(i) = ranges.iter().position(|&(a, s)| a <= e.address && e.address + e.size <= a + s) {
                    let (a, s) = ranges.swap_remove(i);
                    // Mapping a piece of an expandable segment: keep what lies either side.
                    if a < e.address {
                        ranges.push((a, e.address - a));
                    }
                    if e.address + e.size < a + s {
                        ranges.push((e.address + e.size, a + s - e.address - e.size));
                    }
                }
            }
            _ => {}
        }
    }
    ranges.sort_unstable();
    let reserved: u64 = ranges.iter().map(|r| r.1).sum();
    let allocated: u64 = live.iter().map(|a| a.size).sum();
    let mut blocks: Vec<(u64, u64)> = live.iter().map(|a| (a.address, a.size)).collect();
    blocks.sort_unstable();
    let mut largest_free = 0;
    let mut next_block = 0;
    for &(start, size) in &ranges {
        let end = start + size;
        let mut cursor = start;
        while next_block < blocks.len() && blocks[next_block].0 < start {
            next_block += 1;
        }
        while next_block < blocks.len() && blocks[next_block].0 < end {
            let (address, size) = blocks[next_block];
            largest_free = largest_free.max(address.saturating_sub(cursor));
            cursor = cursor.max(address + size);
            next_block += 1;
        }
        largest_free = largest_free.max(end.saturating_sub(cursor));
    }
    SegmentUse {
        count: ranges.len(),
        reserved_bytes: reserved,
        allocated_bytes: allocated,
        free_bytes: reserved.saturating_sub(allocated),
        largest_free_block: largest_free,
    }
}

fn timeline(r: &DeviceReplay) -> Vec<(usize, u64)> {
    let values = &r.allocated_after;
    if values.is_empty() {
        return vec![(0, r.initial_bytes)];
    }
    let per_point = values.len().div_ceil(TIMELINE_POINTS);
    values
        .chunks(per_point)
        .enumerate()
        .map(|(i, chunk)| {
            let (offset, &bytes) = chunk.iter().enumerate().max_by_key(|(j, b)| (**b, usize::MAX - j)).unwrap();
            (i * per_point + offset, bytes)
        })
        .collect()
}

/// Each heavy line's bytes (and the rest's) after each timeline point's event.
fn bands(r: &DeviceReplay, lines: &[LineUse], timeline: &[(usize, u64)]) -> Vec<Band> {
    let heavy: Vec<(&str, u32, &str)> =
        lines.iter().take(BANDS).map(|l| (l.file.as_str(), l.line, l.function.as_str())).collect();
    let rest = heavy.len();
    let events = r.allocated_after.len().max(1);
    let mut change = vec![vec![0i128; events + 1]; rest + 1];
    let mut initial = vec![0i128; rest + 1];
    for a in &r.allocations {
        let band = deepest_user_frame(a.frames)
            .and_then(|f| heavy.iter().position(|h| *h == (f.file.as_str(), f.line, f.function.as_str())))
            .unwrap_or(rest);
        match a.since {
            Some(s) => change[band][s] += a.size as i128,
            None => initial[band] += a.size as i128,
        }
        if let Some(u) = a.until {
            change[band][u] -= a.size as i128;
        }
    }
    (0..=rest)
        .map(|band| {
            let mut total = initial[band];
            let mut after = Vec::with_capacity(events);
            for delta in &change[band][..events] {
                total += delta;
                after.push(total.max(0) as u64);
            }
            let values = if r.allocated_after.is_empty() {
                vec![initial[band].max(0) as u64]
            } else {
                timeline.iter().map(|&(e, _)| after[e]).collect()
            };
            let line = heavy.get(band).map(|&(f, l, n)| (f.to_string(), l, n.to_string()));
            Band { line, values }
        })
        .collect()
}
