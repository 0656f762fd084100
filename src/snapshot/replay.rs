//! Replaying a device's trace the way PyTorch's memory_viz draws its "Active Memory
//! Timeline": an allocation lives from its `alloc` to its `free_completed`; a free whose
//! `alloc` is older than the trace (a ring buffer) and a block still allocated in the
//! final segments without an `alloc` in the trace were allocated before it began.

use super::model::{Action, BlockState, Event, Frame, Snapshot};
use std::collections::HashMap;

/// One allocation, with the events that bound it (`None`: before the trace began, or
/// still allocated when the snapshot was dumped).
#[derive(Debug, Clone)]
pub struct Allocation<'a> {
    pub address: u64,
    pub size: u64,
    pub frames: &'a [Frame],
    pub category: Option<&'a str>,
    pub since: Option<usize>,
    pub until: Option<usize>,
}

impl Allocation<'_> {
    /// Whether it was live when event `index` happened (before that event's own change).
    pub fn live_at(&self, index: usize) -> bool {
        self.since.is_none_or(|s| s < index) && self.until.is_none_or(|u| u >= index)
    }
}

/// The moment a report describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Just before the allocation that failed (event index of the `oom`).
    Oom(usize),
    /// Just after the event that brought allocated memory to its highest.
    Peak(usize),
    /// Before the first event, when no event raised memory above where it started.
    Start,
    /// When the snapshot was dumped (no trace was recorded).
    Dump,
}

#[derive(Debug, Clone)]
pub struct DeviceReplay<'a> {
    pub device: usize,
    pub events: &'a [Event],
    pub allocations: Vec<Allocation<'a>>,
    /// Bytes allocated before the first event.
    pub initial_bytes: u64,
    /// Bytes allocated after each event.
    pub allocated_after: Vec<u64>,
    pub peak_bytes: u64,
    pub moment: Moment,
}

impl DeviceReplay<'_> {
    /// The allocations live at the moment.
    pub fn live(&self) -> impl Iterator<Item = &Allocation<'_>> {
        let moment = self.moment;
        self.allocations.iter().filter(move |a| match moment {
            Moment::Oom(i) => a.live_at(i),
            Moment::Peak(i) => a.live_at(i + 1),
            Moment::Start => a.since.is_none(),
            Moment::Dump => a.until.is_none(),
        })
    }

    /// The event index the moment falls at, for rewinding the segments (`None`: the dump).
    pub fn moment_index(&self) -> Option<usize> {
        match self.moment {
            Moment::Oom(i) => Some(i),
            Moment::Peak(i) => Some(i + 1),
            Moment::Start => Some(0),
            Moment::Dump => None,
        }
    }

    pub fn oom_event(&self) -> Option<&Event> {
        match self.moment {
            Moment::Oom(i) => self.events.get(i),
            _ => None,
        }
    }
}

pub fn replay_device(snapshot: &Snapshot, device: usize) -> DeviceReplay<'_> {
    let events: &[Event] = snapshot.device_traces.get(device).map(Vec::as_slice).unwrap_or(&[]);
    let mut allocations: Vec<Allocation> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        match e.action {
            Action::Alloc => {
                open.insert(e.address, allocations.len());
                allocations.push(Allocation {
                    address: e.address,
                    size: e.size,
                    frames: &e.frames,
                    category: e.category.as_deref(),
                    since: Some(i),
                    until: None,
                });
            }
            Action::FreeCompleted => match open.remove(&e.address) {
                Some(a) => allocations[a].until = Some(i),
                None => allocations.push(Allocation {
                    address: e.address,
                    size: e.size,
                    frames: &e.frames,
                    category: e.category.as_deref(),
                    since: None,
                    until: Some(i),
                }),
            },
            _ => {}
        }
    }
    for segment in snapshot.segments.iter().filter(|s| s.device == device) {
        for block in &segment.blocks {
            if block.state == BlockState::ActiveAllocated && !open.contains_key(&block.address) {
                allocations.push(Allocation {
                    address: block.address,
                    size: block.requested_size,
                    frames: &block.frames,
                    category: None,
                    since: None,
                    until: None,
                });
            }
        }
    }
    let initial_bytes: u64 = allocations.iter().filter(|a| a.since.is_none()).map(|a| a.size).sum();
    let mut change = vec![0i128; events.len()];
    for a in &allocations {
        if let Some(s) = a.since {
            change[s] += a.size as i128;
        }
        if let Some(u) = a.until {
            change[u] -= a.size as i128;
        }
    }
    let mut total = initial_bytes as i128;
    let mut allocated_after = Vec::with_capacity(events.len());
    let (mut peak_bytes, mut peak_index) = (initial_bytes, None);
    for (i, delta) in change.iter().enumerate() {
        total += delta;
        let now = total.max(0) as u64;
        allocated_after.push(now);
        if now > peak_bytes {
            (peak_bytes, peak_index) = (now, Some(i));
        }
    }
    let last_oom = events.iter().rposition(|e| e.action == Action::Oom);
    let moment = match (last_oom, peak_index) {
        (Some(i), _) => Moment::Oom(i),
        (None, Some(i)) => Moment::Peak(i),
        (None, None) if events.is_empty() => Moment::Dump,
        // No event raised memory above where it started: the start was the peak.
        (None, None) => Moment::Start,
    };
    DeviceReplay { device, events, allocations, initial_bytes, allocated_after, peak_bytes, moment }
}

/// Every device's replay; the one a report describes is the device with an `oom` event
/// (the last), else the one with the highest peak.
pub fn replay(snapshot: &Snapshot) -> Vec<DeviceReplay<'_>> {
    let mut devices: Vec<usize> = (0..snapshot.device_traces.len()).collect();
    for s in &snapshot.segments {
        if !devices.contains(&s.device) {
            devices.push(s.device);
        }
    }
    devices.into_iter().map(|d| replay_device(snapshot, d)).collect()
}

pub fn chosen<'r, 'a>(replays: &'r [DeviceReplay<'a>]) -> Option<&'r DeviceReplay<'a>> {
    replays
        .iter()
        .filter(|r| matches!(r.moment, Moment::Oom(_)))
        .max_by_key(|r| r.events.iter().rposition(|e| e.action == Action::Oom))
        .or_else(|| replays.iter().filter(|r| r.peak_bytes > 0).max_by_key(|r| r.peak_bytes))
}
