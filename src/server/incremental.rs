//! Relinting only what an edit touched. A finding depends on the text of the top-level
//! statement it sits in and on facts drawn from the rest of the file; a partial relint
//! relints the statements whose text changed and keeps the other findings only where
//! every such fact is known unchanged:
//!
//! - the syntax tree: every top-level statement outside the relinted range stands where
//!   it stood, with the same text, and parses without errors before and after
//!   (`FileLayout`), so its tree is the same;
//! - each rule's text test and the whole-file suppression (`FileLayout`);
//! - facts gathered over the whole file, found through words: imports, suppression
//!   comments, frozen networks (`GLOBAL_WORDS`) and the words each rule names
//!   (`crate::rules::file_wide_words`). An edit whose lines hold one is "risky";
//! - grad mode: a `with torch.no_grad():`, an `@torch.no_grad()` on a nested function or a
//!   `torch.set_grad_enabled(False)` statement inside a definition decides the grad mode
//!   of the statements of its own body and, through calls, of the functions it calls,
//!   which the relinted range takes in with their own callees (`relinted_range`); a
//!   function made to return a detached value reaches its users, which it takes in too.
//!   At module level the same words decide the grad mode of every later statement and of
//!   the functions those call, but an edit there relints the whole file anyway. So
//!   `torch`, `with`, `no_grad` and the other grad-mode words are not file-wide;
//! - names: a function's or class's callers and callees read what it returns and how it
//!   is called, so the range takes in the statements that use a name it defines and the
//!   definitions it calls, transitively (`relinted_range`); an edit that adds or removes
//!   a name another statement uses is risky;
//! - module-level code: a fact about it reads the whole file (the module's byte range
//!   holds every function: a `backward()` anywhere is one of its calls), so the
//!   top-level statements that are not functions are relinted along with the range
//!   (`module_code`) when an edit's lines hold a word of such a call
//!   (`crate::rules::module_wide_words`).
//!
//! A risky edit, or a check that fails, relints the whole file.

use crate::diagnostic::{Diagnostic, TextRange};
use crate::engine::field;
use crate::engine::tree::KindName;
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
    /// The change may affect findings in module-level code (`module_code`).
    pub reaches_module_code: bool,
}

/// Words whose appearance in or next to an edit may change findings outside its
/// statement: imports and the scope of names, suppression comments, and the words of the
/// facts the engine gathers over the whole file (frozen networks). Rules name theirs in
/// `crate::rules::file_wide_words`. Grad-mode words are not among them: inside a
/// definition they reach only the statements the relinted range takes in (see the
/// module's documentation), and an edit outside every definition relints the file.
const GLOBAL_WORDS: &[&str] = &[
    "import",
    "from",
    "global",
    "nonlocal",
    "oomlint",
    "noqa",
    "NOQA",
    "requires_grad_",
    "requires_grad",
    "parameters",
    "named_parameters",
];

fn is_file_wide(word: &str) -> bool {
    GLOBAL_WORDS.contains(&word) || crate::rules::file_wide_words().any(|w| w == word)
}

/// Whether a change may affect findings outside its statement by the words it adds
/// or takes away: `old_region` of the old text became `new_region` of the new one (the
/// changes widened to every place whose syntax the reparse changed).
///
/// The words whose number of occurrences differs between the two regions are the ones
/// the change adds or takes away. A change that typed or deleted a quote or `#`
/// (`quotes_or_comment`) may turn code into a string or a comment (or back) without
/// changing any word, so there every word of the regions counts as changed.
pub fn changes_words_of_other_statements(
    old_text: &str,
    old_region: Range<usize>,
    new_text: &str,
    new_region: Range<usize>,
    quotes_or_comment: bool,
) -> bool {
    // The lines changed may hold a file-wide fact's word whose role the change altered
    // without adding or taking it away (a `torch.save(...)` call broken, a suppression
    // comment's codes edited): any such word on them counts.
    if lines_hold(old_text, &old_region, is_file_wide) || lines_hold(new_text, &new_region, is_file_wide) {
        return true;
    }
    let old_region = whole_words(old_text, old_region);
    let new_region = whole_words(new_text, new_region);
    let mut counts: std::collections::HashMap<&str, isize> = std::collections::HashMap::new();
    for word in words_of(&old_text[old_region.clone()]) {
        *counts.entry(word).or_default() += 1;
    }
    for word in words_of(&new_text[new_region.clone()]) {
        *counts.entry(word).or_default() -= 1;
    }
    let words: Vec<&str> =
        counts.into_iter().filter(|&(_, count)| quotes_or_comment || count != 0).map(|(word, _)| word).collect();
    if words.is_empty() {
        return false;
    }
    if words.iter().any(|w| is_file_wide(w)) {
        return true;
    }
    [(old_text, &old_region), (new_text, &new_region)].iter().any(|&(text, region)| {
        let reach = |word: &str, places: &[usize]| {
            let outside = places.iter().any(|&at| at < region.start || region.end < at + word.len());
            outside && names_across_statements(text, word, places)
        };
        // A few words (typing) are each searched for; many (a paste) are first looked up
        // among the words the text's lines name (one pass over its lines, not one search
        // of a large file per word), and only those are searched for.
        if words.len() <= FEW_WORDS {
            let everywhere = 0..0;
            return words.iter().any(|word| reach(word, &uses_outside(text, word, &everywhere).collect::<Vec<_>>()));
        }
        let named = named_by_lines(text);
        words.iter().any(|word| {
            !KEYWORDS.contains(word) && named.contains(word) && uses_outside(text, word, region).next().is_some()
        })
    })
}

/// The words of `text` that a line names for other statements, as
/// `names_across_statements` judges an occurrence by its line: the name a `def` or
/// `class` line defines, the names a `from` line imports, and every word of an `import`
/// line holding `;` or of a line whose code holds only names, commas and brackets.
fn named_by_lines(text: &str) -> std::collections::HashSet<&str> {
    let mut named = std::collections::HashSet::new();
    for line in text.split('\n') {
        // Most lines start with neither keyword and hold something besides names: read up
        // to the first character that is not part of a name, not the whole line for a
        // comment first.
        let start = line.trim_start();
        let start = start.strip_prefix("async ").unwrap_or(start);
        let keyword = ["def ", "class ", "import ", "from "].iter().any(|k| start.starts_with(k));
        if !keyword
            && !start.chars().take_while(|&c| c != '#').all(|c| is_word(c) || c.is_whitespace() || ",()\\".contains(c))
        {
            continue;
        }
        let code = line.split('#').next().unwrap_or("").trim();
        let code = code.strip_prefix("async ").unwrap_or(code);
        if let Some(rest) = code.strip_prefix("def ").or_else(|| code.strip_prefix("class ")) {
            named.extend(words_of(rest).next());
        } else if let Some(modules) = code.strip_prefix("import ") {
            if modules.contains(';') {
                named.extend(words_of(code));
            }
        } else if let Some(import) = code.strip_prefix("from ") {
            named.extend(words_of(import.split_once(" import").map_or(import, |(_, names)| names)));
        } else if code.chars().all(|c| is_word(c) || c.is_whitespace() || ",()\\".contains(c)) {
            // The code's words: a comment's words name nothing.
            named.extend(words_of(code));
        }
    }
    named
}

/// How many changed words are searched for one by one.
const FEW_WORDS: usize = 8;

/// Whether a word of the lines `region` of `text` spans is one `wanted` names.
fn lines_hold(text: &str, region: &Range<usize>, wanted: impl Fn(&str) -> bool) -> bool {
    let start = text[..region.start].rfind('\n').map_or(0, |i| i + 1);
    let ends_a_line = region.end == 0 || text[..region.end].ends_with('\n');
    let end =
        if ends_a_line { region.end } else { text[region.end..].find('\n').map_or(text.len(), |i| region.end + i) };
    words_of(&text[start..end]).any(wanted)
}

/// Whether a change may affect findings in module-level code although it lies inside a
/// function: `old_region` of the old text became `new_region` of the new one, and the
/// lines they span hold a word of the calls facts about module-level code gather from the
/// whole file (`crate::rules::module_wide_words`).
pub fn reaches_module_code(old_text: &str, old_region: Range<usize>, new_text: &str, new_region: Range<usize>) -> bool {
    let module_wide = |word: &str| crate::rules::module_wide_words().contains(&word);
    lines_hold(old_text, &old_region, module_wide) || lines_hold(new_text, &new_region, module_wide)
}

/// `region` widened to the whole words it cuts or touches at its ends.
fn whole_words(text: &str, region: Range<usize>) -> Range<usize> {
    let start =
        text[..region.start].char_indices().rev().find(|(_, c)| !is_word(*c)).map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[region.end..].find(|c: char| !is_word(c)).map_or(text.len(), |i| region.end + i);
    start..end
}

/// The identifier-like words of `text`.
fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_word(c)).filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `word`, which occurs as a whole word at `places` of `text`, is a name other
/// statements may refer to: a function or class defined in `text` (at any depth: methods
/// too) or a name a `from` import binds. Judged by the lines where it occurs (not a parse
/// of every line), and conservatively: an occurrence after `import` on a `from` import
/// line, or on a line holding only names, commas and brackets (an import list continued
/// over lines), counts. A plain `import` binds a module (`torch`, `np`), and the path of a
/// `from` import names the module it imports from: the facts that read every
/// use of a name over the file are about functions of the file (their call sites decide
/// their grad mode) and names a `from` import brings (whether each use of an old API's
/// name can take the new one's arguments), so a use of a module taken in or out touches
/// no other statement's finding.
fn names_across_statements(text: &str, word: &str, places: &[usize]) -> bool {
    if KEYWORDS.contains(&word) {
        return false;
    }
    places.iter().any(|&at| {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let code = text[line_start..line_end].split('#').next().unwrap_or("");
        // A word in a comment names nothing: a license header's `it` or `use`, a note's
        // `loss`.
        if at >= line_start + code.len() {
            return false;
        }
        let code = code.trim();
        let code = code.strip_prefix("async ").unwrap_or(code);
        if let Some(rest) = code.strip_prefix("def ").or_else(|| code.strip_prefix("class ")) {
            return words_of(rest).next() == Some(word);
        }
        if let Some(modules) = code.strip_prefix("import ") {
            return modules.contains(';');
        }
        // `from a.b import c as d`: the module's path binds nothing.
        if let Some(import) = code.strip_prefix("from ") {
            let names = import.split_once(" import").map_or(import, |(_, names)| names);
            return words_of(names).any(|w| w == word);
        }
        code.chars().all(|c| is_word(c) || c.is_whitespace() || ",()\\".contains(c))
    })
}

/// Python's keywords, never names (`import`, `with` and the others that say something
/// file-wide are in `GLOBAL_WORDS`).
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// What findings outside the relinted text read besides their own statement's text, as
/// it was when findings were last stored: a partial relint keeps those findings only
/// where it finds all of it unchanged.
///
/// - The top-level statements and where each has a syntax error. A statement that parses
///   is parsed the same wherever it stands, so an unchanged statement outside the relinted
///   range, in unchanged boundaries and free of errors before and after, has the same
///   tree. Error recovery may join or split statements, so errors outside the range, or
///   a boundary that moved, relint the file.
/// - Each rule's text test (`could_match`): a rule whose test flips starts or stops
///   finding anything over the whole file; and the other tests of the whole text that
///   decide findings anywhere (`crate::rules::whole_text_tests`).
/// - Whether a comment ignores the whole file.
///
/// The other facts rules gather over the whole file are found through words: those
/// `GLOBAL_WORDS` and the rules' `file_wide_words` name relint the file when an edit's
/// lines hold one, and the names of functions and classes relint the statements that
/// use them (`relinted_range`).
#[derive(Debug, Clone, PartialEq)]
pub struct FileLayout {
    units: Vec<(Range<usize>, bool)>,
    /// Where the module-level statements (not a `def`, a `class` or a comment) start.
    module_code: Vec<usize>,
    text_tests: Vec<bool>,
    ignores_whole_file: bool,
}

impl FileLayout {
    pub fn of(tree: &Tree, text: &str) -> FileLayout {
        let root = tree.root_node();
        let mut cursor = root.walk();
        let units: Vec<Node> = root.named_children(&mut cursor).collect();
        FileLayout {
            units: units.iter().map(|u| (u.byte_range(), u.has_error())).collect(),
            module_code: units
                .iter()
                .filter(|u| definition(**u).is_none() && u.kind_name() != "comment")
                .map(|u| u.start_byte())
                .collect(),
            text_tests: crate::rules::RULES
                .iter()
                .map(|rule| (rule.could_match)(text))
                .chain(crate::rules::whole_text_tests(text))
                .collect(),
            ignores_whole_file: crate::suppress::Suppressions::ignores_whole_file(text),
        }
    }

    /// Whether some top-level statement does not parse.
    pub fn has_errors(&self) -> bool {
        self.units.iter().any(|(_, broken)| *broken)
    }

    /// Whether `now`, the layout after edits that lie inside `range` (current offsets)
    /// and made the text `delta` bytes longer, agrees with this one outside `range`.
    pub fn same_outside(&self, now: &FileLayout, range: &Range<usize>, delta: isize) -> bool {
        if self.text_tests != now.text_tests || self.ignores_whole_file != now.ignores_whole_file {
            return false;
        }
        let old_end = range.end as isize - delta;
        if old_end < range.start as isize {
            return false;
        }
        let old_range = range.start..old_end as usize;
        let outside = |layout: &FileLayout, range: &Range<usize>, shift: isize| -> Vec<(Range<usize>, bool)> {
            layout
                .units
                .iter()
                .filter(|(u, _)| u.end <= range.start || range.end <= u.start)
                .map(|(u, broken)| {
                    let shift = if u.start >= range.end && u.end > range.start { shift } else { 0 };
                    let moved = |x: usize| (x as isize + shift) as usize;
                    (moved(u.start)..moved(u.end), *broken)
                })
                .collect()
        };
        let before = outside(self, &old_range, delta);
        let after = outside(now, range, 0);
        // The edits lie inside definitions, or cover whole ones: a module-level statement
        // in the range before and not after (or the reverse) is one they took away or
        // made (a statement deleted in the blank space after a body, a line indented
        // into one), which module-level code may read.
        let module_code_in = |layout: &FileLayout, range: &Range<usize>| {
            layout.module_code.iter().filter(|&&at| range.start <= at && at < range.end).count()
        };
        before == after
            && after.iter().all(|(_, broken)| !broken)
            && module_code_in(self, &old_range) == module_code_in(now, range)
    }
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
    let inside_body =
        units.iter().find(|unit| body_region(text, **unit).is_some_and(|b| b.start <= span.start && span.end <= b.end));
    let mut range = match inside_body {
        // With the blank space after it the edits reach.
        Some(unit) => unit.start_byte()..unit.end_byte().max(span.end),
        None => {
            // Only whole definitions and comments, nothing cut in two.
            let touched = units.iter().filter(|u| u.start_byte() < span.end && span.start < u.end_byte());
            for unit in touched {
                let whole = span.start <= unit.start_byte() && unit.end_byte() <= span.end;
                if !whole || !(definition(*unit).is_some() || unit.kind_name() == "comment") {
                    return None;
                }
            }
            span.clone()
        }
    };
    // The names each top-level statement defines, found once.
    let names: Vec<Vec<&str>> = units.iter().map(|u| defined_names(text, u.byte_range())).collect();
    loop {
        let mut grown = range.clone();
        for name in defined_names(text, range.clone()) {
            for at in uses_outside(text, name, &range) {
                let user = units.iter().find(|u| u.start_byte() <= at && at < u.end_byte())?;
                grown = grown.start.min(user.start_byte())..grown.end.max(user.end_byte());
            }
        }
        // The definitions the range calls: how a helper is called (once per step, under
        // `no_grad`) decides its own findings. The range's words are listed once, not
        // searched for each of the file's definitions.
        let used: std::collections::HashSet<&str> = words_of(&text[range.clone()]).collect();
        for (unit, defined) in units.iter().zip(&names) {
            if (unit.end_byte() <= range.start || range.end <= unit.start_byte())
                && defined.iter().any(|name| used.contains(name))
            {
                grown = grown.start.min(unit.start_byte())..grown.end.max(unit.end_byte());
            }
        }
        if grown == range {
            // A statement that does not parse is read in whatever shape error recovery
            // gave it, which may join it to the statements around it: only the relinted
            // text may hold syntax errors.
            let broken_outside = root.has_error()
                && units.iter().any(|u| (u.end_byte() <= range.start || range.end <= u.start_byte()) && u.has_error());
            return (!broken_outside).then_some(range);
        }
        if grown.start == 0 && grown.end >= text.len() {
            return None;
        }
        range = grown;
    }
}

/// The top-level statements of `tree` that are not function definitions, outside
/// `relinted`: module-level code and classes (their bodies are module-level code too).
/// What a fact says about such code reads the whole file: the module's byte range holds
/// every function, so calls asked for in it (`backward()`, `optimizer.step()`) are all
/// the file's. A partial relint relints them along with `relinted` when an edit may
/// reach them (`reaches_module_code`).
pub fn module_code(tree: &Tree, relinted: &Range<usize>) -> Vec<Range<usize>> {
    let root = tree.root_node();
    let mut cursor = root.walk();
    root.named_children(&mut cursor)
        .filter(|unit| definition(*unit).is_none_or(|d| d.kind_name() != "function_definition"))
        .map(|unit| unit.byte_range())
        .filter(|unit| unit.end <= relinted.start || relinted.end <= unit.start)
        .collect()
}

/// Where an edit stays inside the body of `unit`, a top-level `def` or `class`: from the
/// end of its header (the `:` and a comment after it) to its end, and on over the blank
/// space after it. An edit that rewrites a body's first or last lines whole covers their
/// indentation and line break, which lie outside the body's own node; the blank space
/// after the body may have held a statement the edit took away, which
/// `FileLayout::same_outside` tells by the module-level statements in the range.
fn body_region(text: &str, unit: Node) -> Option<Range<usize>> {
    let body = definition(unit)?.child_by_field_id(field::BODY)?;
    let start = body.prev_sibling().map_or(body.start_byte(), |header| header.end_byte());
    let blank =
        text[unit.end_byte()..].find(|c: char| !c.is_ascii_whitespace()).unwrap_or(text.len() - unit.end_byte());
    Some(start..unit.end_byte() + blank)
}

/// The `def` or `class` a top-level statement is, through its decorators.
fn definition(unit: Node) -> Option<Node> {
    match unit.kind_name() {
        "function_definition" | "class_definition" => Some(unit),
        "decorated_definition" => unit.child_by_field_id(field::DEFINITION),
        _ => None,
    }
}

/// The names the functions and classes defined in `range` of `text` give other code,
/// at any depth: rules find a function's callers, and a method's, by its name wherever
/// it is spelled. Read from the lines that start with `def` or `class` (a string
/// holding such a line only adds a name, which only relints more).
fn defined_names(text: &str, range: Range<usize>) -> Vec<&str> {
    let mut names = Vec::new();
    for line in text[range].lines() {
        let code = line.trim_start();
        let code = code.strip_prefix("async").filter(|rest| rest.starts_with(char::is_whitespace)).unwrap_or(code);
        let code = code.trim_start();
        let rest = code.strip_prefix("def").or_else(|| code.strip_prefix("class"));
        if let Some(rest) = rest.filter(|rest| rest.starts_with(char::is_whitespace))
            && let Some(name) = words_of(rest).next()
        {
            names.push(name);
        }
    }
    names
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

/// The statements a partial relint relints, in current offsets: `unit`, the range the
/// edits lie in (the text grew by `delta` there), and `others`, statements outside it
/// whose text did not change (`module_code`).
pub struct Relinted {
    pub unit: Range<usize>,
    pub delta: isize,
    pub others: Vec<Range<usize>>,
}

impl Relinted {
    /// Every relinted range, in current offsets.
    pub fn ranges(&self) -> Vec<Range<usize>> {
        let mut ranges = self.others.clone();
        ranges.push(self.unit.clone());
        ranges.sort_by_key(|r| r.start);
        ranges
    }

    /// Where `range` (current offsets, the unit or outside it) was in the text before the
    /// edits: stored findings are in that text's offsets.
    fn before(&self, range: &Range<usize>) -> Range<usize> {
        let old = |x: usize| (x as isize - self.delta) as usize;
        if *range == self.unit {
            range.start..old(range.end)
        } else if range.start >= self.unit.end {
            old(range.start)..old(range.end)
        } else {
            range.clone()
        }
    }

    /// Whether a stored finding (old offsets) lies outside every relinted range.
    fn keeps(&self, finding: &Diagnostic) -> bool {
        self.ranges()
            .iter()
            .map(|r| self.before(r))
            .all(|r| finding.range.end <= r.start || finding.range.start >= r.end)
    }

    /// Where the relinted `unit` ended in the text before the edits.
    fn old_unit_end(&self) -> usize {
        self.before(&self.unit).end
    }
}

/// Whether a stored finding kept by a partial relint could have changed with the relinted
/// unit although its own text did not: its fix edits the unit (an `import torch` added
/// at the top), its message names a line number the edit may have moved, or it points at
/// other places.
pub fn depends_on_other_text(finding: &Diagnostic, relinted: &Relinted) -> bool {
    let (unit, old_unit_end) = (&relinted.unit, relinted.old_unit_end());
    let edits_unit = |edit: &crate::fix::Edit| edit.range.start <= old_unit_end && unit.start <= edit.range.end;
    relinted.keeps(finding)
        && (finding.fix.as_ref().is_some_and(|fix| fix.edits().iter().any(edits_unit))
            || names_a_line(&finding.message)
            || !finding.related.is_empty())
}

/// Whether a stored finding kept by a partial relint lies in module-level code (not in a
/// `def` or `class`) of `tree`. Module-level code reads the names other module-level
/// statements bind, and where the text does not parse, error recovery may have moved
/// such a binding into or out of the relinted statements (an assignment read as part of
/// a broken definition) without changing any statement's extent: such a finding is not
/// known unchanged.
pub fn in_module_code(finding: &Diagnostic, tree: &Tree, relinted: &Relinted) -> bool {
    if !relinted.keeps(finding) {
        return false; // relinted
    }
    let at = if finding.range.start >= relinted.old_unit_end() {
        (finding.range.start as isize + relinted.delta) as usize
    } else {
        finding.range.start
    };
    let root = tree.root_node();
    let mut cursor = root.walk();
    let holder = root.named_children(&mut cursor).find(|u| u.start_byte() <= at && at < u.end_byte());
    holder.is_none_or(|u| definition(u).is_none())
}

/// "… the loop at line 17 …", "(line 3: …)".
fn names_a_line(message: &str) -> bool {
    message
        .match_indices("line ")
        .any(|(at, word)| message[at + word.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// The stored findings outside the relinted statements (those after the unit moved by
/// its `delta`), with the fresh findings of the relinted ones.
pub fn merge(previous: Vec<Diagnostic>, fresh: Vec<Diagnostic>, relinted: &Relinted) -> Vec<Diagnostic> {
    let (old_unit_end, delta) = (relinted.old_unit_end(), relinted.delta);
    let shift = |range: TextRange| {
        if range.start < old_unit_end {
            return range;
        }
        TextRange { start: (range.start as isize + delta) as usize, end: (range.end as isize + delta) as usize }
    };
    let mut merged: Vec<Diagnostic> = previous
        .into_iter()
        .filter(|d| relinted.keeps(d))
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

    /// Whether replacing `start..old_end` of `old` to give `new` is risky, the edit alone.
    fn edit_is_risky(old: &str, start: usize, old_end: usize, new: &str, new_end: usize) -> bool {
        let quotes_or_comment =
            [&old[start..old_end], &new[start..new_end]].iter().any(|t| t.contains(['"', '\'', '#']));
        changes_words_of_other_statements(old, start..old_end, new, start..new_end, quotes_or_comment)
    }

    #[test]
    fn edits_whose_words_reach_beyond_their_statement_are_risky() {
        let old = "import torch\n\ndef evaluate(model):\n    total = 1\n\ndef main():\n    evaluate(m)\n";
        let risky =
            |new: &str, start: usize, old_end: usize, new_end: usize| edit_is_risky(old, start, old_end, new, new_end);
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
        // Renaming a function called elsewhere, or typing an import: risky.
        assert!(risky(
            "import torch\n\ndef evaluatex(model):\n    total = 1\n\ndef main():\n    evaluate(m)\n",
            26,
            26,
            27
        ));
        let import = "import torch\n\ndef evaluate(model):\n    import total = 1\n\ndef main():\n    evaluate(m)\n";
        assert!(risky(import, 39, 39, 46));
        // A grad-mode word, or a use of a module taken in or out, reaches only what the
        // relinted range takes in (the functions called under it).
        let with = "import torch\n\ndef evaluate(model):\n    with total = 1\n\ndef main():\n    evaluate(m)\n";
        assert!(!risky(with, 39, 39, 44));
        let no_grad =
            "import torch\n\ndef evaluate(model):\n    torch.no_grad() total = 1\n\ndef main():\n    evaluate(m)\n";
        assert!(!risky(no_grad, 39, 39, 55));
        // A name a `from` import brings is read over the whole file (each use of an old
        // API's name): risky. The module it comes from is not.
        let from = "from torch.cuda.amp import autocast\n\ndef f():\n    total = 1\n";
        let used = "from torch.cuda.amp import autocast\n\ndef f():\n    autocast total = 1\n";
        assert!(edit_is_risky(from, 50, 50, used, 59));
        let used = "from torch.cuda.amp import autocast\n\ndef f():\n    torch.no_grad() total = 1\n";
        assert!(!edit_is_risky(from, 50, 50, used, 66));
        // A function pasted that nothing calls is not; one whose name is used is.
        let pasted = "def helper(x):\n    return x\n\n";
        let new = format!("{pasted}{old}");
        assert!(!edit_is_risky(old, 0, 0, &new, pasted.len()));
        let calling = "def main2():\n    evaluate(m)\n\n";
        assert!(risky(&format!("{calling}{old}"), 0, 0, calling.len()));
        // A word typed that a comment holds elsewhere (a license header's `it`): not risky;
        // one a line of names holds is.
        let header = "# Use it as you like.\n\ndef f():\n    x = 1\n";
        let typed = "# Use it as you like.\n\ndef f():\n    x = it + 1\n";
        assert!(!edit_is_risky(header, 40, 40, typed, 45));
        let names = "it, other\n\ndef f():\n    x = 1\n";
        assert!(edit_is_risky(names, 28, 28, &names.replace("x = 1", "x = it + 1"), 33));
        // A non-word character of several bytes before the edit.
        assert!(!edit_is_risky("x = a—bc\n", 8, 8, "x = a—bzc\n", 9));
        // Commenting out an import turns its words into a comment's: risky, though no
        // word was typed.
        let commented = "#import torch\n\ndef evaluate(model):\n    total = 1\n\ndef main():\n    evaluate(m)\n";
        assert!(changes_words_of_other_statements(old, 0..12, commented, 0..13, true));
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
        // A body's lines rewritten whole, their indentation and line break with them.
        let lines = at("    pass")..text.len();
        assert_eq!(relinted_range(&tree, text, &lines), Some(at("def alone")..text.len()));
        let lines = at("    return x")..at("def train");
        assert_eq!(relinted_range(&tree, text, &lines), Some(at("def helper")..at("\n\ndef alone")));
        // A header, or module-level code: the whole file.
        let header = at("(m):");
        assert_eq!(relinted_range(&tree, text, &(header..header + 1)), None);
        assert_eq!(relinted_range(&tree, text, &(0..3)), None);
        // Whole definitions with the blank lines around them.
        let whole = at("\n\ndef alone")..text.len();
        assert_eq!(relinted_range(&tree, text, &whole), Some(whole.clone()));
    }

    #[test]
    fn the_words_lines_name_are_those_whose_occurrences_name_them() {
        let text = "import torch as T  # model\nimport os; import re  # note\nfrom a import (b,  # note\n    c)\n\nclass Net(Base):\n    def forward(self, x):\n        \
                    return helper(x)\n\nasync def run():\n    main()\n# loss here\nx = y\n";
        let named = named_by_lines(text);
        for word in words_of(text) {
            let places: Vec<usize> = uses_outside(text, word, &(0..0)).collect();
            let by_occurrence = !KEYWORDS.contains(&word) && names_across_statements(text, word, &places);
            assert_eq!(!KEYWORDS.contains(&word) && named.contains(word), by_occurrence, "{word}");
        }
        for word in ["b", "c", "Net", "forward", "run", "main", "os"] {
            assert!(named.contains(word), "{word}");
        }
        // Words of comments name nothing, on a line of their own or after names.
        for word in ["torch", "T", "model", "a", "Base", "self", "y", "loss", "note"] {
            assert!(!named.contains(word), "{word}");
        }
    }

    #[test]
    fn module_level_code_and_classes_are_relinted_with_any_range() {
        let text = "import torch\n\nclass Net:\n    def f(self):\n        pass\n\n@torch.no_grad()\ndef evaluate():\n    pass\n\nrun()\n";
        let tree = crate::engine::parse(text).unwrap();
        let at = |needle: &str| text.find(needle).unwrap();
        let unit = |needle: &str, end: &str| at(needle)..at(end) + end.len();
        let inside_evaluate = at("    pass\n\nrun");
        assert_eq!(
            module_code(&tree, &(inside_evaluate..inside_evaluate + 1)),
            [unit("import", "torch"), unit("class", "        pass"), unit("run", "run()")]
        );
        // What the relinted range already holds is not named again.
        assert_eq!(module_code(&tree, &(0..at("@torch"))), [unit("run", "run()")]);
    }

    #[test]
    fn spans_of_several_edits_merge_in_current_coordinates() {
        let edits = [
            EditRecord { version: 2, start: 10, old_end: 10, new_end: 11, risky: false, reaches_module_code: false },
            EditRecord { version: 3, start: 30, old_end: 32, new_end: 30, risky: false, reaches_module_code: false },
        ];
        assert_eq!(dirty_span(&edits), Some((10..30, -1)));
    }
}
