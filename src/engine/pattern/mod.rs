//! The rules' patterns: tree-sitter's query language (the part of it `queries/` uses),
//! run by a matcher of our own over one walk of the tree.
//!
//! Why not tree-sitter's query cursor: per node it visits, it costs about five times a
//! plain walk of the tree (it works out each node's field and later siblings and
//! advances every unfinished match), and on training scripts it took 0.6 times as long
//! as parsing them, whatever the patterns. Every pattern here starts at a node of a
//! named kind and looks a few levels below it, so a walk that tries, at each node, only
//! the patterns rooted at its kind finds the same matches for a fraction of that.
//!
//! What is understood: node patterns `(kind child...)`, `(_)`, `_`, anonymous nodes
//! `"+="`, fields `name: pattern`, alternations `[...]`, captures `@name`, anchors `.`
//! (first, between and last children), a grouping around one pattern and its
//! predicates, the text predicates `#eq?`, `#match?`, `#any-of?` (and their `#not-`
//! forms) and the host predicates of `predicates.rs`. Anything else (quantifiers,
//! negated fields, sibling sequences, a pattern rooted at a wildcard) is a compile
//! error, never a silently different match.

mod matching;
mod parse;

use crate::engine::children::Child;
use crate::engine::predicates::HostPredicate;
use crate::engine::tree::KindSet;
use std::num::NonZeroU16 as FieldId;

/// Every pattern of a set of rules, indexed by the kind of node each starts at.
#[derive(Debug)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    /// Capture names, indexed by capture number (shared by all patterns).
    capture_names: Vec<String>,
    /// By node kind id: the patterns whose root can be a node of that kind, in order.
    by_root: Vec<Vec<u32>>,
    /// The texts patterns require (`Pattern::required`), each once.
    literals: Vec<String>,
    /// Whether a pattern starts at an anonymous node (a token such as `"+="`).
    roots_anonymous: bool,
}

#[derive(Debug)]
pub struct Pattern {
    /// Which of the rules given to `PatternSet::compile` the pattern belongs to.
    pub rule: usize,
    root: Step,
    text: Vec<TextPredicate>,
    /// Asked by the engine of each match the text predicates let through.
    pub host: Vec<HostPredicate>,
    /// The pattern matches only where its root's text holds one of these (numbers in
    /// `PatternSet::literals`); empty where it requires no text. Read from a predicate
    /// that fixes the whole text of a capture every match has (`#eq? @method "append"`):
    /// that node lies inside the root, so a root whose text lacks them is not tried.
    required: Vec<u32>,
    /// What the root's children must hold for the pattern to match: for each step below
    /// the root that names kinds, a child of one of them (holding the step's field, if it
    /// names one). Checked on the children the walk listed before the pattern is tried:
    /// most calls are not `f(x)` with an `x`, most assignments do not assign a call.
    needs: Vec<(Option<FieldId>, KindSet)>,
    /// Text predicates (numbers in `text`) on a capture that only a step for a child of
    /// the root in a field binds: the root's child in that field must hold the predicate's
    /// text for the pattern to match. Checked with `needs`, on the text alone: most calls
    /// have a callee named like nothing `(#match? @callee ...)` asks for, and matching the
    /// whole pattern first, to fail on its text at the end, cost ten times as much.
    child_texts: Vec<(FieldId, usize)>,
}

impl Pattern {
    /// Whether a node with these children may match: each of `needs` is met, and each of
    /// `child_texts` holds of a child in its field.
    fn may_match(&self, children: &[Child], source: &str) -> bool {
        self.needs.iter().all(|(field, kinds)| {
            children.iter().any(|child| (field.is_none() || child.field == *field) && kinds.contains_id(child.kind))
        }) && self.child_texts.iter().all(|&(field, predicate)| {
            children.iter().any(|child| {
                child.field == Some(field) && self.text[predicate].holds_of(&source[child.node.byte_range()])
            })
        })
    }
}

/// One node of a pattern.
#[derive(Debug)]
struct Step {
    test: Test,
    /// The field the node must hold in its parent (`function: ...`).
    field: Option<FieldId>,
    captures: Vec<u32>,
    /// Patterns for the node's children, matched in order, with gaps unless anchored.
    children: Vec<Step>,
    /// An anchor before it: the next named child after the previous step's node (the
    /// first named child, for the first step).
    immediate: bool,
    /// An anchor after it: no named child follows.
    last: bool,
}

#[derive(Debug)]
enum Test {
    /// `(kind)` or `"kind"`.
    Kinds(KindSet),
    /// `(_)`: any named node but an error.
    Named,
    /// `_`: any node but an error.
    Any,
    /// `[...]`: the first alternative that matches, each tried in turn.
    Alternatives(Vec<Step>),
}

#[derive(Debug)]
enum TextPredicate {
    Eq { capture: u32, to: Operand, positive: bool },
    Match { capture: u32, regex: regex_automata::meta::Regex, positive: bool },
    AnyOf { capture: u32, values: Vec<String>, positive: bool },
}

#[derive(Debug, Clone)]
enum Operand {
    Text(String),
    Capture(u32),
}

impl PatternSet {
    /// Compile each `(rule, query)`; the error says what is wrong and, through `rule`,
    /// whose query it is (the caller names it).
    pub fn compile(queries: &[(usize, &str)]) -> Result<PatternSet, (usize, String)> {
        let mut capture_names = Vec::new();
        let mut patterns = Vec::new();
        let mut literals: Vec<String> = Vec::new();
        for &(rule, query) in queries {
            let parsed = parse::patterns(query, &mut capture_names).map_err(|e| (rule, e))?;
            for (root, text, host) in parsed {
                let required = required_texts(&root, &text)
                    .into_iter()
                    .map(|literal| match literals.iter().position(|known| *known == literal) {
                        Some(known) => known as u32,
                        None => {
                            literals.push(literal);
                            literals.len() as u32 - 1
                        }
                    })
                    .collect();
                let needs = root
                    .children
                    .iter()
                    .filter_map(|step| Some((step.field, KindSet::of_ids(&step.root_kinds()?))))
                    .collect();
                let child_texts = child_texts(&root, &text);
                patterns.push(Pattern { rule, root, text, host, required, needs, child_texts });
            }
        }
        let kinds = crate::engine::language().node_kind_count();
        let mut by_root = vec![Vec::new(); kinds];
        for (index, pattern) in patterns.iter().enumerate() {
            let Some(roots) = pattern.root.root_kinds() else {
                return Err((pattern.rule, "a pattern must start at a node of a named kind".to_string()));
            };
            for kind in roots {
                by_root[kind as usize].push(index as u32);
            }
        }
        let language = crate::engine::language();
        let roots_anonymous =
            (0..kinds).any(|kind| !by_root[kind].is_empty() && !language.node_kind_is_named(kind as u16));
        Ok(PatternSet { patterns, capture_names, by_root, literals, roots_anonymous })
    }

    pub fn capture_names(&self) -> &[String] {
        &self.capture_names
    }

    pub fn pattern(&self, index: usize) -> &Pattern {
        &self.patterns[index]
    }
}

/// The texts one of which a match's root must hold (see `Pattern::required`): those of the
/// first positive `#eq?` against a string or `#any-of?` on a capture that every match
/// has (none inside an alternative, which another match may take instead); none when
/// there is no such predicate, or when one of its texts is empty (held anywhere).
fn required_texts(root: &Step, text: &[TextPredicate]) -> Vec<String> {
    let mut every_match = Vec::new();
    root.captures_of_every_match(&mut every_match);
    let required = text.iter().find_map(|predicate| match predicate {
        TextPredicate::Eq { capture, to: Operand::Text(value), positive: true } if every_match.contains(capture) => {
            Some(vec![value.clone()])
        }
        TextPredicate::AnyOf { capture, values, positive: true } if every_match.contains(capture) => {
            Some(values.clone())
        }
        _ => None,
    });
    required.filter(|texts| texts.iter().all(|t| !t.is_empty())).unwrap_or_default()
}

/// The text predicates of `child_texts` (see `Pattern::child_texts`): each on one capture
/// (of `#eq?` against a string, `#match?`, `#any-of?`, positive or not) that only one step
/// binds in the whole pattern, a step for a child of the root in a field.
fn child_texts(root: &Step, text: &[TextPredicate]) -> Vec<(FieldId, usize)> {
    let mut bound = Vec::new();
    root.every_capture(&mut bound);
    text.iter()
        .enumerate()
        .filter_map(|(at, predicate)| {
            let capture = predicate.only_capture()?;
            if bound.iter().filter(|&&c| c == capture).count() != 1 {
                return None;
            }
            let step = root.children.iter().find(|step| step.captures.contains(&capture))?;
            Some((step.field?, at))
        })
        .collect()
}

impl TextPredicate {
    /// The one capture the predicate reads, when it compares it with fixed text.
    fn only_capture(&self) -> Option<u32> {
        match self {
            TextPredicate::Eq { capture, to: Operand::Text(_), .. }
            | TextPredicate::Match { capture, .. }
            | TextPredicate::AnyOf { capture, .. } => Some(*capture),
            TextPredicate::Eq { to: Operand::Capture(_), .. } => None,
        }
    }
}

impl Step {
    /// Every capture of this step and of the steps below it, alternatives included, once
    /// per step that binds it.
    fn every_capture(&self, into: &mut Vec<u32>) {
        into.extend(&self.captures);
        for child in &self.children {
            child.every_capture(into);
        }
        if let Test::Alternatives(alternatives) = &self.test {
            for alternative in alternatives {
                alternative.every_capture(into);
            }
        }
    }

    /// The captures of this step and of the steps below it outside alternatives: those
    /// every match of the step has.
    fn captures_of_every_match(&self, into: &mut Vec<u32>) {
        into.extend(&self.captures);
        for child in &self.children {
            child.captures_of_every_match(into);
        }
    }

    /// The kinds of node this step can match, or `None` for a wildcard.
    fn root_kinds(&self) -> Option<Vec<u16>> {
        match &self.test {
            Test::Kinds(kinds) => Some(kinds.ids().collect()),
            Test::Named | Test::Any => None,
            Test::Alternatives(alternatives) => {
                let mut kinds = Vec::new();
                for alternative in alternatives {
                    kinds.extend(alternative.root_kinds()?);
                }
                kinds.sort_unstable();
                kinds.dedup();
                Some(kinds)
            }
        }
    }
}

pub use matching::{Ancestry, Captures, Matches, Walked};

#[cfg(test)]
mod tests {
    use super::*;

    /// A text predicate is checked on a child's text before matching only when the one
    /// step that binds its capture is for a child of the root in a field.
    #[test]
    fn child_texts_are_read_from_captures_of_the_roots_children_alone() {
        let child_texts = |query: &str| {
            let set = PatternSet::compile(&[(0, query)]).unwrap_or_else(|(_, e)| panic!("{e}"));
            set.pattern(0).child_texts.clone()
        };
        assert_eq!(
            child_texts("(call function: [(identifier) (attribute)] @f (#match? @f \"net$\")) @c"),
            [(FieldId::new(crate::engine::field::FUNCTION).expect("a field"), 0)]
        );
        for query in [
            "(call function: [(identifier) @f (attribute)] (#eq? @f \"g\")) @c",
            "(call function: (attribute attribute: (identifier) @m) (#eq? @m \"append\")) @c",
            "(call function: (identifier) @f arguments: (argument_list (identifier) @f) (#eq? @f \"x\")) @c",
            "(assignment left: (identifier) @l right: (identifier) @r (#eq? @l @r)) @a",
            "((call (identifier) @f) @c (#eq? @f \"g\"))",
        ] {
            assert!(child_texts(query).is_empty(), "{query}");
        }
    }
}
