//! An open document: its text, version and syntax tree. Each change edits the stored
//! tree (`Tree::edit`) and reparses incrementally from it.

use super::incremental::{self, EditRecord};
use super::position::{Encoding, to_offset};
use crate::engine::reparse;
use crate::source::LineIndex;
use tower_lsp_server::ls_types::TextDocumentContentChangeEvent;
use tree_sitter::{InputEdit, Point, Tree};

pub struct Document {
    pub text: String,
    pub version: i32,
    pub tree: Option<Tree>,
    pub index: LineIndex,
    /// Changes applied since the findings last stored for this document.
    pub edits: Vec<EditRecord>,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let tree = crate::engine::parse(&text);
        let index = LineIndex::new(&text);
        Document { text, version, tree, index, edits: Vec::new() }
    }

    /// Apply a client's changes made by `version` in order, stopping at the first one
    /// refused; the document is at `version` either way.
    pub fn apply_all(
        &mut self,
        changes: &[TextDocumentContentChangeEvent],
        encoding: Encoding,
        version: i32,
    ) -> Result<(), String> {
        let applied = changes.iter().try_for_each(|change| self.apply(change, encoding, version));
        self.version = version;
        applied
    }

    /// Apply one change made by `version`; an edit outside the document is refused and
    /// changes nothing.
    pub fn apply(
        &mut self,
        change: &TextDocumentContentChangeEvent,
        encoding: Encoding,
        version: i32,
    ) -> Result<(), String> {
        let Some(range) = change.range else {
            let old_len = self.text.len();
            *self = Document::new(change.text.clone(), self.version);
            let whole = EditRecord { version, start: 0, old_end: old_len, new_end: self.text.len(), risky: true };
            self.edits.push(whole);
            return Ok(());
        };
        let start = to_offset(&self.text, &self.index, range.start, encoding)?;
        let end = to_offset(&self.text, &self.index, range.end, encoding)?;
        if start > end {
            return Err(format!("edit range ends before it starts ({start} > {end})"));
        }
        let start_position = point(&self.index, start);
        let old_end_position = point(&self.index, end);
        let old_text = self.text.clone();
        self.text.replace_range(start..end, &change.text);
        self.index = LineIndex::new(&self.text);
        let new_end = start + change.text.len();
        let risky = incremental::is_risky(&old_text, start, end, &self.text, new_end);
        let edit = InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position: point(&self.index, new_end),
        };
        if let Some(tree) = &mut self.tree {
            tree.edit(&edit);
        }
        let reparsed = reparse(&self.text, self.tree.as_ref());
        // The record covers every place whose syntax the edit changed, as if those
        // places had been retyped too.
        let (mut from, mut to) = (start, new_end);
        if let (Some(old), Some(new)) = (&self.tree, &reparsed) {
            for changed in old.changed_ranges(new) {
                from = from.min(changed.start_byte);
                to = to.max(changed.end_byte.min(self.text.len()));
            }
        }
        let grown = to - new_end;
        let (old_end, risky) = (end + grown, risky || reparsed.is_none());
        self.edits.push(EditRecord { version, start: from, old_end, new_end: to, risky });
        self.tree = reparsed;
        Ok(())
    }
}

fn point(index: &LineIndex, offset: usize) -> Point {
    let row = index.line_of(offset);
    Point { row, column: offset - index.line_start(row) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::{Position, Range};

    fn change(line: u32, from: u32, to: u32, text: &str) -> TextDocumentContentChangeEvent {
        let range = Range { start: Position { line, character: from }, end: Position { line, character: to } };
        TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: text.to_string() }
    }

    #[test]
    fn incremental_edits_match_a_fresh_parse() {
        let mut document = Document::new("x = 'é'\nlosses.append(loss)\n".to_string(), 1);
        document.apply(&change(1, 14, 18, "loss.item()"), Encoding::Utf16, 2).unwrap();
        document.apply(&change(0, 5, 6, "ü😀"), Encoding::Utf16, 3).unwrap();
        assert_eq!(document.text, "x = 'ü😀'\nlosses.append(loss.item())\n");
        let fresh = Document::new(document.text.clone(), 1);
        assert_eq!(
            document.tree.as_ref().unwrap().root_node().to_sexp(),
            fresh.tree.as_ref().unwrap().root_node().to_sexp()
        );
        assert!(document.apply(&change(9, 0, 1, "x"), Encoding::Utf16, 4).is_err());
        assert_eq!(document.text, fresh.text, "a refused edit changes nothing");
    }
}
