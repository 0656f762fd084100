//! Handlers for running out of memory. OOM010 looks inside them for a retry; OOM006 leaves
//! a `finally` alone when its `try` is one (clearing the cache there runs after a failure,
//! not on every step).

use super::Facts;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

const OOM_ERRORS: [&str; 2] = ["torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError"];

/// `except torch.OutOfMemoryError`, `except torch.cuda.OutOfMemoryError` (also imported,
/// or in a tuple), or `except RuntimeError as e` whose block looks for "out of memory".
pub fn catches_out_of_memory<'t>(facts: &Facts<'t>, handler: Node<'t>) -> bool {
    let source = facts.source;
    let mut cursor = handler.walk();
    let Some(caught) =
        handler.named_children(&mut cursor).find(|c| c.kind_name() != "block" && c.kind_name() != "comment")
    else {
        return false;
    };
    let caught = match caught.kind_name() {
        "as_pattern" => caught.named_child(0).unwrap_or(caught),
        _ => caught,
    };
    let types: Vec<Node<'t>> = match caught.kind_name() {
        "tuple" | "parenthesized_expression" => {
            let mut inner = caught.walk();
            caught.named_children(&mut inner).collect()
        }
        _ => vec![caught],
    };
    let is_oom = |node: &Node<'t>| {
        let text = tree::text(*node, source);
        OOM_ERRORS.contains(&text)
            || facts.qualified_name(*node).is_some_and(|q| OOM_ERRORS.contains(&q.as_str()))
            || (text == "OutOfMemoryError" && facts.index().lookup("OutOfMemoryError", *node).is_none())
    };
    if types.iter().any(is_oom) {
        return true;
    }
    let broad = types.iter().any(|t| matches!(tree::text(*t, source), "RuntimeError" | "Exception"));
    broad && tree::text(handler, source).contains("out of memory")
}
