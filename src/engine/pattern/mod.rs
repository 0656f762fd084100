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
}

impl Pattern {
    /// Whether a node with these children may match: each of `needs` is met.
    fn may_match(&self, children: &[Child]) -> bool {
        self.needs.iter().all(|(field, kinds)| {
            children.iter().any(|child| (field.is_none() || child.field == *field) && kinds.contains_id(child.kind))
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
                patterns.push(Pattern { rule, root, text, host, required, needs });
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

impl Step {
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
