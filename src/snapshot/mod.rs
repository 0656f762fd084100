//! PyTorch memory snapshots: the pickles written by `torch.cuda.memory._dump_snapshot()`
//! and the ones `torch.cuda._memory_viz._profile_to_snapshot(prof)` makes from a
//! `profile(profile_memory=True, with_stack=True)` run on any device.
//!
//! `read` turns the pickle into a [`Snapshot`] (no Python: the pickle is read as data, and
//! a pickle that would construct any object is refused, so reading never runs code);
//! `frames` decides which stack frames are the user's own code; `replay` walks the trace
//! the way PyTorch's memory_viz does to find what was live at the out-of-memory event or
//! at the peak; `report` sums that by line, function and category and measures the
//! segments' fragmentation; `plot` draws the timeline as SVG or HTML.

pub mod findings;
pub mod frames;
pub mod model;
pub mod plot;
pub mod read;
pub mod replay;
pub mod report;

pub use model::{Action, Block, Event, Frame, Segment, Snapshot, SnapshotKind};
pub use read::{SnapshotError, looks_like_pickle, read_bytes};
pub use report::{Report, analyse};
