//! Parse errors as tree-sitter recovers from them, and code nested too deeply to
//! analyse: reported, never fatal. What still parses, and what is nested less deeply, is
//! linted.

use crate::engine::tree;
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
                message: format!("cannot parse: missing `{}`", node.kind()),
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
