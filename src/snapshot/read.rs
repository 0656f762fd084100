//! Reading a snapshot pickle into the model. The pickle is decoded as plain data
//! (dicts, lists, strings, numbers); a pickle that names a Python class or function to
//! construct is refused, so nothing in the file can run.
//!
//! The decoder is `pickled`, which shares a memoised object between every place that
//! refers to it. (serde-pickle counts references per memo entry and loses an entry that
//! is reached through two shared containers: torch's snapshots do that for the frames of
//! every freed block, and it reports them as recursive.)

use super::model::{Action, Block, BlockState, Event, Frame, Segment, Snapshot, SnapshotKind};
use pickled::{DeOptions, Dict, HashableValue, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Why a file is not a snapshot we can read: one line, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotError(pub String);

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SnapshotError {}

/// Whether the bytes start like a binary pickle (protocol 2 to 5, as Python 3 writes them).
pub fn looks_like_pickle(bytes: &[u8]) -> bool {
    matches!(bytes, [0x80, 2..=5, ..])
}

pub fn read_bytes(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
    if !looks_like_pickle(bytes) {
        return Err(SnapshotError(
            "not a pickle: a memory snapshot is the file torch.cuda.memory._dump_snapshot() writes".into(),
        ));
    }
    let value = pickled::value_from_slice(bytes, DeOptions::new()).map_err(|e| unpickle_error(&e))?;
    Reader::default().snapshot(&value)
}

fn unpickle_error(error: &pickled::Error) -> SnapshotError {
    use pickled::ErrorCode;
    let code = match error {
        pickled::Error::Eval(code, _) | pickled::Error::Syntax(code) => Some(code),
        pickled::Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Some(&ErrorCode::EOFWhileParsing),
        pickled::Error::Io(_) => None,
    };
    SnapshotError(match code {
        Some(ErrorCode::EOFWhileParsing) | Some(ErrorCode::StackUnderflow) => {
            "truncated pickle: the file ends before the snapshot does (was it still being written, or cut short by a \
             copy?)"
                .into()
        }
        Some(ErrorCode::UnsupportedGlobal(module, name)) => format!(
            "not a memory snapshot: the pickle constructs Python objects ({}.{}), and oomlint never runs a pickle's code",
            String::from_utf8_lossy(module),
            String::from_utf8_lossy(name)
        ),
        Some(ErrorCode::UnresolvedGlobal) => {
            "not a memory snapshot: the pickle constructs Python objects, and oomlint never runs a pickle's code".into()
        }
        _ => format!("unreadable pickle: {error}"),
    })
}

fn not_snapshot(what: impl fmt::Display) -> SnapshotError {
    SnapshotError(format!(
        "not a memory snapshot: {what} (expected the dict torch.cuda.memory._snapshot() returns, with `segments` and \
         `device_traces`)"
    ))
}

/// Converts the decoded pickle, sharing each frame list the pickle shares.
#[derive(Default)]
struct Reader {
    frames: HashMap<*const Vec<Value>, Arc<[Frame]>>,
}

impl Reader {
    fn snapshot(&mut self, value: &Value) -> Result<Snapshot, SnapshotError> {
        let (segments, traces): (Vec<Value>, Vec<Value>) = match value {
            Value::Dict(dict) => {
                let dict = dict.inner();
                let segments = get(&dict, "segments");
                let traces = get(&dict, "device_traces");
                if segments.is_none() && traces.is_none() {
                    let keys: Vec<String> = dict.iter().take(5).map(|(k, _)| key_name(k)).collect();
                    return Err(not_snapshot(format!("a dict with keys {}", keys.join(", "))));
                }
                (
                    segments.map(|v| list(v, "`segments`")).transpose()?.unwrap_or_default(),
                    traces.map(|v| list(v, "`device_traces`")).transpose()?.unwrap_or_default(),
                )
            }
            // The oldest format: the list of segments alone (memory_viz reads it too).
            Value::List(items)
                if !items.inner().is_empty()
                    && items
                        .inner()
                        .iter()
                        .all(|v| matches!(v, Value::Dict(d) if d.inner().contains_key(&key("blocks")))) =>
            {
                (items.inner().clone(), Vec::new())
            }
            other => return Err(not_snapshot(format!("the pickle holds {}", type_name(other)))),
        };
        let profiler_made = !segments.is_empty()
            && segments.iter().all(|s| matches!(s, Value::Dict(d) if !d.inner().contains_key(&key("allocated_size"))));
        let segments = segments.iter().enumerate().map(|(i, s)| self.segment(s, i)).collect::<Result<Vec<_>, _>>()?;
        let mut device_traces = Vec::with_capacity(traces.len());
        for (device, trace) in traces.iter().enumerate() {
            let events = list(trace, &format!("device {device}'s trace"))?;
            let events =
                events.iter().enumerate().map(|(i, e)| self.event(e, device, i)).collect::<Result<Vec<_>, _>>()?;
            device_traces.push(events);
        }
        let has_categories = device_traces.iter().flatten().any(|e| e.category.is_some());
        let kind = if profiler_made || (segments.is_empty() && has_categories) {
            SnapshotKind::Profiler
        } else {
            SnapshotKind::Allocator
        };
        Ok(Snapshot { kind, segments, device_traces })
    }

    fn segment(&mut self, value: &Value, index: usize) -> Result<Segment, SnapshotError> {
        let what = format!("segment {index}");
        let d = dict(value, &what)?;
        let address = uint(get(&d, "address"), &format!("{what}'s address"))?;
        let total_size = uint(get(&d, "total_size"), &format!("{what}'s total_size"))?;
        let device = opt_uint(get(&d, "device")).unwrap_or(0) as usize;
        let stream = opt_int(get(&d, "stream")).unwrap_or(0);
        let mut next = address;
        let mut blocks = Vec::new();
        let items = match get(&d, "blocks") {
            Some(v) => list(v, &format!("{what}'s blocks"))?,
            None => Vec::new(),
        };
        for (i, b) in items.iter().enumerate() {
            let block = self.block(b, next, &format!("{what}, block {i}"))?;
            next = next.saturating_add(block.size);
            blocks.push(block);
        }
        Ok(Segment { device, address, total_size, stream, blocks })
    }

    fn block(&mut self, value: &Value, address: u64, what: &str) -> Result<Block, SnapshotError> {
        let d = dict(value, what)?;
        let size = uint(get(&d, "size"), &format!("{what}'s size"))?;
        let state = match get(&d, "state") {
            Some(Value::String(s)) if s.inner() == "active_allocated" => BlockState::ActiveAllocated,
            Some(Value::String(s)) if s.inner() == "active_pending_free" => BlockState::ActivePendingFree,
            _ => BlockState::Inactive,
        };
        let mut requested_size = opt_uint(get(&d, "requested_size"));
        let mut frames = match get(&d, "frames") {
            Some(v) => self.frames(v, what)?,
            None => Arc::from(Vec::new()),
        };
        // Older snapshots keep the frames and the requested size in `history`.
        if let Some(Value::List(history)) = get(&d, "history")
            && let Some(Value::Dict(first)) = history.inner().first()
        {
            let first = first.inner();
            if frames.is_empty()
                && let Some(v) = get(&first, "frames")
            {
                frames = self.frames(v, what)?;
            }
            requested_size = requested_size.or(opt_uint(get(&first, "real_size")));
        }
        Ok(Block { address, size, requested_size: requested_size.unwrap_or(size), state, frames })
    }

    fn event(&mut self, value: &Value, device: usize, index: usize) -> Result<Event, SnapshotError> {
        let what = format!("device {device}'s event {index}");
        let d = dict(value, &what)?;
        let action = match get(&d, "action") {
            Some(Value::String(s)) => Action::parse(s.inner()),
            _ => return Err(not_snapshot(format!("{what} has no action"))),
        };
        Ok(Event {
            action,
            address: opt_uint(get(&d, "addr")).unwrap_or(0),
            size: opt_uint(get(&d, "size")).unwrap_or(0),
            stream: opt_int(get(&d, "stream")).unwrap_or(0),
            frames: match get(&d, "frames") {
                Some(v) => self.frames(v, &what)?,
                None => Arc::from(Vec::new()),
            },
            category: match get(&d, "category") {
                Some(Value::String(s)) => Some(s.inner().clone()),
                _ => None,
            },
            device_free: opt_uint(get(&d, "device_free")),
        })
    }

    fn frames(&mut self, value: &Value, what: &str) -> Result<Arc<[Frame]>, SnapshotError> {
        let shared = match value {
            Value::List(items) => items,
            Value::None => return Ok(Arc::from(Vec::new())),
            other => return Err(not_snapshot(format!("{what}'s frames are {}", type_name(other)))),
        };
        if let Some(known) = self.frames.get(&shared.rc_ptr()) {
            return Ok(known.clone());
        }
        let frames = shared
            .inner()
            .iter()
            .map(|f| {
                let d = dict(f, &format!("a frame of {what}"))?;
                let file = string(get(&d, "filename"));
                let line = opt_uint(get(&d, "line")).unwrap_or(0) as u32;
                Ok(Frame::from_recorded(file, line, string(get(&d, "name"))))
            })
            .collect::<Result<Vec<_>, SnapshotError>>()?;
        let frames: Arc<[Frame]> = Arc::from(frames);
        self.frames.insert(shared.rc_ptr(), frames.clone());
        Ok(frames)
    }
}

impl Frame {
    /// A frame as recorded. The profiler writes `filename: "none", line: 0` and puts
    /// `path/to/file.py(12): function` in the name; that is split into the three fields.
    pub fn from_recorded(file: String, line: u32, name: String) -> Frame {
        if file == "none"
            && line == 0
            && let Some((location, function)) = name.split_once("): ")
            && let Some((path, number)) = location.rsplit_once('(')
            && let Ok(number) = number.parse::<u32>()
        {
            return Frame { file: path.to_string(), line: number, function: function.to_string() };
        }
        let file = if file == "none" { String::new() } else { file };
        Frame { file, line, function: name }
    }
}

fn key(name: &str) -> HashableValue {
    HashableValue::String(pickled::value::SharedFrozen::new(name.to_string()))
}

fn key_name(key: &HashableValue) -> String {
    match key {
        HashableValue::String(s) => format!("`{}`", s.inner()),
        other => format!("{other:?}"),
    }
}

fn get<'d>(dict: &'d Dict, name: &str) -> Option<&'d Value> {
    dict.get(&key(name))
}

fn dict<'v>(value: &'v Value, what: &str) -> Result<std::cell::Ref<'v, Dict>, SnapshotError> {
    match value {
        Value::Dict(d) => Ok(d.inner()),
        other => Err(not_snapshot(format!("{what} is {}, not a dict", type_name(other)))),
    }
}

fn list(value: &Value, what: &str) -> Result<Vec<Value>, SnapshotError> {
    match value {
        Value::List(items) => Ok(items.inner().clone()),
        Value::Tuple(items) => Ok(items.inner().clone()),
        other => Err(not_snapshot(format!("{what} is {}, not a list", type_name(other)))),
    }
}

fn string(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.inner().clone(),
        _ => String::new(),
    }
}

fn uint(value: Option<&Value>, what: &str) -> Result<u64, SnapshotError> {
    match value {
        Some(Value::I64(n)) if *n >= 0 => Ok(*n as u64),
        Some(Value::Int(n)) => u64::try_from(n.as_ref()).map_err(|_| not_snapshot(format!("{what} is out of range"))),
        Some(other) => Err(not_snapshot(format!("{what} is {}, not a size", type_name(other)))),
        None => Err(not_snapshot(format!("{what} is missing"))),
    }
}

fn opt_uint(value: Option<&Value>) -> Option<u64> {
    match value {
        Some(Value::I64(n)) if *n >= 0 => Some(*n as u64),
        Some(Value::Int(n)) => u64::try_from(n.as_ref()).ok(),
        _ => None,
    }
}

fn opt_int(value: Option<&Value>) -> Option<i64> {
    match value {
        Some(Value::I64(n)) => Some(*n),
        Some(Value::Int(n)) => i64::try_from(n.as_ref()).ok(),
        _ => None,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::I64(_) | Value::Int(_) => "an int",
        Value::F64(_) => "a float",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Tuple(_) => "a tuple",
        Value::Set(_) | Value::FrozenSet(_) => "a set",
        Value::Dict(_) => "a dict",
        Value::Object(_) => "a Python object",
        Value::Weak(_) => "a reference to itself",
    }
}
