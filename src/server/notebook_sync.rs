//! Notebooks in the editor (`notebookDocument/didOpen`, `didChange`, `didClose`): the
//! client sends each cell as a text document; the server keeps them in the notebook's
//! order, lints the Python cells joined (as `oomlint check` lints an `.ipynb`), and
//! publishes each cell's findings in that cell's own coordinates, so hovers and quick
//! fixes work per cell as for a file. A quick fix whose edits reach into another cell is
//! not offered in the editor; fix-all fixes every cell, as for a file.

use super::Backend;
use tower_lsp_server::ls_types::{
    DidChangeNotebookDocumentParams, DidCloseNotebookDocumentParams, DidOpenNotebookDocumentParams, MessageType,
    NotebookCell, NotebookCellKind, TextDocumentItem, Uri,
};

/// One open notebook: its cells in order.
pub struct OpenNotebook {
    pub version: i32,
    pub cells: Vec<(Uri, NotebookCellKind)>,
}

impl OpenNotebook {
    pub fn new(version: i32, cells: &[NotebookCell]) -> OpenNotebook {
        OpenNotebook { version, cells: cells.iter().map(|c| (c.document.clone(), c.kind.clone())).collect() }
    }

    pub fn code_cells(&self) -> impl Iterator<Item = &Uri> {
        self.cells.iter().filter(|(_, kind)| *kind == NotebookCellKind::CODE).map(|(uri, _)| uri)
    }

    /// Apply a structure change (cells inserted, removed or moved); returns the text
    /// documents it opens and closes.
    pub fn apply_structure(&mut self, params: &DidChangeNotebookDocumentParams) -> (Vec<TextDocumentItem>, Vec<Uri>) {
        self.version = params.notebook_document.version;
        let Some(structure) = params.change.cells.as_ref().and_then(|c| c.structure.as_ref()) else {
            return (Vec::new(), Vec::new());
        };
        let array = &structure.array;
        let start = (array.start as usize).min(self.cells.len());
        let end = (start + array.delete_count as usize).min(self.cells.len());
        let inserted = array.cells.iter().flatten().map(|c| (c.document.clone(), c.kind.clone()));
        self.cells.splice(start..end, inserted);
        let opened = structure.did_open.clone().unwrap_or_default();
        let closed = structure.did_close.iter().flatten().map(|d| d.uri.clone()).collect();
        (opened, closed)
    }
}

impl Backend {
    pub(super) async fn on_notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        let notebook = params.notebook_document;
        {
            let mut state = self.state();
            for cell in params.cell_text_documents {
                state.open_cell(&notebook.uri, cell);
            }
            state.notebooks.insert(notebook.uri.clone(), OpenNotebook::new(notebook.version, &notebook.cells));
        }
        self.schedule_notebook(notebook.uri, false);
    }

    pub(super) async fn on_notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        let uri = params.notebook_document.uri.clone();
        let mut problems = Vec::new();
        let closed = 'apply: {
            let mut state = self.state();
            let encoding = state.encoding();
            let Some(open) = state.notebooks.get_mut(&uri) else {
                problems.push(format!("change for a notebook that is not open: {}", uri.as_str()));
                break 'apply None;
            };
            let (opened, closed) = open.apply_structure(&params);
            for cell in opened {
                state.open_cell(&uri, cell);
            }
            for cell in &closed {
                state.close_cell(cell);
            }
            let contents = params.change.cells.as_ref().and_then(|c| c.text_content.as_ref());
            for content in contents.into_iter().flatten() {
                let Some(document) = state.documents.get_mut(&content.document.uri) else { continue };
                if let Err(e) = document.apply_all(&content.changes, encoding, content.document.version) {
                    problems.push(format!("edit refused for {}: {e}", content.document.uri.as_str()));
                }
            }
            Some(closed)
        };
        for message in problems {
            self.client.log_message(MessageType::WARNING, message).await;
        }
        let Some(closed) = closed else { return };
        for cell in closed {
            self.client.publish_diagnostics(cell, Vec::new(), None).await;
        }
        self.schedule_notebook(uri, true);
    }

    pub(super) async fn on_notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        let cells = {
            let mut state = self.state();
            let open = state.notebooks.remove(&params.notebook_document.uri);
            let mut cells: Vec<Uri> = params.cell_text_documents.into_iter().map(|d| d.uri).collect();
            cells.extend(open.into_iter().flat_map(|o| o.cells.into_iter().map(|(uri, _)| uri)));
            cells.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            cells.dedup();
            for cell in &cells {
                state.close_cell(cell);
            }
            cells
        };
        for cell in cells {
            self.client.publish_diagnostics(cell, Vec::new(), None).await;
        }
        // Closed, the notebook on disk is the project's again.
        if let Some(path) = params.notebook_document.uri.to_file_path() {
            self.reindex(path.into_owned());
        }
    }
}
