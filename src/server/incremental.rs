//! Relinting only what an edit touched. Most facts a rule uses are local to the
//! top-level `def` or `class` around a finding; the ones that cross statements (imports and
//! other module-level code, `def`/`class` headers and decorators, the names of functions
//! defined in the file whose call sites decide grad mode, `with` blocks and indentation)
//! are exactly what a "risky" edit touches, and any such edit relints the whole file.

use crate::diagnostic::{Diagnostic, TextRange};
use std::ops::Range;
use tree_sitter::Tree;

/// One applied change, in the coordinates of the text it was applied to.
#[derive(Debug, Clone)]
pub struct EditRecord {
    /// The document version the change belongs to.
    pub version: i32,
    pub start: usize,
    pub old_end: usize,
    pub new_end: usize,
    /// The change may affect findings outside its own statement.
    pub risky: bool,
}

/// Words whose appearance in or next to an edit may change facts beyond the statement.
const GLOBAL_WORDS: &[&str] = &[
    "def",
    "class",
    "import",
    "from",
    "global",
    "nonlocal",
    "with",
    "no_grad",
    "inference_mode",
    "set_grad_enabled",
    "enable_grad",
    "torch",
    "oomlint",
    "noqa",
];

/// Judge a change by the text it removes and inserts and the words around it.
pub fn is_risky(old_text: &str, start: usize, old_end: usize, new_text: &str, new_end: usize) -> bool {
    let removed = &old_text[start..old_end];
    let inserted = &new_text[start..new_end];
    if [removed, inserted].iter().any(|t| t.contains(['\n', '\r', ':', '@', '\\', '"', '\'', '(', ')', '[', ']'])) {
        return true;
    }
    // Indentation decides which block a statement is in.
    let line_start = new_text[..start].rfind('\n').map_or(0, |i| i + 1);
    if new_text[line_start..start].trim().is_empty() {
        return true;
    }
    let words = [word_around(old_text, start, old_end), word_around(new_text, start, new_end)];
    words.iter().any(|word| {
        !word.is_empty()
            && (GLOBAL_WORDS.contains(word)
                || [old_text, new_text].iter().any(|text| names_across_statements(text, word)))
    })
}

/// Whether `word` names something other statements refer to: a function or class
/// defined here, or an imported name (whose fixes look at every use).
fn names_across_statements(text: &str, word: &str) -> bool {
    text.contains(&format!("def {word}("))
        || text.contains(&format!("class {word}"))
        || text.lines().any(|line| {
            line.contains("import") && line.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == word)
        })
}

/// The identifier-like word covering `start..end` (extended to word boundaries).
fn word_around(text: &str, start: usize, end: usize) -> &str {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let from = text[..start].char_indices().rev().find(|(_, c)| !is_word(*c)).map_or(0, |(i, c)| i + c.len_utf8());
    let to = text[end..].find(|c: char| !is_word(c)).map_or(text.len(), |i| end + i);
    &text[from..to]
}

/// Where the edits since the last lint leave their mark: the span they cover in the
/// current text, and how much longer the text became.
pub fn dirty_span(edits: &[EditRecord]) -> Option<(Range<usize>, isize)> {
    let mut span: Option<Range<usize>> = None;
    let mut delta = 0isize;
    for edit in edits {
        let growth = edit.new_end as isize - edit.old_end as isize;
        let shift = |x: usize| {
            if x >= edit.old_end {
                (x as isize + growth) as usize
            } else if x > edit.start {
                edit.new_end
            } else {
                x
            }
        };
        span = Some(match span {
            None => edit.start..edit.new_end,
            Some(previous) => shift(previous.start).min(edit.start)..shift(previous.end).max(edit.new_end),
        });
        delta += growth;
    }
    span.map(|s| (s, delta))
}

/// The top-level `def` or `class` that contains the whole span, if one does.
pub fn enclosing_unit(tree: &Tree, span: &Range<usize>) -> Option<Range<usize>> {
    let root = tree.root_node();
    let mut cursor = root.walk();
    let unit = root.named_children(&mut cursor).find(|c| c.start_byte() <= span.start && span.end <= c.end_byte())?;
    matches!(unit.kind(), "function_definition" | "class_definition" | "decorated_definition")
        .then(|| unit.byte_range())
}

/// The stored findings outside the relinted statement (those after it moved by
/// `delta`), with the statement's fresh findings.
pub fn merge(previous: Vec<Diagnostic>, fresh: Vec<Diagnostic>, unit: &Range<usize>, delta: isize) -> Vec<Diagnostic> {
    let old_unit_end = (unit.end as isize - delta) as usize;
    let shift = |range: TextRange| {
        if range.start < old_unit_end {
            return range;
        }
        TextRange { start: (range.start as isize + delta) as usize, end: (range.end as isize + delta) as usize }
    };
    let mut merged: Vec<Diagnostic> = previous
        .into_iter()
        .filter(|d| d.range.end <= unit.start || d.range.start >= old_unit_end)
        .map(|mut d| {
            d.range = shift(d.range);
            d.fix = d.fix.map(|fix| fix.map_ranges(shift));
            d
        })
        .collect();
    merged.extend(fresh);
    merged.sort_by_key(|d| (d.range.start, d.code, d.range.end));
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_that_reach_beyond_their_statement_are_risky() {
        let old = "def evaluate(model):\n    total = 1\n";
        let risky =
            |new: &str, start: usize, old_end: usize, new_end: usize| is_risky(old, start, old_end, new, new_end);
        // Typing inside `total`: local.
        assert!(!risky("def evaluate(model):\n    totxal = 1\n", 28, 28, 29));
        // Renaming the function, typing in indentation, a new line, a colon: risky.
        assert!(risky("def evaluatex(model):\n    total = 1\n", 12, 12, 13));
        assert!(risky("def evaluate(model):\n     total = 1\n", 21, 21, 22));
        assert!(risky("def evaluate(model):\n    total = 1\n\n", 35, 35, 36));
        // A non-word character of several bytes before the edit.
        assert!(!is_risky("x = a—bc\n", 8, 8, "x = a—bzc\n", 9));
    }

    #[test]
    fn spans_of_several_edits_merge_in_current_coordinates() {
        let edits = [
            EditRecord { version: 2, start: 10, old_end: 10, new_end: 11, risky: false },
            EditRecord { version: 3, start: 30, old_end: 32, new_end: 30, risky: false },
        ];
        assert_eq!(dirty_span(&edits), Some((10..30, -1)));
    }
}
