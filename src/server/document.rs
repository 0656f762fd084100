//! An open document: its text, version and syntax tree. Each change edits the stored
//! tree (`Tree::edit`) at once; the reparse waits until the tree is asked for, so a
//! burst of changes to a large document costs one incremental reparse, not one each.

use super::incremental::{self, EditRecord};
use super::position::{Encoding, to_offset};
use crate::engine::facts::FileWideFacts;
use crate::engine::{reparse, syntax};
use crate::source::LineIndex;
use std::ops::Range;
use std::sync::Arc;
use tower_lsp_server::ls_types::TextDocumentContentChangeEvent;
use tree_sitter::{InputEdit, Tree};

pub struct Document {
    pub text: String,
    pub version: i32,
    /// The syntax tree: of `text` once `reparsed`, before that of `parsed_text` with
    /// the changes since marked in it.
    tree: Option<Tree>,
    /// While changes wait: the tree of `parsed_text` with the changes marked as the
    /// parser is told of them (`shared_run`); `tree` has them marked as typed, which
    /// tells what the reparse changed.
    told: Option<Tree>,
    /// The brackets the tree was parsed with blanked (`syntax::unclosed_brackets`), in
    /// the offsets of the text it was parsed from.
    blanked: Vec<usize>,
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
    parsed_text: Option<Arc<str>>,
    /// Where the tree was joined from pieces parsed apart (`engine::pieces`), until its
    /// first reparse, which is told they changed.
    seams: Vec<usize>,
    /// The bytes around the seams told changed, in the text the tree was parsed from,
    /// until that reparse: what it then finds changed there is only tokens lexed again,
    /// not code a relint must cover (it would have relinted from the seam to the edit).
    seam_regions: Vec<Range<usize>>,
    /// The tree is fresh from a parse of the text (whole or in pieces) and was never
    /// reparsed. The first reparse of such a tree takes 5–15 ms on a 5,000-line script,
    /// whatever the edit, and the next ones under 1 ms: the server reparses it unchanged
    /// in the background once the document's findings are out (`cold_tree`), so that the
    /// first keystroke does not pay it.
    fresh: bool,
    /// The current text, shared by the lint and the project index that read this
    /// version: made the first time one asks (`shared_text`), so that neither copies a
    /// large document per version, and kept as the text parsed last by the next change.
    shared: Option<Arc<str>>,
}

/// A change applied to the text and marked in the tree, waiting for the reparse.
struct PendingEdit {
    start: usize,
    old_end: usize,
    new_end: usize,
    /// The same change as the parser is told of it (start, old end, new end).
    told: (usize, usize, usize),
    /// The edit's own text says it may affect findings outside its statement.
    risky: bool,
    /// It typed or deleted a quote or `#`: code may have become a string or comment.
    quotes_or_comment: bool,
}

impl Document {
    pub fn new(text: String, version: i32) -> Document {
        let pieces = crate::engine::pieces::parse(&text);
        Document::parsed(text, version, pieces)
    }

    /// A document whose text may have been parsed in pieces already.
    pub(super) fn parsed(text: String, version: i32, pieces: Option<crate::engine::pieces::Joined>) -> Document {
        let (tree, blanked, seams) = match pieces {
            // The pieces parsed cleanly: no bracket is blanked.
            Some((tree, seams)) => (Some(tree), Vec::new(), seams),
            // The parse finds the brackets it blanks: the scan of the text is not made twice.
            None => match crate::engine::parse_finding_unclosed_brackets(&text) {
                Some((tree, blanked)) => (Some(tree), blanked, Vec::new()),
                None => (None, syntax::unclosed_brackets(&text), Vec::new()),
            },
        };
        let index = LineIndex::new(&text);
        Document {
            fresh: tree.is_some(),
            seams,
            seam_regions: Vec::new(),
            blanked,
            text,
            version,
            tree,
            told: None,
            index,
            edits: Vec::new(),
            linted: None,
            file_wide: Arc::default(),
            pending: Vec::new(),
            parsed_text: None,
            shared: None,
        }
    }

    /// The current text, shared: copied once per version, whoever asks.
    pub fn shared_text(&mut self) -> Arc<str> {
        self.shared.get_or_insert_with(|| Arc::from(self.text.as_str())).clone()
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
        let parsed_text = self.parsed_text.take().unwrap_or_else(|| Arc::from(""));
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
        // The brackets blanked before and now differ where a bracket was closed, or left
        // open: the trees learn of those bytes as changed too.
        let blanked = syntax::unclosed_brackets(&self.text);
        let mut told = self.told.take();
        let typed_edits: Vec<(usize, usize, usize)> = pending.iter().map(|e| (e.start, e.old_end, e.new_end)).collect();
        let told_edits = pending.iter().map(|e| e.told);
        // Where the seams are in the current text (gone where a change overlaps one).
        let seam_regions: Vec<Range<usize>> = std::mem::take(&mut self.seam_regions)
            .into_iter()
            .filter_map(|region| match moved(&[region.start, region.end], &typed_edits)[..] {
                [start, end] => Some(start..end),
                _ => None,
            })
            .collect();
        for (tree, edits) in [(&mut self.tree, typed_edits), (&mut told, told_edits.collect())] {
            let before = moved(&self.blanked, &edits);
            for &at in
                before.iter().filter(|at| !blanked.contains(at)).chain(blanked.iter().filter(|at| !before.contains(at)))
            {
                if let Some(tree) = tree {
                    tree.edit(&InputEdit {
                        start_byte: at,
                        old_end_byte: at + 1,
                        new_end_byte: at + 1,
                        start_position: self.index.point(at),
                        old_end_position: self.index.point(at + 1),
                        new_end_position: self.index.point(at + 1),
                    });
                }
            }
        }
        let reparsed = reparse(&syntax::blanked(&self.text, &blanked), told.as_ref().or(self.tree.as_ref()));
        self.blanked = blanked;
        // The record covers every place whose syntax the changes altered, as if those
        // places had been retyped too.
        let (mut from, mut to) = (span.start, span.end);
        if let (Some(old), Some(new)) = (&self.tree, &reparsed) {
            for changed in old.changed_ranges(new) {
                if seam_regions.iter().any(|seam| seam.start <= changed.start_byte && changed.end_byte <= seam.end) {
                    continue;
                }
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
        self.fresh = false;
    }

    /// The tree to reparse unchanged (`ColdTree::warm`), when it is fresh from a parse of
    /// the current text, no change waits, and it parsed cleanly with nothing blanked.
    pub fn cold_tree(&mut self) -> Option<ColdTree> {
        let clean = self.fresh && self.pending.is_empty() && self.blanked.is_empty();
        let tree = self.tree.clone().filter(|t| clean && !t.root_node().has_error())?;
        Some(ColdTree { version: self.version, tree, text: self.shared_text(), seams: self.seam_edits() })
    }

    /// The edits that mark the tree's seams changed (`pieces::seam_edit`), in order.
    fn seam_edits(&self) -> Vec<InputEdit> {
        self.seams.iter().map(|&seam| crate::engine::pieces::seam_edit(&self.text, &self.index, seam)).collect()
    }

    /// Take the tree `ColdTree::warm` gave for `version`, if the document is still at that
    /// version with its fresh tree. Returns the tree it replaces, to be freed off the lock
    /// (a 5,000-line tree takes milliseconds to free).
    pub fn warmed(&mut self, version: i32, tree: Tree) -> Option<Tree> {
        let current = self.version == version && self.pending.is_empty() && self.fresh && self.tree.is_some();
        if !current || tree.root_node().has_error() {
            return None;
        }
        self.seams.clear();
        self.fresh = false;
        self.tree.replace(tree)
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
        let shared = self.shared.take();
        let seams = self.seam_edits();
        self.seams.clear();
        if let Some(tree) = self.tree.as_mut() {
            for edit in seams {
                self.seam_regions.push(edit.start_byte..edit.old_end_byte);
                tree.edit(&edit);
            }
        }
        if self.pending.is_empty() {
            self.parsed_text = Some(shared.unwrap_or_else(|| Arc::from(self.text.as_str())));
            self.told = self.tree.clone();
        }
        // The parser is told of an insertion or a deletion at the rightmost place that gives
        // the same text (`shared_run`): a deletion's is found in the text before it.
        let deletion_slide = if change.text.is_empty() { shared_run(&self.text, start, end) } else { 0 };
        let start_position = self.index.point(start);
        let old_end_position = self.index.point(end);
        let slid_deletion = (self.index.point(start + deletion_slide), self.index.point(end + deletion_slide));
        let removed = &self.text[start..end];
        let quotes_or_comment = [removed, &change.text].iter().any(|t| t.contains(['"', '\'', '#']));
        let quote_before = quotes_or_comment.then(|| crate::engine::facts::preferred_quote(&self.text));
        self.text.replace_range(start..end, &change.text);
        let new_end = start + change.text.len();
        self.index.edit(&self.text, start, end, new_end);
        // Fixes elsewhere write strings in the file's preferred quote.
        let risky = quote_before.is_some_and(|quote| quote != crate::engine::facts::preferred_quote(&self.text));
        let typed = InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position: self.index.point(new_end),
        };
        let told = if start == end {
            let slide = shared_run(&self.text, start, new_end);
            let at = self.index.point(start + slide);
            InputEdit {
                start_byte: start + slide,
                old_end_byte: start + slide,
                new_end_byte: new_end + slide,
                start_position: at,
                old_end_position: at,
                new_end_position: self.index.point(new_end + slide),
            }
        } else if change.text.is_empty() {
            let (at, old_end_position) = slid_deletion;
            InputEdit {
                start_byte: start + deletion_slide,
                old_end_byte: end + deletion_slide,
                new_end_byte: start + deletion_slide,
                start_position: at,
                old_end_position,
                new_end_position: at,
            }
        } else {
            typed
        };
        if let Some(tree) = &mut self.told {
            tree.edit(&told);
        }
        if let Some(tree) = &mut self.tree {
            tree.edit(&typed);
        }
        let told = (told.start_byte, told.old_end_byte, told.new_end_byte);
        self.pending.push(PendingEdit { start, old_end: end, new_end, told, risky, quotes_or_comment });
        Ok(())
    }
}

/// Where `offsets` of a text are after `edits` (start, old end, new end) applied in
/// order; an offset an edit replaced is gone.
fn moved(offsets: &[usize], edits: &[(usize, usize, usize)]) -> Vec<usize> {
    offsets
        .iter()
        .filter_map(|&at| {
            edits.iter().try_fold(at, |at, &(start, old_end, new_end)| match at {
                _ if at < start => Some(at),
                _ if at >= old_end => Some(at + new_end - old_end),
                _ => None,
            })
        })
        .collect()
}

/// How far the text at `from` repeats the text at `to` (`from < to`), in whole
/// characters: an insertion of `from..to`, or the deletion of it, gives the same text
/// when moved that far to the right. The parser is told of an insertion or deletion
/// at the rightmost such place. tree-sitter reuses a node of the old tree only where
/// the indentation scanner's state matches, and it compares that state before it has
/// re-lexed the zero-width newline and dedent tokens ending the statement before an
/// edit, which share their offset with the statement after it: an edit at the start
/// of a top-level statement (a function pasted before `def`, or removed) had it
/// re-lex the rest of the file, 20 ms for 5,000 lines instead of half a millisecond.
/// Past the text the pasted function shares with the one after it (`def `), the
/// edit leaves those tokens alone.
fn shared_run(text: &str, from: usize, to: usize) -> usize {
    if from == to {
        return 0;
    }
    text[from..].chars().zip(text[to..].chars()).take_while(|(a, b)| a == b).map(|(a, _)| a.len_utf8()).sum()
}

/// A document's fresh tree and what a reparse of it with no change needs (see
/// `Document::fresh`).
pub struct ColdTree {
    pub version: i32,
    tree: Tree,
    text: Arc<str>,
    /// The edits that mark the seams of a tree joined from pieces changed.
    seams: Vec<InputEdit>,
}

impl ColdTree {
    /// The same tree, reparsed once (at its seams, for a joined tree: then it is the tree
    /// a whole parse gives).
    pub fn warm(mut self) -> Option<Tree> {
        for seam in &self.seams {
            self.tree.edit(seam);
        }
        reparse(&self.text, Some(&self.tree))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::{Position, Range};

    fn change(line: u32, from: u32, to: u32, text: &str) -> TextDocumentContentChangeEvent {
        let range = Range { start: Position { line, character: from }, end: Position { line, character: to } };
        TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: text.to_string() }
    }

    /// The lint and the index of one version share one copy of its text, and the next
    /// change keeps that copy as the text parsed last instead of copying it again.
    #[test]
    fn the_text_is_shared_once_per_version() {
        let mut document = Document::new("x = 1\n".to_string(), 1);
        let first = document.shared_text();
        assert!(Arc::ptr_eq(&first, &document.shared_text()));
        document.apply(&change(0, 4, 5, "2"), Encoding::Utf16, 2).unwrap();
        assert!(document.parsed_text.as_ref().is_some_and(|parsed| Arc::ptr_eq(parsed, &first)));
        let second = document.shared_text();
        assert_eq!((&*first, &*second), ("x = 1\n", "x = 2\n"));
        assert!(document.apply(&change(9, 0, 1, "x"), Encoding::Utf16, 3).is_err());
        assert!(Arc::ptr_eq(&second, &document.shared_text()), "a refused edit changes nothing");
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

    #[test]
    fn a_bracket_typed_open_and_closed_before_a_definition_reparses_to_the_fresh_tree() {
        let text = "def f(loss):\n    y = loss.item\n    return y\n\n\n@torch.no_grad()\ndef g():\n    pass\n";
        let mut document = Document::new(text.to_string(), 1);
        let fresh = |text: &str| crate::engine::parse(text).unwrap().root_node().to_sexp();
        document.apply(&change(1, 17, 17, "("), Encoding::Utf16, 2).unwrap();
        // The open bracket is read as a space: the tree has no error, and is reparsed.
        let tree = document.tree().unwrap().clone();
        assert!(!tree.root_node().has_error());
        assert_eq!(tree.root_node().to_sexp(), fresh(&document.text));
        assert_eq!(document.blanked, [text.find("item").unwrap() + 4]);
        document.apply(&change(1, 18, 18, "x"), Encoding::Utf16, 3).unwrap();
        document.apply(&change(1, 19, 19, ")"), Encoding::Utf16, 4).unwrap();
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text));
        assert!(document.blanked.is_empty());
        document.apply(&change(1, 17, 20, ""), Encoding::Utf16, 5).unwrap();
        assert_eq!(document.text, text);
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(text));
    }

    /// The first edit of a document joined from pieces, far from the seam, is recorded
    /// as its own bytes: the seam its reparse is told of changed nothing a relint must
    /// cover (`edit_sequences` checks the findings of such relints).
    #[test]
    fn the_seams_reparsed_with_the_first_edit_do_not_widen_its_record() {
        let function = |i: usize| format!("def f{i}(model, x):\n    y = model(x)\n    return y.sum()\n\n\n");
        let text: String = (0..40).map(function).collect();
        let fresh = |text: &str| crate::engine::parse(text).unwrap().root_node().to_sexp();
        let mut document = Document::parsed(text.clone(), 1, crate::engine::pieces::parse_in(&text, 2));
        let seam = document.seams[0];
        // `    y = model(x)` of `f2`, typed into.
        document.apply(&change(11, 5, 5, "z"), Encoding::Utf16, 2).unwrap();
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text));
        let record = document.edits.last().expect("recorded");
        assert!(record.new_end < seam / 2, "{}..{} reaches toward the seam at {seam}", record.start, record.new_end);
    }

    /// A fresh tree reparsed unchanged (`cold_tree`, `warm`, `warmed`) is the tree a
    /// whole parse gives, seams and all, and edits after it reparse as before; a warmed
    /// tree for a version the document has left behind is refused.
    #[test]
    fn a_fresh_tree_warmed_up_is_a_whole_parse_and_a_stale_one_is_refused() {
        let function = |i: usize| format!("def f{i}(model, x):\n    y = model(x)\n    return y.sum()\n\n\n");
        let text: String = (0..40).map(function).collect();
        let fresh = |text: &str| crate::engine::parse(text).unwrap().root_node().to_sexp();
        for pieces in [None, crate::engine::pieces::parse_in(&text, 2)] {
            let joined = pieces.is_some();
            let mut document = Document::parsed(text.clone(), 1, pieces);
            assert_eq!(document.seams.is_empty(), !joined);
            // The definition after the seam, else one in the middle.
            let line = document.seams.first().map_or(100, |&seam| document.text[..seam].lines().count() as u32 + 2);
            assert!(document.text.lines().nth(line as usize).is_some_and(|l| l.starts_with("def ")));
            let cold = document.cold_tree().expect("a fresh tree");
            let warm = cold.warm().expect("reparsed");
            assert!(document.warmed(1, warm).is_some(), "the tree it replaces is handed back");
            assert!(document.seams.is_empty() && document.cold_tree().is_none(), "warmed once");
            assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&text));
            // That definition indented into the function before it.
            document.apply(&change(line, 0, 0, "    "), Encoding::Utf16, 2).unwrap();
            assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text), "joined: {joined}");
        }
        // Typed into before the warm-up came back: the warmed tree is of an old text.
        let mut document = Document::parsed(text.clone(), 1, crate::engine::pieces::parse_in(&text, 2));
        let cold = document.cold_tree().expect("a fresh tree");
        document.apply(&change(2, 4, 4, "z"), Encoding::Utf16, 2).unwrap();
        assert!(document.warmed(cold.version, cold.warm().unwrap()).is_none());
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text));
        assert!(document.cold_tree().is_none(), "reparsed by the edit, the tree is no longer fresh");
    }

    /// A document opened large is parsed in pieces (`engine::pieces`), and its first
    /// edits, at a seam too, reparse to the tree a whole parse gives.
    #[test]
    fn a_document_parsed_in_pieces_reparses_its_edits_as_a_whole_parse() {
        let function = |i: usize| format!("def f{i}(model, x):\n    y = model(x)\n    return y.sum()\n\n\n");
        let text: String = (0..40).map(function).collect();
        let fresh = |text: &str| crate::engine::parse(text).unwrap().root_node().to_sexp();
        // Each function is five lines; the seam is before a definition near the middle.
        let first_piece_lines = |document: &Document| document.text[..document.seams[0]].lines().count() as u32;
        for edit in [change(0, 0, 0, "    "), change(0, 0, 0, "#"), change(0, 0, 3, "async def")] {
            let mut document = Document::parsed(text.clone(), 1, crate::engine::pieces::parse_in(&text, 2));
            assert_eq!(document.seams.len(), 1);
            let line = first_piece_lines(&document) + 2;
            let edit = TextDocumentContentChangeEvent {
                range: edit.range.map(|mut r| {
                    r.start.line = line;
                    r.end.line = line;
                    r
                }),
                ..edit
            };
            document.apply(&edit, Encoding::Utf16, 2).unwrap();
            assert!(document.seams.is_empty(), "the seams are marked once");
            assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text), "{edit:?}");
            document.apply(&change(line - 3, 4, 4, "z"), Encoding::Utf16, 3).unwrap();
            assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh(&document.text), "{edit:?}, then z");
        }
        // Opened, a large document is parsed in pieces when the pool has cores for them.
        let large: String = (0..2000).map(function).collect();
        let opened = Document::new(large.clone(), 1);
        assert_eq!(opened.seams.is_empty(), rayon::current_num_threads() < 2);
        assert_eq!(opened.tree.as_ref().unwrap().root_node().to_sexp(), fresh(&large));
    }

    #[test]
    fn an_edit_repeating_the_text_after_it_is_placed_past_that_text() {
        // `def g():\n    pass\n\n\n` inserted before `def f`: the first 4 bytes repeat.
        let pasted = "def g():\n    pass\n\n\n";
        let new = format!("a = 1\n\n\n{pasted}def f():\n    pass\n");
        assert_eq!(shared_run(&new, 8, 8 + pasted.len()), "def ".len());
        // Multi-byte characters are compared whole: `é` and `è` share their first byte.
        assert_eq!(shared_run("éaè", 0, 3), 0);
        assert_eq!(shared_run("éaéb", 0, 3), 2);
        assert_eq!(shared_run("abc", 1, 1), 0);
    }

    #[test]
    fn a_function_pasted_and_removed_at_top_level_is_reparsed_to_the_fresh_tree() {
        let function = |name: &str| format!("def {name}(model, x):\n    y = model(x)\n    return y.sum()\n\n\n");
        let text: String = (0..30).map(|i| function(&format!("f{i}"))).collect();
        let mut document = Document::new(text.clone(), 1);
        let line = 15 * 5;
        let pasted = function("pasted");
        document.apply(&change(line, 0, 0, &pasted), Encoding::Utf16, 2).unwrap();
        let at = text.find("def f15").unwrap();
        let fresh = crate::engine::parse(&document.text).unwrap();
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh.root_node().to_sexp());
        // What the reparse changed is the pasted function, not the one after it, which
        // the parser was told of as retyped from its name on.
        let record = document.edits.last().unwrap();
        assert_eq!((record.start, record.old_end, record.new_end), (at, at, at + pasted.len()));
        let end = Position { line: line + 5, character: 0 };
        let removal = TextDocumentContentChangeEvent {
            range: Some(Range { start: Position { line, character: 0 }, end }),
            range_length: None,
            text: String::new(),
        };
        document.apply(&removal, Encoding::Utf16, 3).unwrap();
        assert_eq!(document.text, text);
        let fresh = crate::engine::parse(&text).unwrap();
        assert_eq!(document.tree().unwrap().root_node().to_sexp(), fresh.root_node().to_sexp());
        let record = document.edits.last().unwrap();
        assert_eq!((record.start, record.old_end, record.new_end), (at, at + pasted.len(), at));
    }
}
