//! `textDocument/codeAction`: each finding's quick fix (its edits ride in the
//! diagnostic's `data`), "ignore on this line", and `source.fixAll.oomlint`, which
//! applies every safe fix to a file, or to a notebook's cells together, as
//! `oomlint check --fix` fixes the file or the `.ipynb`.

use super::Backend;
use super::convert::FixData;
use super::diagnostics::Snapshot;
use super::document::Document;
use super::position::{Encoding, to_range};
use crate::fix::Applicability;
use crate::lint::{self, Contents};
use crate::source::LineIndex;
use std::collections::HashMap;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

pub const FIX_ALL: &str = "source.fixAll.oomlint";

impl Backend {
    pub(super) async fn on_code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let wants = |kind: &str| {
            params.context.only.as_ref().is_none_or(|only| only.iter().any(|k| kind.starts_with(k.as_str())))
        };
        let mut actions = Vec::new();
        if wants(CodeActionKind::QUICKFIX.as_str()) {
            let state = self.state();
            let Some(document) = state.documents.get(&uri) else { return Ok(None) };
            for diagnostic in params.context.diagnostics.iter().filter(|d| d.source.as_deref() == Some("oomlint")) {
                let data = diagnostic.data.clone().and_then(|d| serde_json::from_value::<FixData>(d).ok());
                if let Some(fix) = data {
                    actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: format!("oomlint: {}", fix.title),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        edit: Some(workspace_edit(HashMap::from([(uri.clone(), fix.edits)]))),
                        is_preferred: Some(fix.safe),
                        ..CodeAction::default()
                    }));
                }
                if let Some(NumberOrString::String(code)) = &diagnostic.code {
                    let line = diagnostic.range.start.line as usize;
                    if let Some(edit) = ignore_edit(document, line, code, state.encoding()) {
                        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                            title: format!("oomlint: Ignore {code} on this line"),
                            kind: Some(CodeActionKind::QUICKFIX),
                            diagnostics: Some(vec![diagnostic.clone()]),
                            edit: Some(workspace_edit(HashMap::from([(uri.clone(), vec![edit])]))),
                            ..CodeAction::default()
                        }));
                    }
                }
            }
        }
        let wants_fix_all =
            params.context.only.as_ref().is_some_and(|only| only.iter().any(|k| FIX_ALL.starts_with(k.as_str())));
        if wants_fix_all {
            actions.extend(self.fix_all(&uri));
        }
        Ok(Some(actions))
    }

    /// Every safe fix in what `uri` belongs to (the file, or every cell of its
    /// notebook), as one edit of each changed document's whole text.
    fn fix_all(&self, uri: &Uri) -> Option<CodeActionOrCommand> {
        let mut state = self.state();
        let target = state.target_of(uri);
        let encoding = state.encoding();
        let (snapshot, _) = Snapshot::take(&mut state, &target)?;
        let fixed = lint::fix(&snapshot.source, &snapshot.path, &snapshot.settings?, Applicability::Safe).ok()?;
        if fixed.result.applied == 0 {
            return None;
        }
        let replaced: Vec<(usize, String)> = match fixed.contents {
            Contents::File(text) => vec![(0, text)],
            // Cells are numbered from one, in the members' order.
            Contents::Cells(cells) => cells.into_iter().map(|(number, text)| (number - 1, text)).collect(),
        };
        let mut changes = HashMap::new();
        for (at, new_text) in replaced {
            let (member, _, old_text) = snapshot.members.get(at)?;
            let whole = to_range(old_text, &LineIndex::new(old_text), 0, old_text.len(), encoding);
            changes.insert(member.clone(), vec![TextEdit { range: whole, new_text }]);
        }
        Some(CodeActionOrCommand::CodeAction(CodeAction {
            title: "oomlint: Fix all safe fixes".to_string(),
            kind: Some(CodeActionKind::new(FIX_ALL)),
            edit: Some(workspace_edit(changes)),
            ..CodeAction::default()
        }))
    }
}

fn workspace_edit(changes: HashMap<Uri, Vec<TextEdit>>) -> WorkspaceEdit {
    WorkspaceEdit { changes: Some(changes), ..WorkspaceEdit::default() }
}

/// `  # oomlint: ignore[CODE]` at the end of the line, or the code added to the line's
/// existing `# oomlint: ignore[...]`.
fn ignore_edit(document: &Document, line: usize, code: &str, encoding: Encoding) -> Option<TextEdit> {
    if line >= document.index.line_count() {
        return None;
    }
    let text = document.index.line_text(&document.text, line);
    let start = document.index.line_start(line);
    let (at, insert) = match text.find("# oomlint: ignore[").and_then(|i| text[i..].find(']').map(|j| i + j)) {
        Some(close) => (start + close, format!(", {code}")),
        None => (start + text.len(), format!("  # oomlint: ignore[{code}]")),
    };
    Some(TextEdit { range: to_range(&document.text, &document.index, at, at, encoding), new_text: insert })
}
