//! Relinting only what an edit touched. Most facts a rule uses are local to the
//! top-level `def` or `class` around a finding. What crosses statements is judged twice:
//!
//! - by the syntax tree: the edits and every place whose structure the reparse changed
//!   must lie inside the body of one top-level `def` or `class`, or cover whole top-level
//!   definitions (a pasted or deleted function); an unclosed bracket or a changed
//!   indentation that reshapes code further on reaches outside, and the file is relinted;
//! - by the words an edit removes or inserts: imports, grad-mode words, suppression
//!   comments and the other words whose facts rules gather over the whole file
//!   (`GLOBAL_WORDS`), and the names of functions, classes and imports that are used
//!   outside the edit (their call sites decide grad mode, their fixes look at every use).
//!
//! Such a "risky" edit relints the whole file.

use crate::diagnostic::{Diagnostic, TextRange};
use std::ops::Range;
use tree_sitter::{Node, Tree};

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

/// Words whose appearance in or next to an edit may change findings outside its
/// statement: imports and grad mode, suppression comments, and the words of facts some
/// rules gather over the whole file (frozen networks, checkpoints saved from the CPU).
const GLOBAL_WORDS: &[&str] = &[
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
    "NOQA",
    "requires_grad_",
    "requires_grad",
    "parameters",
    "save",
    "offload_to_cpu",
    "cpu",
];

/// Judge a change by the text it removes and inserts and the words around it.
pub fn is_risky(old_text: &str, start: usize, old_end: usize, new_text: &str, new_end: usize) -> bool {
    let removed = &old_text[start..old_end];
    let inserted = &new_text[start..new_end];
    // Fixes elsewhere write strings in the file's preferred quote.
    if [removed, inserted].iter().any(|t| t.contains(['"', '\'']))
        && crate::engine::facts::preferred_quote(old_text) != crate::engine::facts::preferred_quote(new_text)
    {
        return true;
    }
    let mut words = Vec::new();
    changed_words(old_text, start..old_end, inserted, &mut words);
    changed_words(new_text, start..new_end, removed, &mut words);
    words.sort_unstable();
    words.dedup();
    if words.is_empty() {
        return false;
    }
    if words.iter().any(|w| GLOBAL_WORDS.contains(w)) {
        return true;
    }
    [(old_text, old_end), (new_text, new_end)].iter().any(|&(text, end)| {
        let names = names_across_statements(text);
        words.iter().any(|w| names.contains(w) && used_outside(text, w, start..end))
    })
}

/// The words of `text` that replacing `region` with `other` changes: those inside it,
/// and those at its ends that the replacement joins to, cuts or extends.
fn changed_words<'t>(text: &'t str, region: Range<usize>, other: &str, words: &mut Vec<&'t str>) {
    let (start, end) = (region.start, region.end);
    words.extend(words_of(&text[region.clone()]));
    let word_before = |at: usize| text[..at].ends_with(is_word);
    let word_after = |at: usize| text[at..].starts_with(is_word);
    // Of the character that follows the region's start once replaced, and precedes its end.
    let joins_left = other.starts_with(is_word) || (other.is_empty() && word_after(end));
    let joins_right = other.ends_with(is_word) || (other.is_empty() && word_before(start));
    if word_before(start) && (word_after(start) || joins_left) {
        words.push(word_around(text, start, start));
    }
    if word_after(end) && (word_before(end) || joins_right) {
        words.push(word_around(text, end, end));
    }
}

/// The identifier-like words of `text`.
fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word(c)).filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The names other statements may refer to: functions and classes defined here (at any
/// depth: methods too) and the names imports bind.
fn names_across_statements(text: &str) -> std::collections::HashSet<&str> {
    let mut names = std::collections::HashSet::new();
    let mut in_parenthesized_import = false;
    for line in text.lines() {
        let code = line.split('#').next().unwrap_or("").trim();
        if in_parenthesized_import {
            in_parenthesized_import = !code.contains(')');
            names.extend(imported_names(code));
            continue;
        }
        let code = code.strip_prefix("async ").unwrap_or(code);
        if let Some(rest) = code.strip_prefix("def ").or_else(|| code.strip_prefix("class ")) {
            names.extend(words_of(rest).next());
        } else if let Some(rest) = code.strip_prefix("import ") {
            names.extend(imported_names(rest).map(|n| n.split('.').next().unwrap_or(n)));
        } else if code.starts_with("from ")
            && let Some((_, rest)) = code.split_once(" import ")
        {
            in_parenthesized_import = rest.contains('(') && !rest.contains(')');
            names.extend(imported_names(rest));
        }
    }
    names
}

/// The names a list of imported items binds (`a`, `b as c`, `(d,`).
fn imported_names(items: &str) -> impl Iterator<Item = &str> {
    items.split(',').filter_map(|item| {
        let item = item.trim_matches(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == '\\');
        let bound = item.rsplit_once(" as ").map_or(item, |(_, alias)| alias).trim();
        (!bound.is_empty()).then_some(bound)
    })
}

/// Whether `word` occurs as a whole word in `text` outside `edited`.
fn used_outside(text: &str, word: &str, edited: Range<usize>) -> bool {
    uses_outside(text, word, &edited).next().is_some()
}

/// The identifier-like word covering `start..end` (extended to word boundaries).
fn word_around(text: &str, start: usize, end: usize) -> &str {
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

/// What to relint for edits that cover `span` (in the current text, widened to every
/// place the reparse changed): `None` for the whole file. The edits must lie inside the
/// body of one top-level definition, or cover whole top-level definitions (a function
/// pasted or deleted); the range then also takes in the top-level statements that use a
/// name defined in it and the definitions it calls, and theirs in turn, since what a
/// function returns decides findings where it is used, and how it is called decides
/// findings inside it.
pub fn relinted_range(tree: &Tree, text: &str, span: &Range<usize>) -> Option<Range<usize>> {
    let root = tree.root_node();
    let mut cursor = root.walk();
    let units: Vec<Node> = root.named_children(&mut cursor).collect();
    let inside_body = units.iter().find(|unit| {
        let body = definition(**unit).and_then(|d| d.child_by_field_name("body"));
        body.is_some_and(|b| b.start_byte() <= span.start && span.end <= b.end_byte())
    });
    let mut range = match inside_body {
        Some(unit) => unit.byte_range(),
        None => {
            // Only whole definitions and comments, nothing cut in two.
            let touched = units.iter().filter(|u| u.start_byte() < span.end && span.start < u.end_byte());
            for unit in touched {
                let whole = span.start <= unit.start_byte() && unit.end_byte() <= span.end;
                if !whole || !(definition(*unit).is_some() || unit.kind() == "comment") {
                    return None;
                }
            }
            span.clone()
        }
    };
    loop {
        let mut grown = range.clone();
        for name in defined_names(&units, &range, text) {
            for at in uses_outside(text, name, &range) {
                let user = units.iter().find(|u| u.start_byte() <= at && at < u.end_byte())?;
                grown = grown.start.min(user.start_byte())..grown.end.max(user.end_byte());
            }
        }
        // The definitions the range calls: how a helper is called (once per step, under
        // `no_grad`) decides its own findings.
        for unit in units.iter().filter(|u| u.end_byte() <= range.start || range.end <= u.start_byte()) {
            let whole = unit.byte_range();
            if defined_names(&units, &whole, text).iter().any(|name| used_inside(text, name, &range)) {
                grown = grown.start.min(whole.start)..grown.end.max(whole.end);
            }
        }
        if grown == range {
            return Some(range);
        }
        if grown.start == 0 && grown.end >= text.len() {
            return None;
        }
        range = grown;
    }
}

/// The `def` or `class` a top-level statement is, through its decorators.
fn definition(unit: Node) -> Option<Node> {
    match unit.kind() {
        "function_definition" | "class_definition" => Some(unit),
        "decorated_definition" => unit.child_by_field_name("definition"),
        _ => None,
    }
}

/// The names the top-level definitions inside `range` give other code: each function's
/// and class's name, and a class's methods.
fn defined_names<'t>(units: &[Node], range: &Range<usize>, text: &'t str) -> Vec<&'t str> {
    let mut names = Vec::new();
    let name_of = |definition: Node| definition.child_by_field_name("name").map(|n| &text[n.byte_range()]);
    for unit in units.iter().filter(|u| range.start <= u.start_byte() && u.end_byte() <= range.end) {
        let Some(definition) = definition(*unit) else { continue };
        names.extend(name_of(definition));
        if definition.kind() == "class_definition"
            && let Some(body) = definition.child_by_field_name("body")
        {
            let mut cursor = body.walk();
            names.extend(body.named_children(&mut cursor).filter_map(definition_of).filter_map(name_of));
        }
    }
    names
}

fn definition_of(member: Node) -> Option<Node> {
    definition(member).filter(|d| d.kind() == "function_definition")
}

/// Whether `word` occurs as a whole word in `text` inside `range`.
fn used_inside(text: &str, word: &str, range: &Range<usize>) -> bool {
    text[range.clone()].match_indices(word).any(|(at, _)| is_whole_word(text, range.start + at, word.len()))
}

/// Where `word` occurs as a whole word in `text` outside `range`.
fn uses_outside<'a>(text: &'a str, word: &'a str, range: &'a Range<usize>) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| is_whole_word(text, at, word.len()) && !(range.start <= at && at + word.len() <= range.end))
}

/// Whether the `len` bytes at `at` are a whole word, not part of a longer name.
fn is_whole_word(text: &str, at: usize, len: usize) -> bool {
    !text[..at].ends_with(is_word) && !text[at + len..].starts_with(is_word)
}

/// Whether a stored finding outside the relinted `unit` (which grew by `delta`) could
/// have changed with it although its own text did not: its fix edits the unit (an
/// `import torch` added at the top), its message names a line number the edit may have
/// moved, or it points at other places.
pub fn depends_on_other_text(finding: &Diagnostic, unit: &Range<usize>, delta: isize) -> bool {
    let old_unit_end = (unit.end as isize - delta) as usize;
    let outside = finding.range.end <= unit.start || finding.range.start >= old_unit_end;
    let edits_unit = |edit: &crate::fix::Edit| edit.range.start <= old_unit_end && unit.start <= edit.range.end;
    outside
        && (finding.fix.as_ref().is_some_and(|fix| fix.edits().iter().any(edits_unit))
            || names_a_line(&finding.message)
            || !finding.related.is_empty())
}

/// "… the loop at line 17 …", "(line 3: …)".
fn names_a_line(message: &str) -> bool {
    message
        .match_indices("line ")
        .any(|(at, word)| message[at + word.len()..].starts_with(|c: char| c.is_ascii_digit()))
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
    fn edits_whose_words_reach_beyond_their_statement_are_risky() {
        let old = "import torch\n\ndef evaluate(model):\n    total = 1\n\ndef main():\n    evaluate(m)\n";
        let risky =
            |new: &str, start: usize, old_end: usize, new_end: usize| is_risky(old, start, old_end, new, new_end);
        // Typing inside `total`, indentation, a new line: no word of another statement.
        assert!(!risky(
            "import torch\n\ndef evaluate(model):\n    totxal = 1\n\ndef main():\n    evaluate(m)\n",
            42,
            42,
            43
        ));
        assert!(!risky(
            "import torch\n\ndef evaluate(model):\n     total = 1\n\ndef main():\n    evaluate(m)\n",
            35,
            35,
            36
        ));
        // Renaming a function called elsewhere, or typing a grad-mode word: risky.
        assert!(risky(
            "import torch\n\ndef evaluatex(model):\n    total = 1\n\ndef main():\n    evaluate(m)\n",
            26,
            26,
            27
        ));
        let with = "import torch\n\ndef evaluate(model):\n    with total = 1\n\ndef main():\n    evaluate(m)\n";
        assert!(risky(with, 39, 39, 44));
        // A function pasted that nothing calls is not; one whose name is used is.
        let pasted = "def helper(x):\n    return x\n\n";
        let new = format!("{pasted}{old}");
        assert!(!is_risky(old, 0, 0, &new, pasted.len()));
        let calling = "def main2():\n    evaluate(m)\n\n";
        assert!(risky(&format!("{calling}{old}"), 0, 0, calling.len()));
        // A non-word character of several bytes before the edit.
        assert!(!is_risky("x = a—bc\n", 8, 8, "x = a—bzc\n", 9));
    }

    #[test]
    fn the_relinted_range_holds_the_edited_definition_and_its_users() {
        let text = "import torch\n\ndef helper(x):\n    return x\n\ndef train(m):\n    y = helper(m)\n\ndef alone():\n    pass\n";
        let tree = crate::engine::parse(text).unwrap();
        let at = |needle: &str| text.find(needle).unwrap();
        // Inside `alone`: that function alone.
        let inside = at("pass");
        assert_eq!(relinted_range(&tree, text, &(inside..inside + 1)), Some(at("def alone")..text.len() - 1));
        // Inside `helper`: `train` uses it.
        let inside = at("return x");
        assert_eq!(relinted_range(&tree, text, &(inside..inside + 1)), Some(at("def helper")..at("\n\ndef alone")));
        // Inside `train`: it calls `helper`.
        let inside = at("y = helper");
        assert_eq!(relinted_range(&tree, text, &(inside..inside + 1)), Some(at("def helper")..at("\n\ndef alone")));
        // A header, or module-level code: the whole file.
        let header = at("(m):");
        assert_eq!(relinted_range(&tree, text, &(header..header + 1)), None);
        assert_eq!(relinted_range(&tree, text, &(0..3)), None);
        // Whole definitions with the blank lines around them.
        let whole = at("\n\ndef alone")..text.len();
        assert_eq!(relinted_range(&tree, text, &whole), Some(whole.clone()));
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
