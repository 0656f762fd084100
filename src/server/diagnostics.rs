//! Findings: lint a file, or a notebook's code cells joined, through the library's one
//! entry point (`crate::lint`), store each document's findings in its own offsets and
//! hand them out as pushed `publishDiagnostics` or as the answer to a
//! `textDocument/diagnostic` pull. Linting runs in the background per (target, version),
//! debounced, and a result for a version that is no longer current is dropped.

use super::state::{State, Target, lock};
use super::{Backend, convert, incremental};
use crate::diagnostic::Diagnostic;
use crate::engine::RuleSettings;
use crate::engine::facts::FileWideFacts;
use crate::lint::{self, SourceKind};
use crate::notebook::Cells;
use crate::source::LineIndex;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{self as lsp, *};

/// Each linted document with its version and findings in LSP form.
pub type Published = Vec<(Uri, i32, Vec<lsp::Diagnostic>)>;

/// What linting one version of a target needs, taken under the lock.
pub struct Snapshot {
    /// The documents linted together (one for a file, each code cell of a notebook),
    /// with the version and text of each.
    pub members: Vec<(Uri, i32, Arc<str>)>,
    pub source: SourceKind,
    tree: Option<tree_sitter::Tree>,
    pub path: PathBuf,
    pub settings: Option<RuleSettings>,
    /// When the changes since a file's stored findings allow a partial relint: the
    /// statements relinted, and those findings.
    incremental: Option<(incremental::Relinted, Vec<Diagnostic>)>,
    /// What the findings of a file read outside their statements, when the partial relint
    /// has already worked it out (a whole lint works it out off the lock).
    layout: Option<incremental::FileLayout>,
    /// The whole-file answers the lint reuses and keeps: the stored findings' for a
    /// partial relint, a new store for a whole lint.
    pub file_wide: Arc<FileWideFacts>,
}

impl Snapshot {
    /// The target as it is now, and what to tell the user about the configuration (each
    /// message once).
    pub fn take(state: &mut State, target: &Target) -> Option<(Snapshot, Vec<(MessageType, String)>)> {
        let members: Vec<(Uri, i32, Arc<str>)> = state
            .members(target)?
            .into_iter()
            .map(|uri| state.documents.get_mut(&uri).map(|d| (d.version, d.shared_text())).map(|(v, t)| (uri, v, t)))
            .collect::<Option<_>>()?;
        let (source, tree) = match target {
            Target::File(uri) => {
                let tree = state.documents.get_mut(uri).and_then(|d| d.tree().cloned());
                (SourceKind::Python(members[0].2.clone()), tree)
            }
            Target::Notebook(_) => {
                let texts: Vec<&str> = members.iter().map(|(_, _, text)| &**text).collect();
                (SourceKind::Cells(Cells::from_texts(&texts)), None)
            }
        };
        let path = target.path();
        let (settings, notices) = state.rule_settings(&path);
        let (incremental, layout) = match target {
            Target::File(uri) => {
                incremental_plan(state, uri).map_or((None, None), |(plan, now)| (Some(plan), Some(now)))
            }
            Target::Notebook(_) => (None, None),
        };
        let file_wide = match (target, &incremental) {
            (Target::File(uri), Some(_)) => state.documents.get(uri).map(|d| d.file_wide.clone()).unwrap_or_default(),
            _ => Arc::default(),
        };
        Some((Snapshot { members, source, tree, path, settings, incremental, layout, file_wide }, notices))
    }

    /// Whether only part of the file is relinted.
    #[cfg(test)]
    pub fn is_partial(&self) -> bool {
        self.incremental.is_some()
    }

    /// Each member's findings in its own offsets, in the members' order, and for a file
    /// what they read outside their statements (`keep` stores both).
    pub fn lint(self) -> Linted {
        let Some(settings) = self.settings else {
            return Linted { found: vec![Vec::new(); self.members.len()], layout: None, file_wide: self.file_wide };
        };
        let tree = self.tree.as_ref();
        let (found, layout) = match (&self.source, self.incremental) {
            (SourceKind::Python(_), Some((relinted, previous))) => {
                let file_wide = Some(&*self.file_wide);
                let ranges = relinted.ranges();
                let local = lint::lint_parsed(&self.source, tree, Some(&ranges), file_wide, &self.path, &settings);
                (vec![incremental::merge(previous, local.diagnostics, &relinted)], self.layout)
            }
            (SourceKind::Cells(cells), _) => {
                let found = lint::lint(&self.source, &self.path, &settings).diagnostics;
                let mut by_cell = cells.split_findings(found);
                let found =
                    (1..=self.members.len()).map(|number| by_cell.remove(&number).unwrap_or_default()).collect();
                (found, None)
            }
            (source, _) => {
                let found = lint::lint_parsed(source, tree, None, Some(&self.file_wide), &self.path, &settings);
                let layout = tree.map(|tree| incremental::FileLayout::of(tree, source.code()));
                (vec![found.diagnostics], layout)
            }
        };
        Linted { found, layout, file_wide: self.file_wide }
    }
}

/// What linting a snapshot gave: each member's findings, and what `keep` stores with them.
pub struct Linted {
    pub found: Vec<Vec<Diagnostic>>,
    /// For a file: what its findings read outside their own statements.
    pub layout: Option<incremental::FileLayout>,
    /// The whole-file answers the lint drew.
    pub file_wide: Arc<FileWideFacts>,
}

/// Relint part of the file instead of all of it when every change since the stored
/// findings stayed inside top-level definitions and touched nothing that other
/// statements depend on (`incremental::relinted_range`); module-level code is relinted
/// with them when the edits may reach it (`incremental::module_code`).
/// Also returns the layout of the current text, which the findings are then stored with.
fn incremental_plan(
    state: &State,
    uri: &Uri,
) -> Option<((incremental::Relinted, Vec<Diagnostic>), incremental::FileLayout)> {
    let (_, previous) = state.results.get(uri)?;
    let document = state.documents.get(uri)?;
    if document.edits.is_empty() || document.edits.iter().any(|e| e.risky) {
        return None;
    }
    // Lines ending in a lone carriage return are relinted as the newlines Python reads.
    if matches!(crate::source::lone_carriage_returns_as_newlines(&document.text), std::borrow::Cow::Owned(_)) {
        return None;
    }
    let (span, delta) = incremental::dirty_span(&document.edits)?;
    let tree = document.reparsed_tree()?;
    let unit = incremental::relinted_range(tree, &document.text, &span)?;
    let now = incremental::FileLayout::of(tree, &document.text);
    if !document.linted.as_ref()?.same_outside(&now, &unit, delta) {
        return None;
    }
    let reaches_module_code = document.edits.iter().any(|e| e.reaches_module_code);
    let others = if reaches_module_code { incremental::module_code(tree, &unit) } else { Vec::new() };
    let relinted = incremental::Relinted { others, unit, delta };
    if previous.iter().any(|finding| incremental::depends_on_other_text(finding, &relinted)) {
        return None;
    }
    let broken = document.linted.as_ref()?.has_errors() || now.has_errors() || tree.root_node().has_error();
    if broken && previous.iter().any(|finding| incremental::in_module_code(finding, tree, &relinted)) {
        return None;
    }
    Some(((relinted, previous.clone()), now))
}

/// Lint the current version of `target` (only if it is still `expected`), store each
/// member's findings, and return them in LSP form (`None` when something changed
/// meanwhile).
pub async fn lint(
    client: &Client,
    state: &Arc<Mutex<State>>,
    target: &Target,
    expected: Option<i32>,
) -> Option<Published> {
    let (snapshot, notices) = {
        let mut state = lock(state);
        if expected.is_some_and(|v| state.version_of(target) != Some(v)) {
            return None;
        }
        Snapshot::take(&mut state, target)?
    };
    for (kind, message) in notices {
        client.show_message(kind, message).await;
    }
    let members = snapshot.members.clone();
    let linted = tokio::task::spawn_blocking(move || snapshot.lint()).await.ok()?;
    let mut state = lock(state);
    let current = state.members(target).is_some_and(|now| now.iter().eq(members.iter().map(|(uri, _, _)| uri)));
    let unchanged = current
        && members.iter().all(|(uri, version, _)| state.documents.get(uri).is_some_and(|d| d.version == *version));
    if !unchanged {
        return None;
    }
    let (encoding, docs_links) = (state.encoding(), state.docs_links.clone());
    let mut published = Vec::new();
    let Linted { found, mut layout, file_wide } = linted;
    for ((uri, version, text), found) in members.into_iter().zip(found) {
        let index = LineIndex::new(&text);
        let converted = found.iter().map(|d| convert::diagnostic(&text, &index, d, encoding, &docs_links)).collect();
        keep(&mut state, &uri, version, found, &file_wide, layout.take());
        published.push((uri, version, converted));
    }
    Some(published)
}

/// Store a document's findings for `version`, with the whole-file answers their lint
/// drew and the layout of the text they are of: later partial relints start from them.
pub fn keep(
    state: &mut State,
    uri: &Uri,
    version: i32,
    found: Vec<Diagnostic>,
    file_wide: &Arc<FileWideFacts>,
    layout: Option<incremental::FileLayout>,
) {
    if let Some(document) = state.documents.get_mut(uri) {
        document.edits.retain(|e| e.version > version);
        // The layout is of the current text unless changes arrived since.
        let current = document.version == version && document.edits.is_empty();
        document.linted = layout.filter(|_| current);
        if current {
            document.file_wide = file_wide.clone();
        }
    }
    state.results.insert(uri.clone(), (version, found));
}

impl Backend {
    /// Lint what `uri` belongs to (the document, or the notebook it is a cell of) after
    /// the debounce delay and publish. The latest version is linted: `_version`, the one
    /// that asked, may already be superseded.
    pub(super) fn schedule(&self, uri: Uri, _version: i32) {
        let target = self.state().target_of(&uri);
        self.schedule_target(target, true);
    }

    /// `schedule` for a document just opened: linted at once, whatever the debounce delay,
    /// which is there to wait for the next keystroke, and an open is not one.
    pub(super) fn schedule_opened(&self, uri: Uri) {
        let target = self.state().target_of(&uri);
        self.schedule_target(target, false);
    }

    /// Reparse the document's tree unchanged on the background thread when it is fresh
    /// from a parse (`Document::fresh`): just opened, its findings out, the user has not
    /// typed yet. The first keystroke then reparses in under a millisecond instead of
    /// 5–15 ms, and a tree joined from pieces no longer has seams for that keystroke's
    /// reparse to mark changed (which made its relint one of the whole file).
    fn warm_up(&self, uri: &Uri) {
        let Some(cold) = self.state().documents.get_mut(uri).and_then(|d| d.cold_tree()) else { return };
        let (state, uri) = (self.state.clone(), uri.clone());
        tokio::spawn(async move {
            let version = cold.version;
            let Some(Some(tree)) = super::background::run(move || cold.warm()).await else { return };
            let replaced = lock(&state).documents.get_mut(&uri).and_then(|d| d.warmed(version, tree));
            // Freed here, off the lock.
            drop(replaced);
        });
    }

    /// Lint a notebook's cells after the debounce delay (none when it was just opened:
    /// `debounce`) and publish each cell's findings.
    pub(super) fn schedule_notebook(&self, notebook: Uri, debounce: bool) {
        self.schedule_target(Target::Notebook(notebook), debounce);
    }

    /// Lint `target` in the background, one lint at a time per target: a change that
    /// arrives while one runs only asks for another pass, which then lints the latest
    /// version, so a burst of changes to a large document costs one lint or two, not one
    /// per change. The first pass waits the debounce delay only when `debounce`; the
    /// passes changes ask for always do.
    fn schedule_target(&self, target: Target, mut debounce: bool) {
        {
            let mut state = self.state();
            if let Some(again) = state.linting.get_mut(&target) {
                *again = true;
                return;
            }
            state.linting.insert(target.clone(), false);
        }
        let client = self.client.clone();
        let state = self.state.clone();
        tokio::spawn(async move {
            loop {
                let delay = lock(&state).settings.debounce;
                if debounce && !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                debounce = true;
                let version = lock(&state).version_of(&target);
                let linted = match version {
                    Some(version) => lint(&client, &state, &target, Some(version)).await,
                    None => None,
                };
                // Notebook cells are pushed even to a client that pulls: clients pull for
                // the documents their selector names, and cells are synced by the notebook's.
                let push = matches!(target, Target::Notebook(_)) || !lock(&state).pull_diagnostics;
                for (uri, version, diagnostics) in linted.into_iter().flatten().filter(|_| push) {
                    client.publish_diagnostics(uri, diagnostics, Some(version)).await;
                }
                // The project index takes the text now that its findings are out: indexing
                // never delays them, and it reuses the tree the lint parsed.
                let backend = Backend { client: client.clone(), state: state.clone() };
                match &target {
                    Target::File(uri) => {
                        backend.warm_up(uri);
                        backend.reindex_open(uri)
                    }
                    Target::Notebook(uri) => backend.reindex_notebook(uri),
                }
                let mut state = lock(&state);
                if state.linting.get(&target) == Some(&true) {
                    state.linting.insert(target.clone(), false);
                } else {
                    state.linting.remove(&target);
                    return;
                }
            }
        });
    }

    /// `textDocument/diagnostic`: the document's findings now.
    pub(super) async fn pull_diagnostics(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        let uri = params.text_document.uri;
        let target = self.state().target_of(&uri);
        let linted = lint(&self.client, &self.state, &target, None).await;
        let items = linted.into_iter().flatten().find(|(member, _, _)| *member == uri).map(|(_, _, found)| found);
        Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
            RelatedFullDocumentDiagnosticReport {
                related_documents: None,
                full_document_diagnostic_report: FullDocumentDiagnosticReport {
                    result_id: None,
                    items: items.unwrap_or_default(),
                },
            },
        )))
    }
}
