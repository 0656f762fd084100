//! Resolves the dotted path a name or attribute chain stands for, through every import
//! spelling (`import torch as T`, `from torch.cuda import amp`, `import torch.cuda.amp
//! as amp`) and alias assignments (`autocast = torch.cuda.amp.autocast`).

use super::index::{BindingKind, FileIndex};
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// Alias chains longer than this are not followed (and cycles end here).
const MAX_ALIAS_DEPTH: usize = 6;

/// `torch.cuda.amp.autocast` for `autocast` after `from torch.cuda.amp import autocast`;
/// `None` for a local variable, a parameter or anything not imported.
pub fn qualified_name<'t>(index: &FileIndex<'t>, node: Node<'t>, source: &str) -> Option<String> {
    resolve(index, node, source, 0)
}

fn resolve<'t>(index: &FileIndex<'t>, node: Node<'t>, source: &str, depth: usize) -> Option<String> {
    if depth > MAX_ALIAS_DEPTH {
        return None;
    }
    match node.kind_name() {
        "identifier" => {
            let binding = index.lookup(tree::text(node, source), node)?;
            match binding.kind {
                BindingKind::Import => binding.import_path.clone(),
                BindingKind::Value(value) if matches!(value.kind_name(), "identifier" | "attribute") => {
                    resolve(index, value, source, depth + 1)
                }
                _ => None,
            }
        }
        "attribute" => {
            // The chain `a.b.c` is walked down to `a` in a loop: recursing per link, a
            // generated chain of many thousand links overflows the stack, and building
            // the path link by link copies it once per link.
            let mut links = Vec::new();
            let mut base = node;
            while base.kind_name() == "attribute" {
                links.push(tree::text(base.child_by_field_id(field::ATTRIBUTE)?, source));
                base = tree::unparenthesize(base.child_by_field_id(field::OBJECT)?);
            }
            let mut path = resolve(index, base, source, depth)?;
            for link in links.iter().rev() {
                path.push('.');
                path.push_str(link);
            }
            Some(path)
        }
        "parenthesized_expression" => resolve(index, tree::unparenthesize(node), source, depth),
        _ => None,
    }
}
