//! Parse errors as tree-sitter recovers from them: reported, never fatal. What still
//! parses is linted.

use crate::engine::tree;
use tree_sitter::Node;

/// Files with many errors are usually not Python at all; a few locations suffice.
const MAX_REPORTED: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
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
            found.push(SyntaxError { offset: node.start_byte(), message: format!("missing `{}`", node.kind()) });
            continue;
        }
        if node.is_error() {
            let snippet: String = tree::text(node, source).chars().take(30).collect();
            let snippet = snippet.lines().next().unwrap_or("").trim();
            let message =
                if snippet.is_empty() { "unexpected input".to_string() } else { format!("unexpected `{snippet}`") };
            found.push(SyntaxError { offset: node.start_byte(), message });
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).filter(|c| c.has_error()).collect();
        stack.extend(children.into_iter().rev());
    }
    found
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
