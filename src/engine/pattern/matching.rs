//! Finding the matches of a `PatternSet` in a tree: one walk in document order; at each
//! node, the patterns rooted at its kind, each matched by trying its children's patterns
//! against the node's children (every way they fit, as tree-sitter does, each distinct
//! set of captures reported once).

use super::{Operand, PatternSet, Step, Test, TextPredicate};
use crate::engine::tree::{self, KindSet, StatementWalk};
use std::cell::RefCell;
use std::num::NonZeroU16 as FieldId;
use std::ops::Range;
use std::rc::Rc;
use std::sync::OnceLock;
use tree_sitter::Node;

pub type Captures<'t> = Vec<(u32, Node<'t>)>;

/// Where and how deep matches may start.
pub struct Matches<'a> {
    pub patterns: &'a PatternSet,
    /// Only matches whose root intersects one of these ranges (the whole file without).
    pub ranges: Option<&'a [Range<usize>]>,
    /// No match starts deeper than this many levels below the root.
    pub max_start_depth: u32,
}

impl Matches<'_> {
    /// Call `found(pattern, captures, ancestry)` for each match of a pattern whose rule
    /// is `active`, in document order of the matches' roots, whose text predicates hold.
    /// Returns the tree's identifiers, in document order, when the walk went into every
    /// node (no ranges, nothing below the depth limit): the facts look names up among
    /// them instead of searching the text for each name and descending to it.
    pub fn for_each<'t>(
        &self,
        root: Node<'t>,
        source: &str,
        active: &[bool],
        found: &mut dyn FnMut(usize, Captures<'t>, &Ancestry<'_, 't>),
    ) -> Option<Vec<Node<'t>>> {
        let identifier = identifier_kinds();
        let mut identifiers = Vec::new();
        let mut complete = self.ranges.is_none();
        let mut cursor = root.walk();
        let mut depth = 0u32;
        // The nodes the walk is inside of, outermost first.
        let mut path: Vec<Node<'t>> = Vec::new();
        let mut captures = Vec::new();
        let mut seen: Vec<Captures<'t>> = Vec::new();
        let mut texts = RequiredTexts::new(&self.patterns.literals, source);
        let known = KnownChildren::default();
        // The top-level statement being walked, the parents of its nodes so far, and
        // whether the walk has gone into all of it (it skips what lies outside the ranges
        // and below the depth limit).
        let mut statement: Option<(Node<'t>, StatementWalk, bool)> = None;
        'walk: loop {
            let node = cursor.node();
            if depth == 1 {
                offer(statement.take());
                statement = Some((node, StatementWalk::default(), true));
            }
            if let Some((_, parents, _)) = statement.as_mut() {
                parents.visit(node);
            }
            // Asked once: the kind id is looked up through the grammar's aliases.
            let kind = node.kind_id();
            if identifier.contains_id(kind) {
                identifiers.push(node);
            }
            let inside = self.ranges.is_none_or(|ranges| ranges.iter().any(|range| intersects(node, range)));
            if inside {
                let candidates = self.patterns.by_root.get(kind as usize).map_or(&[][..], |p| &p[..]);
                known.forget();
                for &index in candidates {
                    let pattern = &self.patterns.patterns[index as usize];
                    if !active.get(pattern.rule).copied().unwrap_or(false) || !texts.one_inside(&pattern.required, node)
                    {
                        continue;
                    }
                    match_node(&pattern.root, node, &known, &mut captures, &mut |captures| {
                        if !seen.contains(&*captures) && pattern.text.iter().all(|p| p.holds(captures, source)) {
                            seen.push(captures.clone());
                        }
                    });
                    for captures in seen.drain(..) {
                        found(index as usize, captures, &Ancestry { root: node, above: &path });
                    }
                }
            }
            if inside && depth < self.max_start_depth && cursor.goto_first_child() {
                if let Some((_, parents, _)) = statement.as_mut() {
                    parents.descend(node);
                }
                depth += 1;
                path.push(node);
                continue;
            }
            let leaf = node.child_count() == 0;
            complete &= leaf;
            if let Some((_, _, whole)) = statement.as_mut() {
                *whole &= leaf;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if depth == 0 || !cursor.goto_parent() {
                    break 'walk;
                }
                depth -= 1;
                path.pop();
                if depth >= 1
                    && let Some((_, parents, _)) = statement.as_mut()
                {
                    parents.ascend();
                }
            }
        }
        offer(statement);
        complete.then_some(identifiers)
    }
}

/// The kind ids spelled `identifier` (keywords used as names are aliased to it).
fn identifier_kinds() -> &'static KindSet {
    static IDENTIFIER: OnceLock<KindSet> = OnceLock::new();
    IDENTIFIER.get_or_init(|| KindSet::of(&["identifier"]).expect("the grammar has identifiers"))
}

/// Where the texts patterns require (`PatternSet::literals`) occur in one file, each
/// searched for the first time a pattern asks: a search of the text is far cheaper than
/// trying a pattern at every call.
struct RequiredTexts<'a> {
    literals: &'a [String],
    source: &'a str,
    /// By literal: every place it starts, overlapping ones included, once searched.
    found: Vec<Option<Vec<usize>>>,
}

impl<'a> RequiredTexts<'a> {
    fn new(literals: &'a [String], source: &'a str) -> RequiredTexts<'a> {
        RequiredTexts { literals, source, found: vec![None; literals.len()] }
    }

    /// Whether `node`'s text holds one of `required` (true when nothing is required).
    fn one_inside(&mut self, required: &[u32], node: Node) -> bool {
        required.is_empty()
            || required.iter().any(|&literal| {
                let text = &self.literals[literal as usize];
                let source = self.source;
                let starts = self.found[literal as usize].get_or_insert_with(|| {
                    let finder = memchr::memmem::Finder::new(text);
                    let mut starts = Vec::new();
                    let mut from = 0;
                    while let Some(at) = finder.find(&source.as_bytes()[from..]) {
                        starts.push(from + at);
                        from += at + 1;
                    }
                    starts
                });
                let first = starts.partition_point(|&at| at < node.start_byte());
                starts.get(first).is_some_and(|&at| at + text.len() <= node.end_byte())
            })
    }
}

/// Hand a statement's parents to the parent index when the walk went into all of it.
fn offer(statement: Option<(Node, StatementWalk, bool)>) {
    if let Some((statement, parents, true)) = statement {
        tree::offer_parents(statement, parents);
    }
}

/// Where a match stands in the tree: its root and the nodes the walk was inside of. A
/// host predicate climbs from a capture to its enclosing function for every match, and
/// the walk knows the way up without asking the tree (which descends from its root for
/// each parent) or a parent index.
pub struct Ancestry<'a, 't> {
    root: Node<'t>,
    /// The root's ancestors, outermost first.
    above: &'a [Node<'t>],
}

impl<'t> Ancestry<'_, 't> {
    /// The ancestors of `node`, a node of the match (the root or below it), innermost
    /// first.
    pub fn of(&self, node: Node<'t>) -> impl Iterator<Item = Node<'t>> + '_ {
        // From the root down to `node`'s parent: a few levels, a pattern's depth.
        let mut inside = Vec::new();
        let mut at = self.root;
        while at.id() != node.id() {
            inside.push(at);
            match at.child_with_descendant(node) {
                Some(next) => at = next,
                None => break,
            }
        }
        let above = if at.id() == node.id() {
            self.above
        } else {
            // Not below the root after all: the tree's own answer.
            inside = crate::engine::tree::ancestors(node).collect();
            inside.reverse();
            &[][..]
        };
        inside.into_iter().rev().chain(above.iter().rev().copied())
    }
}

/// As tree-sitter's byte range: a node overlapping it, or an empty node at its start.
fn intersects(node: Node, range: &Range<usize>) -> bool {
    let (start, end) = (node.start_byte(), node.end_byte());
    (end > range.start || (start == end && end == range.start)) && start < range.end
}

/// Match `step` at `node` (its field, if any, already checked) and, for each way it
/// matches, call `then` with the captures so far.
fn match_node<'t>(
    step: &Step,
    node: Node<'t>,
    known: &KnownChildren<'t>,
    captures: &mut Captures<'t>,
    then: &mut dyn FnMut(&mut Captures<'t>),
) {
    match &step.test {
        Test::Alternatives(alternatives) => {
            for alternative in alternatives {
                match_node(alternative, node, known, captures, &mut |captures| {
                    finish(step, node, known, captures, then)
                });
            }
        }
        Test::Kinds(kinds) if !kinds.contains(node) => {}
        Test::Named if !node.is_named() || node.is_error() => {}
        Test::Any if node.is_error() => {}
        _ => finish(step, node, known, captures, then),
    }
}

/// `step`'s node matched: take its captures and match its children's patterns.
fn finish<'t>(
    step: &Step,
    node: Node<'t>,
    known: &KnownChildren<'t>,
    captures: &mut Captures<'t>,
    then: &mut dyn FnMut(&mut Captures<'t>),
) {
    let before = captures.len();
    captures.extend(step.captures.iter().map(|&capture| (capture, node)));
    if step.children.is_empty() {
        then(captures);
    } else {
        let children = known.of(node);
        match_children(&step.children, &children, 0, None, known, captures, then);
    }
    captures.truncate(before);
}

#[derive(Clone, Copy)]
struct Child<'t> {
    node: Node<'t>,
    field: Option<FieldId>,
}

/// The children of the nodes the patterns at one root looked into: a dozen patterns
/// start at every call, and each would otherwise list the call's children again.
#[derive(Default)]
pub(super) struct KnownChildren<'t> {
    lists: RefCell<Vec<(usize, Rc<[Child<'t>]>)>>,
}

impl<'t> KnownChildren<'t> {
    fn of(&self, node: Node<'t>) -> Rc<[Child<'t>]> {
        if let Some((_, known)) = self.lists.borrow().iter().find(|(id, _)| *id == node.id()) {
            return known.clone();
        }
        let mut found = Vec::with_capacity(node.child_count() as usize);
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                found.push(Child { node: cursor.node(), field: cursor.field_id() });
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        let found: Rc<[Child<'t>]> = found.into();
        self.lists.borrow_mut().push((node.id(), found.clone()));
        found
    }

    fn forget(&self) {
        self.lists.borrow_mut().clear();
    }
}

/// Match `steps` against `children[from..]`, in order; `previous` is the child the step
/// before matched (an anchored step must match the next named child after it).
fn match_children<'t>(
    steps: &[Step],
    children: &[Child<'t>],
    from: usize,
    previous: Option<usize>,
    known: &KnownChildren<'t>,
    captures: &mut Captures<'t>,
    then: &mut dyn FnMut(&mut Captures<'t>),
) {
    let Some((step, rest)) = steps.split_first() else {
        then(captures);
        return;
    };
    let candidates = if step.immediate {
        let after = previous.map_or(0, |p| p + 1);
        match (after..children.len()).find(|&at| children[at].node.is_named()) {
            Some(at) => at..at + 1,
            None => return,
        }
    } else {
        from..children.len()
    };
    for at in candidates {
        let child = &children[at];
        if step.field.is_some() && child.field != step.field {
            continue;
        }
        if step.last && children[at + 1..].iter().any(|c| c.node.is_named()) {
            continue;
        }
        match_node(step, child.node, known, captures, &mut |captures| {
            match_children(rest, children, at + 1, Some(at), known, captures, then)
        });
    }
}

impl TextPredicate {
    fn holds(&self, captures: &Captures, source: &str) -> bool {
        let text_of = |capture: u32| captures.iter().find(|(c, _)| *c == capture).map(|(_, n)| &source[n.byte_range()]);
        match self {
            TextPredicate::Eq { capture, to, positive } => {
                let Some(text) = text_of(*capture) else { return true };
                let other = match to {
                    Operand::Text(value) => Some(value.as_str()),
                    Operand::Capture(other) => text_of(*other),
                };
                other.is_none_or(|other| (text == other) == *positive)
            }
            TextPredicate::Match { capture, regex, positive } => {
                text_of(*capture).is_none_or(|text| regex.is_match(text) == *positive)
            }
            TextPredicate::AnyOf { capture, values, positive } => {
                text_of(*capture).is_none_or(|text| values.iter().any(|v| v == text) == *positive)
            }
        }
    }
}
