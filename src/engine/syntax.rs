//! Parse errors as tree-sitter recovers from them, and code nested too deeply to
//! analyse: reported, never fatal. What still parses, and what is nested less deeply, is
//! linted.

use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// How deeply code may nest for the rules' patterns to look inside it, in levels of the
/// syntax tree (each bracket, call, lambda, operator or block adds one or two). Below
/// this depth no match starts: the questions asked of each match climb to its enclosing
/// function, so in deeper code the time would grow with the square of the depth. Python
/// refuses far less: 200 nested brackets, 100 indented blocks, and expressions nested
/// about 3,000 deep (CPython 3.11 stops compiling there).
pub const MAX_DEPTH: u32 = 5_000;

/// Files with many errors are usually not Python at all; a few locations suffice.
const MAX_REPORTED: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    /// What went wrong there, shown after the place (`cannot parse: unexpected input`).
    pub message: String,
}

pub fn errors(root: Node, source: &str) -> Vec<SyntaxError> {
    let mut found = Vec::new();
    if !root.has_error() {
        return found;
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if found.len() == MAX_REPORTED {
            break;
        }
        if node.is_missing() {
            found.push(SyntaxError {
                offset: node.start_byte(),
                message: format!("cannot parse: missing `{}`", node.kind_name()),
            });
            continue;
        }
        if node.is_error() {
            let snippet: String = tree::text(node, source).chars().take(30).collect();
            let snippet = snippet.lines().next().unwrap_or("").trim();
            let message = if snippet.is_empty() {
                "cannot parse: unexpected input".to_string()
            } else {
                format!("cannot parse: unexpected `{snippet}`")
            };
            found.push(SyntaxError { offset: node.start_byte(), message });
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).filter(|c| c.has_error()).collect();
        stack.extend(children.into_iter().rev());
    }
    found
}

/// The opening brackets still open where a line starts at column 0 with `def`, `class`
/// or `async def`, which no bracket can hold: a call typed as far as `x = f(`. Left in,
/// such a bracket has tree-sitter's error recovery read what follows it, past the end of
/// its function, as broken code, and a reparse of the file after each keystroke cannot
/// reuse the tree it had; the engine parses the text with these brackets blanked
/// (`blanked`), so their line reads as though it had none, and reports each as a syntax
/// error (`unclosed_bracket_errors`). Valid Python has none: strings, f-strings'
/// replacement fields and comments are read as Python reads them.
pub fn unclosed_brackets(source: &str) -> Vec<usize> {
    let bytes = source.as_bytes();
    let mut scan = Scan { bytes, at: 0, open: Vec::new(), unclosed: Vec::new() };
    scan.code(None);
    scan.unclosed
}

/// `source` with the bytes at `offsets` (ASCII brackets) replaced by spaces: the same
/// offsets, still UTF-8.
pub fn blanked<'s>(source: &'s str, offsets: &[usize]) -> std::borrow::Cow<'s, str> {
    if offsets.is_empty() {
        return std::borrow::Cow::Borrowed(source);
    }
    let mut bytes = source.as_bytes().to_vec();
    for &at in offsets {
        bytes[at] = b' ';
    }
    String::from_utf8(bytes).map_or(std::borrow::Cow::Borrowed(source), std::borrow::Cow::Owned)
}

/// The syntax errors of the brackets `unclosed_brackets` found in `source`.
pub fn unclosed_bracket_errors(source: &str, unclosed: &[usize]) -> Vec<SyntaxError> {
    unclosed
        .iter()
        .copied()
        .take(MAX_REPORTED)
        .map(|offset| SyntaxError {
            offset,
            message: format!("cannot parse: `{}` was never closed", char::from(source.as_bytes()[offset])),
        })
        .collect()
}

/// The bytes code is read for: line ends, comments, quotes and brackets.
const SIGNIFICANT: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 10 {
        table[b"\n#\"'([{)]}"[i] as usize] = true;
        i += 1;
    }
    table
};

/// An f-string's replacement field being read: how many brackets were open when it
/// began, and whether its string ends with its line.
#[derive(Clone, Copy)]
struct Field {
    depth: usize,
    one_line: bool,
}

/// A reading of Python's brackets, strings and comments, byte by byte.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The brackets open in the code read so far, outside strings.
    open: Vec<usize>,
    unclosed: Vec<usize>,
}

impl Scan<'_> {
    /// Read code up to the end, or, inside an f-string's replacement field, up to the
    /// `}` that closes it (or the line's end, in a one-line string).
    fn code(&mut self, field: Option<Field>) {
        let depth = field.map(|f| f.depth);
        while let Some(&byte) = self.bytes.get(self.at) {
            if !SIGNIFICANT[usize::from(byte)] {
                let rest = &self.bytes[self.at..];
                self.at += rest.iter().position(|&b| SIGNIFICANT[usize::from(b)]).unwrap_or(rest.len());
                continue;
            }
            match byte {
                b'\n' if field.is_some_and(|f| f.one_line) => return,
                b'\n' if field.is_none() && !self.open.is_empty() && self.defines(self.at + 1) => {
                    self.unclosed.append(&mut self.open);
                }
                b'#' if field.is_none() => {
                    while self.bytes.get(self.at + 1).is_some_and(|&b| b != b'\n') {
                        self.at += 1;
                    }
                }
                b'"' | b'\'' => {
                    self.string();
                    continue;
                }
                b'(' | b'[' | b'{' => self.open.push(self.at),
                b'}' if depth == Some(self.open.len()) => return,
                b')' | b']' | b'}' if depth.is_none_or(|depth| self.open.len() > depth) => {
                    self.open.pop();
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// Whether the line starting at `at` starts a function or class definition.
    fn defines(&self, at: usize) -> bool {
        let rest = &self.bytes[at..];
        let keyword = |rest: &[u8], word: &[u8]| {
            rest.starts_with(word) && rest.get(word.len()).is_some_and(|b| *b == b' ' || *b == b'\t')
        };
        let after_async =
            rest.strip_prefix(b"async").map(|r| r.trim_ascii_start()).filter(|r| r.len() < rest.len() - 5);
        keyword(rest, b"def") || keyword(rest, b"class") || after_async.is_some_and(|r| keyword(r, b"def"))
    }

    /// Read the string starting at its quote, up to past its closing quote (or, for an
    /// unterminated one-line string, up to its line's end).
    fn string(&mut self) {
        let quote = self.bytes[self.at];
        let before = &self.bytes[..self.at];
        let word = before.iter().rev().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        let prefix = &before[before.len() - word..];
        let formatted = prefix.len() <= 2
            && prefix.iter().all(|b| b"rbuftRBUFT".contains(b))
            && prefix.iter().any(|b| b"ftFT".contains(b));
        let triple = self.bytes[self.at..].starts_with(&[quote; 3]);
        self.at += if triple { 3 } else { 1 };
        while let Some(&byte) = self.bytes.get(self.at) {
            match byte {
                b'\\' => self.at += 2,
                b'\n' if !triple => return,
                b'{' if formatted && self.bytes.get(self.at + 1) == Some(&b'{') => self.at += 2,
                b'{' if formatted => {
                    self.at += 1;
                    let depth = self.open.len();
                    self.code(Some(Field { depth, one_line: !triple }));
                    self.open.truncate(depth);
                    if self.bytes.get(self.at) == Some(&b'}') {
                        self.at += 1;
                    }
                }
                _ if byte == quote && (!triple || self.bytes[self.at..].starts_with(&[quote; 3])) => {
                    self.at += if triple { 3 } else { 1 };
                    return;
                }
                _ => self.at += 1,
            }
        }
    }
}

/// The first place nested deeper than `MAX_DEPTH`, reported with the parse errors: the
/// code below it is not analysed, and a reader is told so rather than left to believe it
/// holds nothing to report.
pub fn too_deep(root: Node) -> Option<SyntaxError> {
    let limit = MAX_DEPTH as usize;
    let mut cursor = root.walk();
    let mut depth = 0;
    'walk: loop {
        if depth > limit {
            let message =
                format!("too deeply nested to analyse (more than {limit} levels): what lies deeper is not linted");
            return Some(SyntaxError { offset: cursor.node().start_byte(), message });
        }
        // A subtree of fewer nodes than the levels left cannot reach the limit: a file of
        // ordinary statements is checked by looking at its top-level statements alone.
        let room = limit - depth;
        if cursor.node().descendant_count() > room && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if depth == 0 || !cursor.goto_parent() {
                break 'walk;
            }
            depth -= 1;
        }
    }
    None
}

/// How many error and missing nodes the tree has: a fix must not raise it.
pub fn error_count(root: Node) -> usize {
    if !root.has_error() {
        return 0;
    }
    let mut count = 0;
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            count += 1;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor).filter(|c| c.has_error() || c.is_missing()));
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tree::KindName;

    #[test]
    fn brackets_open_where_a_definition_starts_a_line_are_unclosed() {
        let found = |source: &str| -> Vec<char> {
            unclosed_brackets(source).into_iter().map(|at| char::from(source.as_bytes()[at])).collect()
        };
        let at = |source: &str| unclosed_brackets(source);
        // A call typed as far as its bracket, before the next function.
        let typed = "def f(x):\n    y = g(\n    return x\n\n\n@torch.no_grad()\ndef h():\n    pass\n";
        assert_eq!(at(typed), [typed.find("g(").unwrap() + 1]);
        assert_eq!(found("x = [f(a,\n\nclass C:\n    pass\n"), ['[', '(']);
        assert_eq!(found("@torch.no_grad(\nasync  def f():\n    pass\n"), ['(']);
        // A bracket left open at the end of the file, or closed before the definition,
        // spreads nothing.
        assert_eq!(found("def f():\n    y = g(\n"), []);
        assert_eq!(found("y = (a\n@ b)\ndef f():\n    pass\n"), []);
        assert_eq!(found("y = g(\n    a,\n)\ndef_x = (\ndefine = 1)\n"), []);
        // Brackets in strings, comments and f-strings' text; f-strings' fields.
        let valid = [
            "s = '('  # (\ndef f():\n    pass\n",
            "s = \"\"\"(\ndef g():\n\"\"\"\ndef f():\n    pass\n",
            "s = r'\\'('\ndef f():\n    pass\n",
            "s = f\"{x['(']} {{(\" + f'{y(1)}' + F\"{z[\"a\"]}\"\ndef f():\n    pass\n",
            "s = rf'''{a(\n  b)} ('''\ndef f():\n    pass\n",
            "s = 'unterminated (\ndef f():\n    pass\n",
        ];
        for source in valid {
            assert_eq!(found(source), [], "{source}");
        }
        // An f-string's field ends with its one-line string.
        assert_eq!(found("x = (f\"{a\ndef f():\n    pass\n"), ['(']);
    }

    /// A text that parses without errors has no bracket open where a definition starts
    /// a line (that line would be a syntax error), so `parse_finding_unclosed_brackets`
    /// does not scan it; one that does not is scanned, and its bracket found and blanked.
    #[test]
    fn a_clean_parse_has_no_unclosed_bracket() {
        let mut clean = 0;
        for source in crate::engine::fixture_and_test_sources() {
            let tree = crate::engine::reparse(&source, None).expect("parse");
            if !tree.root_node().has_error() {
                clean += 1;
                assert_eq!(unclosed_brackets(&source), Vec::<usize>::new(), "{source}");
            }
        }
        assert!(clean > 20, "{clean} clean sources");
        let typed = "def f(x):\n    y = g(\n    return x\n\n\ndef h():\n    pass\n";
        let (tree, unclosed) = crate::engine::parse_finding_unclosed_brackets(typed).expect("parse");
        assert_eq!(unclosed, [typed.find("g(").unwrap() + 1]);
        // The definition after it is whole: the bracket was read as a space.
        let last = tree.root_node().named_child(1).expect("def h");
        assert_eq!((last.kind_name(), last.has_error()), ("function_definition", false));
    }

    #[test]
    fn blanked_brackets_keep_every_offset() {
        let source = "é = f(\ndef g(): pass\n";
        let at = unclosed_brackets(source);
        let blanked = blanked(source, &at);
        assert_eq!(blanked, "é = f \ndef g(): pass\n");
        let errors = unclosed_bracket_errors(source, &at);
        assert_eq!(errors, [SyntaxError { offset: at[0], message: "cannot parse: `(` was never closed".to_string() }]);
    }
}
