//! `textDocument/hover`: what the rule of each finding under the cursor finds, this
//! finding, its measured cost and its fix; on a line a memory snapshot shows as heavy,
//! what it held.

use super::position::{to_offset, to_range};
use super::{Backend, convert, diagnostics};
use crate::diagnostic::Diagnostic;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

impl Backend {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let uri = params.text_document_position_params.text_document.uri;
        let position = params.text_document_position_params.position;
        let held = self.snapshot_hover(&uri, position.line);
        let (current, target) = {
            let state = self.state();
            let document = state.documents.get(&uri);
            let current = document.map(|d| state.results.get(&uri).is_some_and(|(v, _)| *v == d.version));
            (current, state.target_of(&uri))
        };
        match current {
            None => return Ok(None),
            Some(false) => {
                diagnostics::lint(&self.client, &self.state, &target, None).await;
            }
            Some(true) => {}
        }
        let state = self.state();
        let (Some(document), Some((_, found))) = (state.documents.get(&uri), state.results.get(&uri)) else {
            return Ok(None);
        };
        let encoding = state.encoding();
        let Ok(offset) = to_offset(&document.text, &document.index, position, encoding) else { return Ok(None) };
        let hits: Vec<&Diagnostic> =
            found.iter().filter(|d| d.range.start <= offset && offset <= d.range.end).collect();
        let mut parts: Vec<String> = hits.iter().map(|d| convert::hover_markdown(d)).collect();
        parts.extend(held);
        if parts.is_empty() {
            return Ok(None);
        }
        let range =
            hits.first().map(|d| to_range(&document.text, &document.index, d.range.start, d.range.end, encoding));
        let value = parts.join("\n\n---\n\n");
        Ok(Some(Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }), range }))
    }
}
