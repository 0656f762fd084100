//! Notebooks in the editor (`notebookDocument/*`): the client sends each cell as a text
//! document; the server keeps them in the notebook's order, lints the Python cells
//! joined (as `oomlint check` lints an `.ipynb`), and publishes each cell's findings in
//! that cell's own coordinates, so hovers and quick fixes work per cell as for a file.
//! A fix whose edits reach into another cell is not offered in the editor.

use crate::diagnostic::{Diagnostic, TextRange};
use std::collections::HashMap;
use tower_lsp_server::ls_types::{
    DidChangeNotebookDocumentParams, NotebookCell, NotebookCellKind, TextDocumentItem, Uri,
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

/// The findings of the joined cells, split by cell into each cell's coordinates.
pub fn split_by_cell(
    found: Vec<Diagnostic>,
    starts: &[Option<usize>],
    lengths: &[usize],
) -> HashMap<usize, Vec<Diagnostic>> {
    let mut by_cell: HashMap<usize, Vec<Diagnostic>> = HashMap::new();
    for mut diagnostic in found {
        let cell = starts.iter().enumerate().find_map(|(at, start)| {
            let start = (*start)?;
            (start <= diagnostic.range.start && diagnostic.range.end <= start + lengths[at]).then_some((at, start))
        });
        let Some((at, start)) = cell else { continue };
        let inside = |range: &TextRange| start <= range.start && range.end <= start + lengths[at];
        let shift = |range: &mut TextRange| {
            range.start -= start;
            range.end -= start;
        };
        shift(&mut diagnostic.range);
        match &mut diagnostic.fix {
            Some(fix) if fix.edits.iter().all(|e| inside(&e.range)) => {
                fix.edits.iter_mut().for_each(|e| shift(&mut e.range))
            }
            _ => diagnostic.fix = None,
        }
        by_cell.entry(at).or_default().push(diagnostic);
    }
    by_cell
}
