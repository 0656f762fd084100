//! Host predicates: what a tree-sitter query cannot say about ancestors. Each walks up
//! from the capture and stops at the enclosing function (that function included), so
//! "inside a loop" never leaks out of a nested `def` or `lambda`.
//!
//! - `(#has-ancestor? @c kind ...)`: an ancestor of one of the kinds.
//! - `(#not-has-ancestor? @c kind ...)`: no ancestor of any of the kinds.
//! - `(#has-ancestor-matching? @c kind "regex")`: an ancestor of that kind whose first
//!   line (a loop's or `with`'s header, a `def` line) matches the regex.

use crate::engine::tree::{self, KindSet};
use regex::Regex;
use tree_sitter::Node;

pub const NAMES: [&str; 3] = ["has-ancestor?", "not-has-ancestor?", "has-ancestor-matching?"];

/// A host predicate compiled once per query pattern.
#[derive(Debug)]
pub enum HostPredicate {
    HasAncestor { capture: u32, kinds: KindSet },
    NotHasAncestor { capture: u32, kinds: KindSet },
    HasAncestorMatching { capture: u32, kind: KindSet, header: Regex },
}

impl HostPredicate {
    /// Compile `(#operator @capture strings...)`; a malformed one is an error that names
    /// it, so a rule with a typo in its query fails its compile test.
    pub fn compile(operator: &str, capture: u32, strings: Vec<String>) -> Result<HostPredicate, String> {
        match operator {
            "has-ancestor?" | "not-has-ancestor?" if strings.is_empty() => {
                Err(format!("#{operator} needs at least one node kind"))
            }
            "has-ancestor?" => Ok(HostPredicate::HasAncestor { capture, kinds: kinds(operator, &strings)? }),
            "not-has-ancestor?" => Ok(HostPredicate::NotHasAncestor { capture, kinds: kinds(operator, &strings)? }),
            "has-ancestor-matching?" => match strings.as_slice() {
                [kind, pattern] => {
                    let kind = kinds(operator, std::slice::from_ref(kind))?;
                    Regex::new(pattern)
                        .map(|header| HostPredicate::HasAncestorMatching { capture, kind, header })
                        .map_err(|e| format!("#{operator}: {e}"))
                }
                _ => Err(format!("#{operator} takes a node kind and a regex")),
            },
            other => Err(format!("unknown predicate #{other} (host predicates: {})", NAMES.join(", "))),
        }
    }

    pub fn capture(&self) -> u32 {
        match self {
            HostPredicate::HasAncestor { capture, .. }
            | HostPredicate::NotHasAncestor { capture, .. }
            | HostPredicate::HasAncestorMatching { capture, .. } => *capture,
        }
    }

    /// Whether the predicate holds for a capture whose ancestors (innermost first, each
    /// with its kind) are `ancestors`.
    pub fn holds<'t>(&self, ancestors: impl Iterator<Item = (Node<'t>, u16)>, source: &str) -> bool {
        let mut ancestors = tree::up_to_function_kinds(ancestors);
        match self {
            HostPredicate::HasAncestor { kinds, .. } => ancestors.any(|(_, kind)| kinds.contains_id(kind)),
            HostPredicate::NotHasAncestor { kinds, .. } => !ancestors.any(|(_, kind)| kinds.contains_id(kind)),
            HostPredicate::HasAncestorMatching { kind, header, .. } => ancestors.any(|(a, a_kind)| {
                kind.contains_id(a_kind) && header.is_match(tree::text(a, source).lines().next().unwrap_or(""))
            }),
        }
    }
}

fn kinds(operator: &str, names: &[String]) -> Result<KindSet, String> {
    KindSet::of(names).map_err(|e| format!("#{operator}: {e}"))
}
