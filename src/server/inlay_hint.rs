//! A memory snapshot in the editor: the `oomlint.snapshot` setting (or the
//! `oomlint.showSnapshot` command) points the server at a snapshot pickle; the lines that
//! held the most memory get an inlay hint at their end (`▲ 2.10 GiB at peak`) and a hover
//! with the breakdown. A hint follows its line when lines are added above it, and goes
//! when the line's text no longer matches what the snapshot was taken on.

use super::Backend;
use super::position::Encoding;
use crate::explain::human;
use crate::snapshot::findings::locate;
use crate::snapshot::model::Frame;
use crate::snapshot::replay::Moment;
use crate::snapshot::{SnapshotKind, analyse, read_bytes};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub const SHOW_SNAPSHOT: &str = "oomlint.showSnapshot";

/// Lines under this share of the live memory get no hint.
const SMALLEST_SHARE: f64 = 0.01;
const MOST_HINTS: usize = 20;
/// How far a line may have moved and still be recognised by its text.
const SEARCH_LINES: usize = 200;

#[derive(Debug, Clone)]
pub struct LoadedSnapshot {
    pub path: PathBuf,
    pub at: &'static str,
    pub allocated_bytes: u64,
    /// Profiler snapshots give each function's `def` line.
    pub whole_functions: bool,
    pub lines: Vec<HeavyLine>,
}

#[derive(Debug, Clone)]
pub struct HeavyLine {
    /// On disk when found, else as the snapshot names it.
    pub file: PathBuf,
    /// 1-based, as recorded.
    pub line: u32,
    pub function: String,
    pub bytes: u64,
    pub allocations: usize,
    pub categories: BTreeMap<String, u64>,
    pub callers: Vec<Frame>,
    /// The line's text (trimmed) when the snapshot was loaded, if the file was found.
    pub text: Option<String>,
}

/// Reads and sums a snapshot; relative paths are looked for under `roots`.
pub fn load(path: &Path, roots: &[PathBuf]) -> std::result::Result<LoadedSnapshot, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let report = read_bytes(&bytes).and_then(|s| analyse(&s)).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut roots = roots.to_vec();
    if let Some(dir) = path.parent() {
        roots.push(dir.to_path_buf());
    }
    let floor = (report.allocated_bytes as f64 * SMALLEST_SHARE) as u64;
    let lines = report
        .lines
        .iter()
        .filter(|l| l.bytes >= floor.max(1))
        .take(MOST_HINTS)
        .map(|l| {
            let found = locate(&l.file, &roots);
            let text = found
                .as_ref()
                .and_then(|f| std::fs::read_to_string(f).ok())
                .and_then(|t| t.lines().nth(l.line as usize - 1).map(|s| s.trim().to_string()));
            HeavyLine {
                file: found.unwrap_or_else(|| PathBuf::from(&l.file)),
                line: l.line,
                function: l.function.clone(),
                bytes: l.bytes,
                allocations: l.allocations,
                categories: l.categories.clone(),
                callers: l.callers.clone(),
                text,
            }
        })
        .collect();
    let at = match report.moment {
        Moment::Oom(_) => "at the OOM",
        Moment::Peak(_) | Moment::Start => "at peak",
        Moment::Dump => "at the dump",
    };
    Ok(LoadedSnapshot {
        path: path.to_path_buf(),
        at,
        allocated_bytes: report.allocated_bytes,
        whole_functions: report.kind == SnapshotKind::Profiler,
        lines,
    })
}

fn same_file(heavy: &Path, document: &Path) -> bool {
    heavy == document || (heavy.is_relative() && document.ends_with(heavy))
}

/// Where each heavy line of `document_path` is in `text` now (0-based rows), dropping
/// the lines whose text is no longer there.
pub fn placed<'s>(snapshot: &'s LoadedSnapshot, document_path: &Path, text: &str) -> Vec<(usize, &'s HeavyLine)> {
    let rows: Vec<&str> = text.lines().collect();
    snapshot
        .lines
        .iter()
        .filter(|h| same_file(&h.file, document_path))
        .filter_map(|h| {
            let recorded = h.line as usize - 1;
            let Some(want) = &h.text else {
                return (recorded < rows.len()).then_some((recorded, h));
            };
            let matches = |row: usize| rows.get(row).is_some_and(|r| r.trim() == want);
            (0..=SEARCH_LINES)
                .flat_map(|d| [recorded.checked_add(d), recorded.checked_sub(d)])
                .flatten()
                .find(|&row| matches(row))
                .map(|row| (row, h))
        })
        .collect()
}

fn label(snapshot: &LoadedSnapshot, h: &HeavyLine) -> String {
    let scope = if snapshot.whole_functions { " in this function" } else { "" };
    format!("▲ {} {}{scope}", human(h.bytes as f64), snapshot.at)
}

/// The breakdown shown on hover, in Markdown.
pub fn breakdown(snapshot: &LoadedSnapshot, h: &HeavyLine) -> String {
    let share = 100.0 * h.bytes as f64 / snapshot.allocated_bytes.max(1) as f64;
    let mut out = format!(
        "**{}** {} ({share:.0}% of {} live) held by `{}` in {} allocation{}",
        human(h.bytes as f64),
        snapshot.at,
        human(snapshot.allocated_bytes as f64),
        h.function,
        h.allocations,
        if h.allocations == 1 { "" } else { "s" }
    );
    if snapshot.whole_functions {
        out.push_str(" (the profiler records functions, not their lines)");
    }
    for (category, bytes) in &h.categories {
        out.push_str(&format!("\n- {}: {}", category.replace('_', " "), human(*bytes as f64)));
    }
    if !h.callers.is_empty() {
        let calls: Vec<String> =
            h.callers.iter().take(4).map(|f| format!("`{}` ({}:{})", f.function, f.file, f.line)).collect();
        out.push_str(&format!("\n\ncalled from {}", calls.join(" ← ")));
    }
    out.push_str(&format!("\n\nfrom the memory snapshot `{}`", snapshot.path.display()));
    out
}

fn line_end(row: &str, encoding: Encoding) -> u32 {
    row.chars().map(|c| encoding.units(c)).sum::<usize>() as u32
}

impl Backend {
    pub(super) async fn on_inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let state = self.state();
        let (Some(snapshot), Some(document)) = (&state.snapshot, state.documents.get(&params.text_document.uri)) else {
            return Ok(None);
        };
        let Some(path) = params.text_document.uri.to_file_path() else { return Ok(None) };
        let rows: Vec<&str> = document.text.lines().collect();
        let encoding = state.encoding();
        let hints = placed(snapshot, &path, &document.text)
            .into_iter()
            .filter(|(row, _)| (params.range.start.line..=params.range.end.line).contains(&(*row as u32)))
            .map(|(row, h)| InlayHint {
                position: Position { line: row as u32, character: line_end(rows[row], encoding) },
                label: InlayHintLabel::String(label(snapshot, h)),
                kind: None,
                text_edits: None,
                tooltip: Some(InlayHintTooltip::MarkupContent(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: breakdown(snapshot, h),
                })),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            })
            .collect();
        Ok(Some(hints))
    }

    /// The hover for a heavy line at `row` of the document, if the snapshot has one there.
    pub(super) fn snapshot_hover(&self, uri: &Uri, row: u32) -> Option<String> {
        let state = self.state();
        let (snapshot, document) = (state.snapshot.as_ref()?, state.documents.get(uri)?);
        let path = uri.to_file_path()?;
        placed(snapshot, &path, &document.text)
            .into_iter()
            .find(|(r, _)| *r as u32 == row)
            .map(|(_, h)| breakdown(snapshot, h))
    }

    /// Loads the snapshot at `path` (`None`: forget it) and asks the client to redraw hints.
    pub(super) async fn show_snapshot(&self, path: Option<PathBuf>) -> std::result::Result<(), String> {
        let loaded = match path {
            Some(path) => {
                let roots = self.state().workspace.folders.clone();
                Some(load(&path, &roots)?)
            }
            None => None,
        };
        let refresh = {
            let mut state = self.state();
            state.snapshot = loaded;
            state.inlay_hint_refresh
        };
        // Clients that cannot refresh ask again on their next edit or scroll. Not awaited:
        // the reply must not hold up the messages behind this one.
        if refresh {
            let client = self.client.clone();
            tokio::spawn(async move {
                let _ = client.inlay_hint_refresh().await;
            });
        }
        Ok(())
    }

    pub(super) async fn on_execute_command(&self, params: ExecuteCommandParams) -> Result<Option<serde_json::Value>> {
        if params.command != SHOW_SNAPSHOT {
            return Err(tower_lsp_server::jsonrpc::Error::invalid_params(format!(
                "unknown command {}",
                params.command
            )));
        }
        let path = params.arguments.first().and_then(|a| a.as_str()).filter(|p| !p.is_empty()).map(PathBuf::from);
        match self.show_snapshot(path).await {
            Ok(()) => {
                Ok(Some(serde_json::json!({"lines": self.state().snapshot.as_ref().map_or(0, |s| s.lines.len())})))
            }
            Err(message) => {
                self.client.show_message(MessageType::ERROR, format!("oomlint: {message}")).await;
                Err(tower_lsp_server::jsonrpc::Error::invalid_params(message))
            }
        }
    }
}
