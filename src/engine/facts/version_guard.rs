//! Code kept for old PyTorch releases. Rules that recommend a modern spelling or argument
//! (OOM003's `torch.amp`, OOM005's `use_reentrant=`) stay silent there: the "fix" would
//! break exactly the release the branch is for.

use crate::engine::tree;
use tree_sitter::Node;

/// Whether `node` sits under a version or feature test (`if torch_version < ...`,
/// `if is_torch_version(">=", "1.11.0"): ... else: ...`, `hasattr(torch, "amp")`) or in the
/// `except AttributeError` / `ImportError` / `TypeError` fallback after trying the modern API.
pub fn old_torch_fallback(source: &str, node: Node) -> bool {
    tree::ancestors(node).any(|a| match a.kind() {
        "if_statement" | "elif_clause" | "conditional_expression" | "while_statement" => {
            let condition = match a.kind() {
                "conditional_expression" => a.named_child(1),
                _ => a.child_by_field_name("condition"),
            };
            condition.is_some_and(|c| {
                let text = tree::text(c, source).to_ascii_lowercase();
                text.contains("version") || text.contains("hasattr(")
            })
        }
        "except_clause" => {
            let caught = a.named_child(0).map(|c| tree::text(c, source)).unwrap_or("");
            ["AttributeError", "ImportError", "TypeError", "ModuleNotFoundError"].iter().any(|e| caught.contains(e))
        }
        _ => false,
    })
}
