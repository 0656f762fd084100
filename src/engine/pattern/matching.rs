//! Finding the matches of a `PatternSet` in a tree: one walk in document order; at each
//! node, the patterns rooted at its kind, each matched by trying its children's patterns
//! against the node's children (every way they fit, as tree-sitter does, each distinct
//! set of captures reported once).

use super::{Operand, PatternSet, Step, Test, TextPredicate};
use crate::engine::children::{self, Child};
use crate::engine::tree::{self, GatheredParents, KindSet, StatementWalk};
use std::cell::RefCell;
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
    /// Whether the parents of the statements walked are returned (`Walked::parents`)
    /// rather than handed to this thread's parent index: a part's matches are checked on
    /// another thread.
    pub gather_parents: bool,
}

impl Matches<'_> {
    /// Call `found(pattern, captures, ancestry)` for each match of a pattern whose rule
    /// is `active`, in document order of the matches' roots, whose text predicates hold.
    /// Returns what the walk met on its way (see `Walked`).
    pub fn for_each<'t>(
        &self,
        root: Node<'t>,
        source: &str,
        active: &[bool],
        found: &mut dyn FnMut(usize, Captures<'t>, &Ancestry<'_, 't>),
    ) -> Walked<'t> {
        let identifier = identifier_kinds();
        // By kind: whether a pattern of an active rule starts at a node of it. Most kinds
        // start none; identifiers start a pattern of one rule, which most files leave out.
        let starts: Vec<bool> = (self.patterns.by_root.iter())
            .map(|roots| {
                roots.iter().any(|&p| active.get(self.patterns.patterns[p as usize].rule).copied().unwrap_or(false))
            })
            .collect();
        // Room for one identifier in eight bytes of code, more than code has; room
        // reserved is not memory used, and growing a list of many thousands, a copy at a
        // time, is.
        let mut identifiers = Vec::with_capacity(source.len() / 8);
        let mut gathered = GatheredParents::default();
        let mut offer = |statement: Option<(Node<'t>, bool)>, parents: &mut StatementWalk| {
            match statement {
                Some((statement, true)) if self.gather_parents => gathered.add(statement, parents),
                Some((statement, true)) => tree::offer_parents(statement, parents),
                // Walked in part: what it gathered is of no use.
                _ => parents.clear(),
            }
        };
        let mut whole = true;
        // The nodes the walk is inside of, outermost first.
        let mut path: Vec<(Node<'t>, u16)> = Vec::new();
        // The children of each node of `path`, one list after another, and per node where
        // its list lies and the next child to visit: each node's children are listed once,
        // for the patterns tried at it and for the walk's way down.
        let mut listed: Vec<Child<'t>> = Vec::new();
        let mut frames: Vec<(usize, usize, usize)> = Vec::new();
        let mut captures = Vec::new();
        let mut seen: Vec<Captures<'t>> = Vec::new();
        let mut texts = RequiredTexts::new(&self.patterns.literals, source);
        let known = KnownChildren::default();
        // The top-level statement being walked, the parents of its nodes so far, and
        // whether the walk has gone into all of it (it skips what lies outside the ranges
        // and below the depth limit).
        let mut statement: Option<(Node<'t>, bool)> = None;
        // Kept by the thread from walk to walk: grown once to the largest statement.
        let mut parents = SCRATCH_PARENTS.take();
        let mut node = root;
        // Asked once here: the kinds of the nodes below come with their listing.
        let mut kind = root.kind_id();
        // And where the node ends, for the identifiers gathered (see `Walked::identifiers`).
        let mut end = root.end_byte() as u32;
        'walk: loop {
            let depth = path.len() as u32;
            if depth == 1 {
                offer(statement.take(), &mut parents);
                statement = Some((node, true));
            }
            if statement.is_some() {
                parents.visit(node);
            }
            // A name is a leaf where, in most files, no pattern starts: gathered, and the
            // walk goes on to the next node (a third of the nodes it meets are names).
            let name = identifier.contains_id(kind);
            if name {
                identifiers.push((node, end));
            }
            let starts_here = starts.get(kind as usize) == Some(&true);
            if !name || starts_here {
                let inside = self.ranges.is_none_or(|ranges| ranges.iter().any(|range| intersects(node, range)));
                let candidates = if starts_here { &self.patterns.by_root[kind as usize][..] } else { &[][..] };
                let descends = inside && depth < self.max_start_depth;
                let first = listed.len();
                // A pattern tried above may have listed this node's children already.
                match known.take(node) {
                    Some(children) if descends => listed.extend_from_slice(&children),
                    // Every child where a pattern starts; elsewhere those the walk may go into
                    // or a pattern start at: the named ones and any with children, and the
                    // anonymous tokens too when some pattern starts at one. A token is a leaf
                    // no pattern starts at: a third of a tree's nodes (brackets, commas,
                    // operators), which a walk of every node would visit for nothing.
                    _ if descends => {
                        children::list(node, !candidates.is_empty() || self.patterns.roots_anonymous, &mut listed)
                    }
                    _ => {}
                }
                if inside && !candidates.is_empty() {
                    // Every child, with its field, where the walk goes on below (see above).
                    let tried = Tried { root: node, root_children: descends.then(|| &listed[first..]), lists: &known };
                    for &index in candidates {
                        let pattern = &self.patterns.patterns[index as usize];
                        if !active.get(pattern.rule).copied().unwrap_or(false)
                            || !tried.root_children.is_none_or(|children| pattern.may_match(children, source))
                            || !texts.one_inside(&pattern.required, node)
                        {
                            continue;
                        }
                        match_node(&pattern.root, node, kind, &tried, &mut captures, &mut |captures| {
                            if !seen.contains(&*captures) && pattern.text.iter().all(|p| p.holds(captures, source)) {
                                seen.push(captures.clone());
                            }
                        });
                        for captures in seen.drain(..) {
                            found(
                                index as usize,
                                captures,
                                &Ancestry { root: (node, kind), above: &path, root_children: tried.root_children },
                            );
                        }
                    }
                }
                if listed.len() > first {
                    if statement.is_some() {
                        parents.descend(node);
                    }
                    path.push((node, kind));
                    frames.push((first, listed.len(), first + 1));
                    (node, kind, end) = (listed[first].node, listed[first].kind, listed[first].end);
                    continue;
                }
                let leaf = if descends { true } else { node.child_count() == 0 };
                if inside {
                    whole &= leaf;
                }
                if let Some((_, whole)) = statement.as_mut() {
                    *whole &= leaf;
                }
            }
            loop {
                let Some((first, last, next)) = frames.last_mut() else { break 'walk };
                if *next < *last {
                    (node, kind, end) = (listed[*next].node, listed[*next].kind, listed[*next].end);
                    *next += 1;
                    continue 'walk;
                }
                listed.truncate(*first);
                frames.pop();
                path.pop();
                if !path.is_empty() && statement.is_some() {
                    parents.ascend();
                }
            }
        }
        offer(statement, &mut parents);
        SCRATCH_PARENTS.set(parents);
        Walked { identifiers, whole, everywhere: self.ranges.is_none(), parents: gathered }
    }
}

thread_local! {
    /// The lists a walk gathers statement parents in (see `Matches::for_each`).
    static SCRATCH_PARENTS: std::cell::Cell<StatementWalk> = std::cell::Cell::new(StatementWalk::default());
}

/// What a walk met on its way, besides the matches.
pub struct Walked<'t> {
    /// The identifiers it went through, in document order, each with where it ends.
    pub identifiers: Vec<(Node<'t>, u32)>,
    /// Whether it went into every node it was to walk (nothing lay below the depth
    /// limit): the whole tree, or (a relint, a part) every node the ranges meet.
    pub whole: bool,
    /// Whether it was to walk the whole tree (no ranges).
    pub everywhere: bool,
    /// The parents of the top-level statements it walked whole, when asked to gather
    /// them (`Matches::gather_parents`); else they went to the thread's parent index.
    pub parents: GatheredParents<'t>,
}

impl<'t> Walked<'t> {
    /// The tree's identifiers, in document order, when the walk went into every node:
    /// the facts look names up among them instead of searching the text for each name
    /// and descending to it.
    pub fn every_identifier(self) -> Option<Vec<(Node<'t>, u32)>> {
        (self.whole && self.everywhere).then_some(self.identifiers)
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

/// Where a match stands in the tree: its root and the nodes the walk was inside of. A
/// host predicate climbs from a capture to its enclosing function for every match, and
/// the walk knows the way up without asking the tree (which descends from its root for
/// each parent) or a parent index.
pub struct Ancestry<'a, 't> {
    /// The root, with its kind.
    root: (Node<'t>, u16),
    /// The root's ancestors, outermost first, each with its kind (known to the walk, where
    /// asking the tree is a call into it per ancestor).
    above: &'a [(Node<'t>, u16)],
    /// The root's children, when the walk listed them: the captures the host predicates
    /// ask about are mostly among them (a call's callee).
    root_children: Option<&'a [Child<'t>]>,
}

impl<'t> Ancestry<'_, 't> {
    /// The ancestors of `node`, a node of the match (the root or below it), innermost
    /// first, each with its kind.
    pub fn of(&self, node: Node<'t>) -> impl Iterator<Item = (Node<'t>, u16)> + '_ {
        let child_of_root = self.root_children.is_some_and(|c| c.iter().any(|c| c.node.id() == node.id()));
        // From the root down to `node`'s parent: a few levels, a pattern's depth.
        let mut inside = Vec::new();
        let mut at = if child_of_root { node } else { self.root.0 };
        let first = child_of_root.then_some(self.root);
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
        let inside = inside.into_iter().rev().map(|n| (n, n.kind_id()));
        first.into_iter().chain(inside).chain(above.iter().rev().copied())
    }
}

/// As tree-sitter's byte range: a node overlapping it, or an empty node at its start.
fn intersects(node: Node, range: &Range<usize>) -> bool {
    let (start, end) = (node.start_byte(), node.end_byte());
    (end > range.start || (start == end && end == range.start)) && start < range.end
}

/// Match `step` at `node`, of kind `kind` (its field, if any, already checked) and, for
/// each way it matches, call `then` with the captures so far.
fn match_node<'t>(
    step: &Step,
    node: Node<'t>,
    kind: u16,
    known: &Tried<'_, 't>,
    captures: &mut Captures<'t>,
    then: &mut dyn FnMut(&mut Captures<'t>),
) {
    match &step.test {
        Test::Alternatives(alternatives) => {
            for alternative in alternatives {
                match_node(alternative, node, kind, known, captures, &mut |captures| {
                    finish(step, node, known, captures, then)
                });
            }
        }
        Test::Kinds(kinds) if !kinds.contains_id(kind) => {}
        Test::Named if !node.is_named() || node.is_error() => {}
        Test::Any if node.is_error() => {}
        _ => finish(step, node, known, captures, then),
    }
}

/// `step`'s node matched: take its captures and match its children's patterns.
fn finish<'t>(
    step: &Step,
    node: Node<'t>,
    known: &Tried<'_, 't>,
    captures: &mut Captures<'t>,
    then: &mut dyn FnMut(&mut Captures<'t>),
) {
    let before = captures.len();
    captures.extend(step.captures.iter().map(|&capture| (capture, node)));
    if step.children.is_empty() {
        then(captures);
    } else {
        match known.root_children.filter(|_| node.id() == known.root.id()) {
            Some(children) => match_children(&step.children, children, 0, None, known, captures, then),
            None => {
                let children = known.lists.of(node);
                match_children(&step.children, &children, 0, None, known, captures, then);
            }
        }
    }
    captures.truncate(before);
}

/// What the patterns tried at one node (`root`) share: its children as the walk listed
/// them (when it did: it lists none below the depth it starts matches at), and the
/// children of the nodes below it that a pattern listed.
struct Tried<'a, 't> {
    root: Node<'t>,
    root_children: Option<&'a [Child<'t>]>,
    lists: &'a KnownChildren<'t>,
}

/// The children of the nodes patterns looked into, with their fields, kept until the
/// walk reaches each: a dozen patterns start at every call, and each would otherwise list
/// the call's children again, and the walk after them.
#[derive(Default)]
pub(super) struct KnownChildren<'t> {
    lists: RefCell<Vec<(Node<'t>, Rc<[Child<'t>]>)>>,
    /// Where a list is made before it is copied into its shared one: kept from list to
    /// list, so each costs one allocation, not a growing list and then its copy.
    scratch: RefCell<Vec<Child<'t>>>,
}

impl<'t> KnownChildren<'t> {
    fn of(&self, node: Node<'t>) -> Rc<[Child<'t>]> {
        if let Some((_, known)) = self.lists.borrow().iter().find(|(known, _)| known.id() == node.id()) {
            return known.clone();
        }
        let mut scratch = self.scratch.borrow_mut();
        scratch.clear();
        children::list(node, true, &mut scratch);
        let found: Rc<[Child<'t>]> = Rc::from(&scratch[..]);
        self.lists.borrow_mut().push((node, found.clone()));
        found
    }

    /// `node`'s children if they are known, forgotten here, as are those of the nodes
    /// that start before it: a walk in document order has passed them.
    fn take(&self, node: Node<'t>) -> Option<Rc<[Child<'t>]>> {
        let mut lists = self.lists.borrow_mut();
        if lists.is_empty() {
            return None;
        }
        let start = node.start_byte();
        let mut taken = None;
        lists.retain(|(known, children)| {
            if known.id() == node.id() {
                taken = Some(children.clone());
                return false;
            }
            known.start_byte() >= start
        });
        taken
    }
}

/// Match `steps` against `children[from..]`, in order; `previous` is the child the step
/// before matched (an anchored step must match the next named child after it).
fn match_children<'t>(
    steps: &[Step],
    children: &[Child<'t>],
    from: usize,
    previous: Option<usize>,
    known: &Tried<'_, 't>,
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
        match_node(step, child.node, child.kind, known, captures, &mut |captures| {
            match_children(rest, children, at + 1, Some(at), known, captures, then)
        });
    }
}

impl TextPredicate {
    /// Whether a predicate of one capture (`only_capture`) holds of `text`, that capture's.
    pub(super) fn holds_of(&self, text: &str) -> bool {
        match self {
            TextPredicate::Eq { to: Operand::Text(value), positive, .. } => (text == value) == *positive,
            // Of two captures: not one capture's alone.
            TextPredicate::Eq { to: Operand::Capture(_), .. } => true,
            TextPredicate::Match { regex, positive, .. } => regex.is_match(text) == *positive,
            TextPredicate::AnyOf { values, positive, .. } => values.iter().any(|v| v == text) == *positive,
        }
    }

    /// Whether the predicate holds of a match's captures (a capture the match lacks
    /// passes).
    fn holds(&self, captures: &Captures, source: &str) -> bool {
        let text_of = |capture: u32| captures.iter().find(|(c, _)| *c == capture).map(|(_, n)| &source[n.byte_range()]);
        match self {
            TextPredicate::Eq { capture, to: Operand::Capture(other), positive } => {
                let (Some(text), Some(other)) = (text_of(*capture), text_of(*other)) else { return true };
                (text == other) == *positive
            }
            _ => self.only_capture().and_then(text_of).is_none_or(|text| self.holds_of(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tree::KindName;

    #[test]
    fn children_listed_for_a_pattern_are_handed_to_the_walk_once() {
        let source = "f(a, b)\ng(c)\n";
        let tree = crate::engine::parse(source).expect("parse");
        let root = tree.root_node();
        let first_call = root.named_child(0).and_then(|s| s.named_child(0)).expect("f(a, b)");
        let arguments = first_call.child_by_field_id(crate::engine::field::ARGUMENTS).expect("arguments");
        let second_call = root.named_child(1).and_then(|s| s.named_child(0)).expect("g(c)");
        let known = KnownChildren::default();
        let children = known.of(first_call);
        let fields: Vec<Option<u16>> = children.iter().map(|c| c.field.map(|f| f.get())).collect();
        assert_eq!(fields, [Some(crate::engine::field::FUNCTION), Some(crate::engine::field::ARGUMENTS)]);
        known.of(arguments);
        known.of(second_call);
        let handed = known.take(arguments).expect("listed for the pattern");
        let kinds: Vec<&str> = handed.iter().map(|c| c.node.kind_name()).collect();
        assert_eq!(kinds, ["(", "identifier", ",", "identifier", ")"]);
        assert!(known.take(arguments).is_none(), "handed over once");
        // Reaching the second call passes the first: only the second's list is left.
        assert!(known.take(second_call).is_some());
        assert!(known.lists.borrow().is_empty());
    }
}
