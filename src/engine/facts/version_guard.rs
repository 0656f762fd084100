//! Code kept for old PyTorch releases. Rules that recommend a modern spelling or argument
//! (OOM003's `torch.amp`, OOM005's `use_reentrant=`) stay silent there: the "fix" would
//! break exactly the release the branch is for.

use crate::engine::facts::Facts;
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// Whether `node` sits under a version or feature test (`if torch_version < ...`,
/// `if is_torch_version(">=", "1.11.0"): ... else: ...`, `hasattr(torch, "amp")`) or in the
/// `except AttributeError` / `ImportError` / `TypeError` fallback after trying the modern API.
///
/// The answer is kept per node climbed through, so the questions asked from deep inside
/// nested code (one per nested call) share their climb instead of each going up to the
/// module.
pub fn old_torch_fallback(facts: &Facts, node: Node) -> bool {
    let mut known = facts.under_version_guard.borrow_mut();
    let mut climbed = Vec::new();
    let mut current = node;
    let answer = loop {
        if let Some(&answer) = known.get(&current.id()) {
            break answer;
        }
        let Some(parent) = tree::parent(current) else { break false };
        climbed.push(current.id());
        if is_guard(facts.source, parent) {
            break true;
        }
        current = parent;
    };
    known.extend(climbed.into_iter().map(|id| (id, answer)));
    answer
}

/// A test of the PyTorch version or of a feature, or a handler for what an old release lacks.
fn is_guard(source: &str, node: Node) -> bool {
    match node.kind_name() {
        "if_statement" | "elif_clause" | "conditional_expression" | "while_statement" => {
            let condition = match node.kind_name() {
                "conditional_expression" => node.named_child(1),
                _ => node.child_by_field_id(field::CONDITION),
            };
            condition.is_some_and(|c| {
                let text = tree::text(c, source).to_ascii_lowercase();
                text.contains("version") || text.contains("hasattr(")
            })
        }
        "except_clause" => {
            let caught = node.named_child(0).map(|c| tree::text(c, source)).unwrap_or("");
            ["AttributeError", "ImportError", "TypeError", "ModuleNotFoundError"].iter().any(|e| caught.contains(e))
        }
        _ => false,
    }
}
