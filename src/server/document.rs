//! An open document: its text, version and syntax tree. Each change edits the stored
//! tree (`Tree::edit`) at once; the reparse waits until the tree is asked for, so a
//! burst of changes to a large document costs one incremental reparse, not one each.

use super::incremental::{self, EditRecord};
use super::position::{Encoding, to_offset};
use crate::engine::facts::FileWideFacts;
use crate::engine::reparse;
use crate::source::LineIndex;
use std::ops::Range;
use std::sync::Arc;
use tower_lsp_server::ls_types::TextDocumentContentChangeEvent;
use tree_sitter::{InputEdit, Point, Tree};

pub struct Document {
    pub text: String,
    pub version: i32,
    /// The syntax tree: of `text` once `reparsed`, before that of `parsed_text` with
    /// the changes since marked in it.
    tree: Option<Tree>,
    pub index: LineIndex,
    /// Changes applied since the findings last stored for this document, each reparsed.
    pub edits: Vec<EditRecord>,
    /// What the findings last stored for this document read outside their own
    /// statements, when they are of the current text's tree or of one the `edits` lead
    /// from (`None`: the next lint is of the whole file).
    pub linted: Option<incremental::FileLayout>,
    /// The whole-file answers the lints of the stored findings drew (each whole lint
    /// starts a new store; partial relints reuse it).
    pub file_wide: Arc<FileWideFacts>,
    /// Changes not yet reparsed, and the text the tree was last parsed from (kept only
    /// while some wait).
    pending: Vec<PendingEdit>,
    parsed_text: Option<String>,
}

/// A change applied to the text and marked in the tree, waiting for the reparse.
struct PendingEdit {
    start: usize,
    old_end: usize,
    new_end: usize,
    /// The edit's own text says it may affect findings outside its statement.
    risky: bool,
    /// It typed or deleted a quote or `#`: code may have become a string or comment.
    quotes_or_comment: bool,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let tree = crate::engine::parse(&text);
        let index = LineIndex::new(&text);
        Document {
            text,
            version,
            tree,
            index,
            edits: Vec::new(),
            linted: None,
            file_wide: Arc::default(),
            pending: Vec::new(),
            parsed_text: None,
        }
    }

    /// The syntax tree of the current text, reparsed incrementally if changes wait; the
    /// changes become edit records covering every place whose syntax they changed.
    pub fn tree(&mut self) -> Option<&Tree> {
        if !self.pending.is_empty() {
            self.reparse();
        }
        self.tree.as_ref()
    }

    /// The syntax tree of the current text if no change waits for a reparse.
    pub fn reparsed_tree(&self) -> Option<&Tree> {
        self.tree.as_ref().filter(|_| self.pending.is_empty())
    }

    fn reparse(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let parsed_text = self.parsed_text.take().unwrap_or_default();
        let records: Vec<EditRecord> = pending
            .iter()
            .map(|e| EditRecord {
                version: self.version,
                start: e.start,
                old_end: e.old_end,
                new_end: e.new_end,
                risky: e.risky,
                reaches_module_code: false,
            })
            .collect();
        let Some((span, delta)) = incremental::dirty_span(&records) else { return };
        let reparsed = reparse(&self.text, self.tree.as_ref());
        // The record covers every place whose syntax the changes altered, as if those
        // places had been retyped too.
        let (mut from, mut to) = (span.start, span.end);
        if let (Some(old), Some(new)) = (&self.tree, &reparsed) {
            for changed in old.changed_ranges(new) {
                from = from.min(changed.start_byte);
                to = to.max(changed.end_byte.min(self.text.len()));
            }
        }
        let old_region: Range<usize> = from..(to as isize - delta) as usize;
        let risky = reparsed.is_none()
            || pending.iter().any(|e| e.risky)
            || old_region.end > parsed_text.len()
            || incremental::changes_words_of_other_statements(
                &parsed_text,
                old_region.clone(),
                &self.text,
                from..to,
                pending.iter().any(|e| e.quotes_or_comment),
            );
        let reaches_module_code = old_region.end > parsed_text.len()
            || incremental::reaches_module_code(&parsed_text, old_region.clone(), &self.text, from..to);
        self.edits.push(EditRecord {
            version: self.version,
            start: from,
            old_end: old_region.end,
            new_end: to,
            risky,
            reaches_module_code,
        });
        // Error recovery reusing the old tree can read broken code otherwise than a fresh
        // parse of the same text does, and findings must not depend on the edits that led
        // to a text: a tree with errors is parsed again from scratch. A partial relint then
        // checks that every statement outside what it relints is unchanged and parses
        // (`incremental::FileLayout`).
        self.tree = match reparsed {
            Some(tree) if tree.root_node().has_error() => crate::engine::parse(&self.text),
            reparsed => reparsed,
        };
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
            let whole = EditRecord {
                version,
                start: 0,
                old_end: old_len,
                new_end: self.text.len(),
                risky: true,
                reaches_module_code: true,
            };
            self.edits.push(whole);
            return Ok(());
        };
        let start = to_offset(&self.text, &self.index, range.start, encoding)?;
        let end = to_offset(&self.text, &self.index, range.end, encoding)?;
        if start > end {
            return Err(format!("edit range ends before it starts ({start} > {end})"));
        }
        if self.pending.is_empty() {
            self.parsed_text = Some(self.text.clone());
        }
        let start_position = point(&self.index, start);
        let old_end_position = point(&self.index, end);
        let removed = &self.text[start..end];
        let quotes_or_comment = [removed, &change.text].iter().any(|t| t.contains(['"', '\'', '#']));
        let quote_before = quotes_or_comment.then(|| crate::engine::facts::preferred_quote(&self.text));
        self.text.replace_range(start..end, &change.text);
        let new_end = start + change.text.len();
        self.index.edit(&self.text, start, end, new_end);
        // Fixes elsewhere write strings in the file's preferred quote.
        let risky = quote_before.is_some_and(|quote| quote != crate::engine::facts::preferred_quote(&self.text));
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
        self.pending.push(PendingEdit { start, old_end: end, new_end, risky, quotes_or_comment });
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
        let mut fresh = Document::new(document.text.clone(), 1);
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh.tree().unwrap().root_node().to_sexp());
        assert!(document.apply(&change(9, 0, 1, "x"), Encoding::Utf16, 4).is_err());
        assert_eq!(document.text, fresh.text, "a refused edit changes nothing");
    }
}
