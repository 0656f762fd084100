//! Building blocks for fixes, computed from the tree: the file's `torch` import (added
//! once per file when missing), its quote style and indentation, argument insertion and
//! re-indentation that leaves multi-line strings alone.

use super::Edit;
use crate::engine::facts::Facts;
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// The name the module binds `torch` to at top level (`torch`, or `T` after
/// `import torch as T`), and the edit that adds `import torch` when there is none.
/// The edit is the same for every fix in a file, so it is applied once.
pub fn torch_module(facts: &Facts) -> (String, Option<Edit>) {
    let root = facts.root;
    let mut cursor = root.walk();
    for statement in root.named_children(&mut cursor).filter(|s| s.kind_name() == "import_statement") {
        let mut names = statement.walk();
        for name in statement.children_by_field_id(field::id(field::NAME), &mut names) {
            match name.kind_name() {
                "dotted_name" if facts.text(name) == "torch" || facts.text(name).starts_with("torch.") => {
                    return ("torch".to_string(), None);
                }
                "aliased_import" => {
                    let path = name.child_by_field_id(field::NAME).map(|n| facts.text(n));
                    if path == Some("torch")
                        && let Some(alias) = name.child_by_field_id(field::ALIAS)
                    {
                        return (facts.text(alias).to_string(), None);
                    }
                }
                _ => {}
            }
        }
    }
    ("torch".to_string(), Some(Edit::insert(import_position(facts), "import torch\n")))
}

/// Where a new top-level import goes: after the leading imports (and any module
/// docstring or `from __future__` import), at the start of a line.
fn import_position(facts: &Facts) -> usize {
    let root = facts.root;
    let mut after = None;
    let mut cursor = root.walk();
    for (i, statement) in root.named_children(&mut cursor).enumerate() {
        let is_docstring = i == 0
            && statement.kind_name() == "expression_statement"
            && statement.named_child(0).is_some_and(|s| s.kind_name() == "string");
        match statement.kind_name() {
            "import_statement" | "import_from_statement" | "future_import_statement" => after = Some(statement),
            "comment" => {}
            _ if is_docstring => after = Some(statement),
            _ => break,
        }
    }
    match after {
        Some(statement) => line_end_after(facts.source, statement.end_byte()),
        None => 0,
    }
}

/// The offset just past the line ending that follows `offset` (or the end of the text).
fn line_end_after(source: &str, offset: usize) -> usize {
    source[offset..].find('\n').map_or(source.len(), |i| offset + i + 1)
}

/// A string literal in the file's quote style.
pub fn string_literal(facts: &Facts, value: &str) -> String {
    let quote = facts.preferred_quote();
    format!("{quote}{value}{quote}")
}

/// The whitespace that starts the line containing `offset`.
pub fn line_indent(source: &str, offset: usize) -> &str {
    let start = source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &source[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// One level of indentation as the file writes it: the body of `block_owner` (a loop,
/// `def` ...) minus the owner's own indentation; four spaces when it cannot tell.
pub fn indent_unit(source: &str, block_owner: Node) -> String {
    let own = line_indent(source, block_owner.start_byte());
    let body = block_owner
        .child_by_field_id(field::BODY)
        .filter(|b| b.start_position().row > block_owner.start_position().row);
    match body.map(|b| line_indent(source, b.start_byte())) {
        Some(inner) if inner.len() > own.len() && inner.starts_with(own) => inner[own.len()..].to_string(),
        _ => "    ".to_string(),
    }
}

/// Edits that indent every line of `node` (except its first, which the caller places)
/// by `unit`, leaving blank lines and lines that continue a multi-line string alone.
pub fn indent_lines(facts: &Facts, node: Node, unit: &str) -> Vec<Edit> {
    let source = facts.source;
    let mut edits = Vec::new();
    let mut offset = node.start_byte();
    while let Some(newline) = source[offset..node.end_byte()].find('\n') {
        let line_start = offset + newline + 1;
        offset = line_start;
        if line_start >= node.end_byte() {
            break;
        }
        let rest = &source[line_start..];
        let blank = rest.lines().next().is_none_or(|l| l.trim().is_empty());
        if blank || inside_string(facts.root, line_start) {
            continue;
        }
        edits.push(Edit::insert(line_start, unit));
    }
    edits
}

fn inside_string(root: Node, offset: usize) -> bool {
    let Some(node) = root.descendant_for_byte_range(offset, offset) else { return false };
    std::iter::once(node)
        .chain(tree::ancestors(node))
        .any(|n| matches!(n.kind_name(), "string" | "string_content") && n.start_byte() < offset)
}

/// Insert `argument` as the first argument of `call`.
pub fn prepend_argument(call: Node, argument: &str) -> Option<Edit> {
    let args = call.child_by_field_id(field::ARGUMENTS).filter(|a| a.kind_name() == "argument_list")?;
    let has_args = args.named_child_count() > 0;
    let content = if has_args { format!("{argument}, ") } else { argument.to_string() };
    Some(Edit::insert(args.start_byte() + 1, content))
}

/// Insert `argument` as the last argument of `call`.
pub fn append_argument(source: &str, call: Node, argument: &str) -> Option<Edit> {
    let args = call.child_by_field_id(field::ARGUMENTS).filter(|a| a.kind_name() == "argument_list")?;
    let close = args.end_byte() - 1;
    let inside = source[args.start_byte() + 1..close].trim_end();
    let content =
        if inside.is_empty() || inside.ends_with(',') { argument.to_string() } else { format!(", {argument}") };
    let at = args.start_byte() + 1 + inside.len();
    let content = if inside.ends_with(',') { format!(" {content}") } else { content };
    Some(Edit::insert(at, content))
}
