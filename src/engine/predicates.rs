//! Host predicates: what a tree-sitter query cannot say about ancestors. Each walks up
//! from the capture and stops at the enclosing function (that function included), so
//! "inside a loop" never leaks out of a nested `def` or `lambda`.
//!
//! - `(#has-ancestor? @c kind ...)`: an ancestor of one of the kinds.
//! - `(#not-has-ancestor? @c kind ...)`: no ancestor of any of the kinds.
//! - `(#has-ancestor-matching? @c kind "regex")`: an ancestor of that kind whose first
//!   line (a loop's or `with`'s header, a `def` line) matches the regex.

use crate::engine::tree;
use regex::Regex;
use tree_sitter::{Node, Query, QueryPredicate, QueryPredicateArg};

pub const NAMES: [&str; 3] = ["has-ancestor?", "not-has-ancestor?", "has-ancestor-matching?"];

/// A host predicate compiled once per query pattern.
#[derive(Debug)]
pub enum HostPredicate {
    HasAncestor { capture: u32, kinds: Vec<String> },
    NotHasAncestor { capture: u32, kinds: Vec<String> },
    HasAncestorMatching { capture: u32, kind: String, header: Regex },
}

impl HostPredicate {
    /// Compile the general predicates of one pattern; a malformed one is an error that
    /// names it, so a rule with a typo in its query fails its compile test.
    pub fn compile_all(query: &Query, pattern: usize) -> Result<Vec<HostPredicate>, String> {
        query.general_predicates(pattern).iter().map(HostPredicate::compile).collect()
    }

    fn compile(predicate: &QueryPredicate) -> Result<HostPredicate, String> {
        let operator = &*predicate.operator;
        let (capture, rest) = match predicate.args.split_first() {
            Some((QueryPredicateArg::Capture(c), rest)) => (*c, rest),
            _ => return Err(format!("#{operator} needs a capture as its first argument")),
        };
        let strings: Vec<String> = rest
            .iter()
            .map(|a| match a {
                QueryPredicateArg::String(s) => Ok(s.to_string()),
                QueryPredicateArg::Capture(_) => Err(format!("#{operator} takes node kinds after the capture")),
            })
            .collect::<Result<_, _>>()?;
        match operator {
            "has-ancestor?" | "not-has-ancestor?" if strings.is_empty() => {
                Err(format!("#{operator} needs at least one node kind"))
            }
            "has-ancestor?" => Ok(HostPredicate::HasAncestor { capture, kinds: strings }),
            "not-has-ancestor?" => Ok(HostPredicate::NotHasAncestor { capture, kinds: strings }),
            "has-ancestor-matching?" => match strings.as_slice() {
                [kind, pattern] => Regex::new(pattern)
                    .map(|header| HostPredicate::HasAncestorMatching { capture, kind: kind.clone(), header })
                    .map_err(|e| format!("#{operator}: {e}")),
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

    pub fn holds(&self, node: Node, source: &str) -> bool {
        let mut ancestors = tree::ancestors_in_function(node);
        match self {
            HostPredicate::HasAncestor { kinds, .. } => ancestors.any(|a| kinds.iter().any(|k| k == a.kind())),
            HostPredicate::NotHasAncestor { kinds, .. } => !ancestors.any(|a| kinds.iter().any(|k| k == a.kind())),
            HostPredicate::HasAncestorMatching { kind, header, .. } => ancestors
                .any(|a| a.kind() == kind && header.is_match(tree::text(a, source).lines().next().unwrap_or(""))),
        }
    }
}
