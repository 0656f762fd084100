//! Small helpers over tree-sitter-python nodes that every rule and fact needs.

use crate::engine::field;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;
use tree_sitter::{Node, TreeCursor, ffi};

/// Node kinds that open a new Python scope for name bindings.
pub fn is_scope(kind: &str) -> bool {
    matches!(kind, "function_definition" | "lambda" | "class_definition")
}

/// Node kinds whose body runs at a different time than the code around them.
pub fn is_function(kind: &str) -> bool {
    matches!(kind, "function_definition" | "lambda")
}

pub fn is_loop(kind: &str) -> bool {
    matches!(kind, "for_statement" | "while_statement")
}

/// A set of node kinds tested by the tree's kind id: the rules' patterns and host
/// predicates ask it of tens of thousands of nodes per file, where comparing kind names
/// costs a string comparison per kind.
#[derive(Debug, Clone)]
pub struct KindSet {
    ids: Vec<u64>,
}

impl KindSet {
    /// Every kind id the grammar spells one of `kinds`, named or not.
    pub fn of<S: AsRef<str>>(kinds: &[S]) -> Result<KindSet, String> {
        Self::spelled(kinds, None)
    }

    /// The named kinds (`named`, as `(identifier)` in a query) or the anonymous ones (as
    /// `"+="`) spelled one of `kinds`.
    pub fn named<S: AsRef<str>>(kinds: &[S], named: bool) -> Result<KindSet, String> {
        Self::spelled(kinds, Some(named))
    }

    /// A name the grammar does not know is an error, so that a typo in a query fails
    /// its test.
    fn spelled<S: AsRef<str>>(kinds: &[S], named: Option<bool>) -> Result<KindSet, String> {
        let language = crate::engine::language();
        let count = language.node_kind_count();
        let names = kind_names();
        let mut every = Vec::new();
        for kind in kinds {
            let kind = kind.as_ref();
            let ids: Vec<u16> = (0..count as u16)
                .filter(|&id| names.get(id as usize) == Some(&kind))
                .filter(|&id| named.is_none_or(|named| language.node_kind_is_named(id) == named))
                .collect();
            if ids.is_empty() {
                let what = match named {
                    Some(false) => "no anonymous node",
                    _ => "no node kind",
                };
                return Err(format!("{what} `{kind}` in the Python grammar"));
            }
            every.extend(ids);
        }
        Ok(KindSet::of_ids(&every))
    }

    /// The set of these kind ids.
    pub fn of_ids(ids: &[u16]) -> KindSet {
        let count = crate::engine::language().node_kind_count();
        let mut set = KindSet { ids: vec![0; count.div_ceil(64)] };
        for &id in ids {
            set.ids[id as usize / 64] |= 1 << (id % 64);
        }
        set
    }

    pub fn contains(&self, node: Node) -> bool {
        self.contains_id(node.kind_id())
    }

    pub fn contains_id(&self, id: u16) -> bool {
        let id = id as usize;
        self.ids.get(id / 64).is_some_and(|bits| bits & (1 << (id % 64)) != 0)
    }

    /// The ids in the set, in order.
    pub fn ids(&self) -> impl Iterator<Item = u16> + '_ {
        (0..self.ids.len() * 64).map(|id| id as u16).filter(|&id| self.contains_id(id))
    }
}

/// A node's kind as the grammar spells it (what `Node::kind` answers), looked up in a
/// table by kind id. `Node::kind` asks tree-sitter for the name, measures it and checks
/// it is UTF-8 on every call: rules and facts ask it of every node they look at, and on
/// training scripts that cost a tenth of the rules' own work. (`.clippy.toml` keeps
/// `Node::kind` out of the code.)
pub trait KindName {
    fn kind_name(&self) -> &'static str;
}

impl KindName for Node<'_> {
    fn kind_name(&self) -> &'static str {
        kind_names().get(self.kind_id() as usize).copied().unwrap_or("")
    }
}

/// Every kind's name, by kind id.
fn kind_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    // The names the grammar lends live as long as the language, kept here for good.
    static LANGUAGE: std::sync::OnceLock<tree_sitter::Language> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let language: &'static tree_sitter::Language = LANGUAGE.get_or_init(crate::engine::language);
        (0..language.node_kind_count() as u16).map(|id| language.node_kind_for_id(id).unwrap_or("")).collect()
    })
}

pub fn text<'s>(node: Node, source: &'s str) -> &'s str {
    &source[node.byte_range()]
}

/// Strict ancestors, innermost first.
///
/// Climbed one parent at a time through the parent index while one is in force
/// (`index_parents`), so a caller that stops at the nearest function pays only for the
/// levels it looks at: in deeply nested code, collecting the whole path for every such
/// question makes the file's time grow with the square of its depth. Without an index,
/// by one descent from the root: `Node::parent` itself descends from the root on every
/// call, so climbing parent by parent would repeat that descent per level.
pub fn ancestors(node: Node) -> Ancestors {
    if with_index(node, |_| ()).is_some() {
        return Ancestors::Climbing(Some(node));
    }
    let mut path = Vec::new();
    let mut current = root_of(node);
    while current.id() != node.id() {
        path.push(current);
        match current.child_with_descendant(node) {
            Some(next) => current = next,
            None => break,
        }
    }
    Ancestors::Descended(path)
}

pub enum Ancestors<'t> {
    /// Through the parent index, from this node up.
    Climbing(Option<Node<'t>>),
    /// The path from the root, outermost first (yielded from its end).
    Descended(Vec<Node<'t>>),
}

impl<'t> Iterator for Ancestors<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        match self {
            Ancestors::Climbing(current) => {
                let up = with_index((*current)?, |index| index.parent((*current)?)).flatten();
                *current = up;
                up
            }
            Ancestors::Descended(path) => path.pop(),
        }
    }
}

/// The parent of `node` (through the parent index while one is in force).
pub fn parent(node: Node) -> Option<Node> {
    with_index(node, |index| index.parent(node)).unwrap_or_else(|| node.parent())
}

/// Every node's parent in one tree, built on first use one top-level statement at a
/// time (by one walk of that statement). Rules and facts ask for parents and ancestors
/// thousands of times per file, and tree-sitter answers each such question by a descent
/// from the root; a lint of one statement (the language server's, after an edit) indexes
/// only the statements it asks about.
struct ParentIndex {
    tree: *const ffi::TSTree,
    root: ffi::TSNode,
    /// The root's children, in order, once first needed.
    statements: Vec<ffi::TSNode>,
    /// Where each of them starts and ends (bytes): asked at every question, and a node's
    /// end is read from its subtree, a cache miss in a large tree.
    spans: Vec<(u32, u32)>,
    /// Per statement (as in `statements`): the parents of the nodes below it, once asked
    /// (shared with the indexes of other threads linting parts of the same tree).
    below: Vec<Option<Arc<StatementParents>>>,
    /// The statement answered from last: questions come in runs about one statement.
    last: usize,
    /// Answers given lately, by node (see `RecentParents`).
    recent: RecentParents,
}

/// The parents asked for lately, each in a slot picked by the node's id. Rules climb from
/// every call they look at to its loop, body and function, so the same few ancestors are
/// asked for again and again (every call of a function climbs through the function's
/// body): a slot answers them without finding the statement and searching its nodes.
struct RecentParents {
    /// A node's id and where it starts (ids alone are unique within one tree; the start
    /// makes a stale slot harmless), and its parent.
    slots: Vec<Option<(usize, u32, ffi::TSNode)>>,
    /// How many slots there are once the first answer is put (a power of two).
    count: usize,
}

impl RecentParents {
    /// Slots for a tree of a text of `bytes` bytes: one per 32 bytes, up to 4,096 (a
    /// quarter megabyte). A small file has few nodes to ask about, and a table of the
    /// largest size, filled for each file, costs more than its questions.
    fn for_text(bytes: usize) -> RecentParents {
        RecentParents { slots: Vec::new(), count: (bytes / 32).next_power_of_two().clamp(256, 4096) }
    }

    fn slot(&self, node: Node) -> usize {
        // Node ids are addresses: the low bits are alignment, the rest spread well enough.
        (node.id() >> 4) & (self.count - 1)
    }

    fn get(&self, node: Node) -> Option<ffi::TSNode> {
        let (id, start, parent) = self.slots.get(self.slot(node)).copied().flatten()?;
        (id == node.id() && start == node.start_byte() as u32).then_some(parent)
    }

    fn put(&mut self, node: Node, parent: ffi::TSNode) {
        if self.slots.is_empty() {
            self.slots = vec![None; self.count];
        }
        let slot = self.slot(node);
        self.slots[slot] = Some((node.id(), node.start_byte() as u32, parent));
    }
}

/// The parents of the nodes below one top-level statement. Kept per statement and
/// compact, rather than in one table of the file's nodes: a 200,000-line file has
/// millions of nodes, and a table that size costs as much memory as the tree again,
/// and a cache miss per question.
struct StatementParents {
    /// The nodes that have children, the statement first, each stored once however many
    /// children it has.
    parents: Vec<ffi::TSNode>,
    /// Where each node below the statement starts, sorted: searched apart from the rest,
    /// four bytes a node, so that a search in a large function's nodes meets fewer cache
    /// lines.
    starts: Vec<u32>,
    /// By the same place: the node's id and its parent's place in `parents`.
    children: Vec<(usize, u32)>,
}

// SAFETY: the raw nodes are a tree's nodes, which tree-sitter lets threads share (`Node`
// is `Send` and `Sync`: a tree is not changed once parsed); they are only read, and only
// turned back into nodes by an index of the same tree, while the tree is borrowed.
unsafe impl Send for StatementParents {}
unsafe impl Sync for StatementParents {}

impl StatementParents {
    /// One walk of `statement`'s subtree.
    fn new(statement: Node) -> StatementParents {
        let mut parents = StatementWalk::default();
        let mut cursor = statement.walk();
        'walk: loop {
            let node = cursor.node();
            parents.visit(node);
            if cursor.goto_first_child() {
                parents.descend(node);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    continue 'walk;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
                parents.ascend();
            }
        }
        parents.finish()
    }

    fn parent_of(&self, node: Node) -> Option<ffi::TSNode> {
        let start = node.start_byte() as u32;
        let first = self.starts.partition_point(|&at| at < start);
        // The few nodes that start together (a call, its callee, the callee's object).
        let together = self.starts[first..].iter().take_while(|&&at| at == start).count();
        let (_, parent) = self.children[first..first + together].iter().find(|&&(id, _)| id == node.id())?;
        Some(self.parents[*parent as usize])
    }
}

/// The parents of one top-level statement's nodes, gathered as a walk of its subtree
/// in document order goes: `visit` each node, `descend` into one with children, `ascend`
/// out of it. The rules' matcher walks every statement anyway and hands what it gathered
/// to the parent index in force (`offer_parents`), so the index need not walk it again.
/// One walk serves statement after statement (`finish` empties it): its lists grown for
/// the first statements are not grown again, a reallocation at a time, for each.
#[derive(Default)]
pub struct StatementWalk {
    parents: Vec<ffi::TSNode>,
    /// As in `StatementParents`, one entry per node below the statement in each.
    starts: Vec<u32>,
    children: Vec<(usize, u32)>,
    /// The place in `parents` of each node the walk is inside of.
    open: Vec<u32>,
}

impl StatementWalk {
    pub fn visit(&mut self, node: Node) {
        if let Some(&parent) = self.open.last() {
            // Offsets are 32-bit in tree-sitter.
            self.starts.push(node.start_byte() as u32);
            self.children.push((node.id(), parent));
        }
    }

    pub fn descend(&mut self, node: Node) {
        // Nodes are fewer than bytes in the file, and offsets are 32-bit in tree-sitter.
        self.open.push(self.parents.len() as u32);
        self.parents.push(node.into_raw());
    }

    pub fn ascend(&mut self) {
        self.open.pop();
    }

    /// The parents gathered, in lists of their own size; the walk is left empty.
    fn finish(&mut self) -> StatementParents {
        // A walk in document order meets the nodes sorted by where they start; a sort keeps
        // the order of those that start together.
        if !self.starts.is_sorted() {
            let mut order: Vec<usize> = (0..self.starts.len()).collect();
            order.sort_by_key(|&at| self.starts[at]);
            self.starts = order.iter().map(|&at| self.starts[at]).collect();
            self.children = order.iter().map(|&at| self.children[at]).collect();
        }
        let finished = StatementParents {
            parents: self.parents.clone(),
            starts: self.starts.clone(),
            children: self.children.clone(),
        };
        self.clear();
        finished
    }

    /// Forget what was gathered, for the next statement.
    pub fn clear(&mut self) {
        self.parents.clear();
        self.starts.clear();
        self.children.clear();
        self.open.clear();
    }
}

/// Give the parent index in force for `statement`'s tree the parents gathered by a walk
/// of the whole of `statement` (a top-level statement), unless it has them already.
pub fn offer_parents(statement: Node, walked: &mut StatementWalk) {
    offer_finished(statement, &Arc::new(walked.finish()));
}

fn offer_finished(statement: Node, parents: &Arc<StatementParents>) {
    with_index(statement, |index| {
        let at = index.statement_at(statement)?;
        if index.below[at].is_none() {
            index.below[at] = Some(parents.clone());
        }
        Some(())
    });
}

/// The parents of whole top-level statements gathered by walks on some threads, for the
/// parent indexes of others: a lint split in parts walks each part on one thread and
/// checks its matches on another, whose facts ask about parents all over the file.
#[derive(Default, Clone)]
pub struct GatheredParents<'t> {
    statements: Vec<(Node<'t>, Arc<StatementParents>)>,
}

impl<'t> GatheredParents<'t> {
    pub fn add(&mut self, statement: Node<'t>, walked: &mut StatementWalk) {
        self.statements.push((statement, Arc::new(walked.finish())));
    }

    pub fn extend(&mut self, other: GatheredParents<'t>) {
        self.statements.extend(other.statements);
    }

    /// Hand them all to the parent index in force on this thread.
    pub fn offer(&self) {
        for (statement, parents) in &self.statements {
            offer_finished(*statement, parents);
        }
    }
}

impl ParentIndex {
    /// The place of a top-level statement among the root's children.
    fn statement_at(&mut self, statement: Node) -> Option<usize> {
        self.know_statements();
        // SAFETY: as in `parent`: the stored nodes belong to the tree `statement` borrows.
        let raw = |raw: ffi::TSNode| unsafe { Node::from_raw(raw) };
        let first = self.statements.partition_point(|&s| raw(s).start_byte() < statement.start_byte());
        (first..self.statements.len())
            .take_while(|&at| raw(self.statements[at]).start_byte() == statement.start_byte())
            .find(|&at| raw(self.statements[at]).id() == statement.id())
    }

    fn know_statements(&mut self) {
        if self.statements.is_empty() {
            // SAFETY: `root` belongs to the tree the index is kept for, alive while it is in force.
            let root: Node = unsafe { Node::from_raw(self.root) };
            let mut cursor = root.walk();
            self.statements = root.children(&mut cursor).map(|c| c.into_raw()).collect();
            // Offsets are 32-bit in tree-sitter.
            self.spans = (self.statements.iter())
                .map(|&s| {
                    // SAFETY: as above.
                    let statement = unsafe { Node::from_raw(s) };
                    (statement.start_byte() as u32, statement.end_byte() as u32)
                })
                .collect();
            self.below = std::iter::repeat_with(|| None).take(self.statements.len()).collect();
        }
    }

    fn parent<'t>(&mut self, node: Node<'t>) -> Option<Node<'t>> {
        // SAFETY: the stored nodes and `root` belong to the same (alive) tree as `node`,
        // which the `ParentsIndexed` guard keeps borrowed; the returned node takes
        // `node`'s lifetime.
        let raw = |raw: ffi::TSNode| unsafe { Node::from_raw(raw) };
        let root: Node<'t> = raw(self.root);
        if node.id() == root.id() {
            return None;
        }
        if let Some(parent) = self.recent.get(node) {
            return Some(raw(parent));
        }
        self.know_statements();
        let start = node.start_byte() as u32;
        // Whether the statement at `at` holds `node`. A node that starts inside a top-level
        // statement lies inside it (nodes nest, and the root was answered above); only one
        // that starts where the statement ends needs its own end read (a zero-width node).
        let holds = |spans: &[(u32, u32)], at: usize| {
            spans.get(at).is_some_and(|&(from, to)| {
                from <= start && (start < to || (start == to && node.end_byte() as u32 <= to))
            })
        };
        // The statement asked about last, then the one found by offset among the
        // top-level statements (asking the root for the child that holds `node` walks its
        // children one by one: quadratic over a long module), then (for zero-width nodes
        // at a boundary) the root's answer.
        let last = Some(self.last).filter(|&at| holds(&self.spans, at));
        let by_offset = std::iter::once_with(|| {
            let after = self.spans.partition_point(|&(from, _)| from <= start);
            after.checked_sub(1).filter(|&at| holds(&self.spans, at))
        })
        .flatten();
        let asked = std::iter::once_with(|| {
            let statement = root.child_with_descendant(node)?;
            let first = self.statements.partition_point(|&s| raw(s).start_byte() < statement.start_byte());
            (first..self.statements.len()).find(|&at| raw(self.statements[at]).id() == statement.id())
        })
        .flatten();
        for at in last.into_iter().chain(by_offset).chain(asked) {
            let statement = raw(self.statements[at]);
            if statement.id() == node.id() {
                return Some(root);
            }
            let below = self.below[at].get_or_insert_with(|| Arc::new(StatementParents::new(statement)));
            if let Some(parent) = below.parent_of(node) {
                self.last = at;
                self.recent.put(node, parent);
                return Some(raw(parent));
            }
        }
        // A node the walk did not record (it skips tokens no pattern starts at): the
        // tree's own answer.
        node.parent()
    }
}

thread_local! {
    static PARENT_INDEX: RefCell<Option<ParentIndex>> = const { RefCell::new(None) };
}

/// Run `f` on the parent index when one is in force for `node`'s tree.
fn with_index<T>(node: Node, f: impl FnOnce(&mut ParentIndex) -> T) -> Option<T> {
    let tree = node.into_raw().tree;
    PARENT_INDEX.with_borrow_mut(|index| index.as_mut().filter(|i| i.tree == tree).map(f))
}

/// While the returned guard lives, `parent` and `ancestors` (and everything built on
/// them) answer from an index of `root`'s tree on this thread. The engine holds one
/// while it lints a file.
pub fn index_parents(root: Node<'_>) -> ParentsIndexed<'_> {
    let raw = root.into_raw();
    let index = ParentIndex {
        tree: raw.tree,
        root: raw,
        statements: Vec::new(),
        spans: Vec::new(),
        below: Vec::new(),
        last: 0,
        recent: RecentParents::for_text(root.end_byte()),
    };
    let previous = PARENT_INDEX.with_borrow_mut(|slot| slot.replace(index));
    ParentsIndexed { previous, tree: PhantomData }
}

/// Keeps the parent index of one tree in force (and the tree borrowed); dropping it
/// restores the index in force before.
pub struct ParentsIndexed<'t> {
    previous: Option<ParentIndex>,
    tree: PhantomData<Node<'t>>,
}

impl Drop for ParentsIndexed<'_> {
    fn drop(&mut self) {
        let previous = self.previous.take();
        PARENT_INDEX.with_borrow_mut(|slot| *slot = previous);
    }
}

/// The root node of the tree `node` belongs to.
pub fn root_of<'t>(node: Node<'t>) -> Node<'t> {
    let raw = node.into_raw();
    // SAFETY: `raw.tree` is the tree `node` borrows from, alive for `'t`; the root node
    // it yields borrows the same tree.
    unsafe { Node::from_raw(tree_sitter::ffi::ts_tree_root_node(raw.tree)) }
}

/// Ancestors up to and including the innermost enclosing function (or to the root).
pub fn ancestors_in_function(node: Node) -> impl Iterator<Item = Node> {
    up_to_function(ancestors(node))
}

/// `ancestors` (innermost first) up to and including the first function among them.
pub fn up_to_function<'t>(ancestors: impl Iterator<Item = Node<'t>>) -> impl Iterator<Item = Node<'t>> {
    up_to_function_kinds(ancestors.map(|n| (n, n.kind_id()))).map(|(n, _)| n)
}

/// `up_to_function` of ancestors given with their kinds.
pub fn up_to_function_kinds<'t>(
    ancestors: impl Iterator<Item = (Node<'t>, u16)>,
) -> impl Iterator<Item = (Node<'t>, u16)> {
    static FUNCTIONS: std::sync::OnceLock<KindSet> = std::sync::OnceLock::new();
    let functions = FUNCTIONS.get_or_init(|| KindSet::of(&["function_definition", "lambda"]).expect("Python kinds"));
    let mut done = false;
    ancestors.take_while(move |&(_, kind)| {
        if done {
            return false;
        }
        done = functions.contains_id(kind);
        true
    })
}

pub fn enclosing_function(node: Node) -> Option<Node> {
    ancestors(node).find(|n| is_function(n.kind_name()))
}

/// The innermost `for`/`while` loop around `node` in the same function.
pub fn enclosing_loop(node: Node) -> Option<Node> {
    ancestors_in_function(node).find(|n| is_loop(n.kind_name()))
}

/// The function body or module that `node` runs in.
pub fn enclosing_body(node: Node) -> Node {
    let mut last = node;
    for ancestor in ancestors(node) {
        if is_function(ancestor.kind_name()) {
            return ancestor;
        }
        last = ancestor;
    }
    last
}

pub fn contains(outer: Node, inner: Node) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// Every node under `root` (itself included), in document order.
pub fn descendants(root: Node) -> Descendants {
    Descendants { cursor: root.walk(), depth: 0, done: false, enters: |_| true }
}

/// `descendants`, but not below a node (other than `root`) that `enters` refuses: that
/// node is given, what lies under it is not. A question about the code a loop or
/// function runs itself skips what runs in the loops and functions nested in it without
/// climbing from every node to see whether one lies between.
pub fn descendants_entering(root: Node, enters: fn(Node) -> bool) -> Descendants {
    Descendants { cursor: root.walk(), depth: 0, done: false, enters }
}

pub struct Descendants<'t> {
    cursor: TreeCursor<'t>,
    /// How far below `root` the cursor is, counted here: the cursor's own `depth()` walks
    /// its whole stack, which makes a walk of a deep tree quadratic.
    depth: usize,
    done: bool,
    /// Whether to go under a node below `root` (see `descendants_entering`).
    enters: fn(Node) -> bool,
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        if self.done {
            return None;
        }
        let node = self.cursor.node();
        if (self.depth == 0 || (self.enters)(node)) && self.cursor.goto_first_child() {
            self.depth += 1;
        } else {
            loop {
                if self.depth == 0 {
                    self.done = true;
                    break;
                }
                if self.cursor.goto_next_sibling() {
                    break;
                }
                self.cursor.goto_parent();
                self.depth -= 1;
            }
        }
        Some(node)
    }
}

/// The name a call is made through: `f` for `f(x)`, `step` for `opt.step()`.
pub fn callee_name<'s>(call: Node, source: &'s str) -> Option<&'s str> {
    let function = call.child_by_field_id(field::FUNCTION)?;
    last_name(function, source)
}

/// The final identifier of a name or dotted name.
pub fn last_name<'s>(node: Node, source: &'s str) -> Option<&'s str> {
    match node.kind_name() {
        "identifier" => Some(text(node, source)),
        "attribute" => node.child_by_field_id(field::ATTRIBUTE).map(|a| text(a, source)),
        _ => None,
    }
}

/// For `obj.method(...)`, the `obj` node.
pub fn method_receiver(call: Node) -> Option<Node> {
    let function = call.child_by_field_id(field::FUNCTION)?;
    (function.kind_name() == "attribute").then(|| function.child_by_field_id(field::OBJECT)).flatten()
}

/// Positional arguments of a call (keyword arguments and splats left out).
pub fn positional_args(call: Node) -> Vec<Node> {
    let Some(args) = call.child_by_field_id(field::ARGUMENTS) else { return Vec::new() };
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| !matches!(a.kind_name(), "keyword_argument" | "comment" | "list_splat" | "dictionary_splat"))
        .collect()
}

/// The value of keyword argument `name` in a call.
pub fn keyword_arg<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let args = call.child_by_field_id(field::ARGUMENTS)?;
    let mut cursor = args.walk();
    let found = args.named_children(&mut cursor).find(|a| {
        a.kind_name() == "keyword_argument" && a.child_by_field_id(field::NAME).is_some_and(|n| text(n, source) == name)
    });
    found.and_then(|a| a.child_by_field_id(field::VALUE))
}

/// Strip redundant parentheses.
pub fn unparenthesize(mut node: Node) -> Node {
    while node.kind_name() == "parenthesized_expression" {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// Whether an identifier refers to a variable, rather than naming an attribute
/// (`x.name`) or a keyword argument (`f(name=1)`).
pub fn is_name_reference(identifier: Node) -> bool {
    let Some(parent) = parent(identifier) else { return true };
    let is_field = |field: u16| parent.child_by_field_id(field).is_some_and(|f| f.id() == identifier.id());
    !(parent.kind_name() == "attribute" && is_field(field::ATTRIBUTE)
        || parent.kind_name() == "keyword_argument" && is_field(field::NAME))
}

/// Whether `root` contains the name or dotted name `name` (`losses`, `self.losses`).
pub fn mentions(root: Node, name: &str, source: &str) -> bool {
    descendants(root).any(|n| matches!(n.kind_name(), "identifier" | "attribute") && text(n, source) == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pattern::{Matches, PatternSet};

    const SOURCE: &str = "\
import torch
# a comment
def train(model, loader):
    for x in loader:
        loss = model(x).sum()  # trailing
        loss.backward()
    return [lambda y: y * 2 for _ in range(3)]

class Net(torch.nn.Module):
    def forward(self, x):
        return self.layer(x, *(a, b))

broken(1, 2
value = {'k': [1, (2, 3)]}
";

    fn every_node(root: Node) -> Vec<Node> {
        let mut nodes = Vec::new();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            nodes.push(node);
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
        nodes
    }

    /// A walk that does not go into loops and functions gives, under a loop or function
    /// of real code, the nodes no loop or function nested in it holds: those a climb from
    /// every node finds.
    #[test]
    fn descendants_not_entering_nested_code_are_those_no_nested_code_holds() {
        let own_code = |node: Node| !is_loop(node.kind_name()) && !is_function(node.kind_name());
        for source in crate::engine::fixture_and_test_sources() {
            let tree = crate::engine::parse(&source).expect("parse");
            for top in every_node(tree.root_node()).into_iter().filter(|n| !own_code(*n)) {
                let ids = |nodes: Vec<Node>| nodes.into_iter().map(|n| n.id()).collect::<Vec<_>>();
                let entered = ids(descendants_entering(top, own_code).collect());
                let climbed = ids(descendants(top)
                    .filter(|n| {
                        n.id() == top.id()
                            || ancestors(*n).take_while(|a| a.id() != top.id()).all(|a| own_code(a) || a.id() == n.id())
                    })
                    .collect());
                assert_eq!(entered, climbed, "under a {} of:\n{source}", top.kind_name());
            }
        }
    }

    /// The rules' matcher walks every statement and hands over its parents: the index
    /// then holds every statement before any question, and answers as the tree does, for
    /// the tokens the walk skipped too (brackets, commas, operators).
    #[test]
    fn the_matchers_walk_gives_the_index_every_statements_parents() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let _parents = index_parents(root);
        let patterns = PatternSet::compile(&[(0, "(call) @c")]).expect("compile");
        let matches = Matches { patterns: &patterns, ranges: None, max_start_depth: u32::MAX, gather_parents: false };
        matches.for_each(root, SOURCE, &[true], &mut |_, _, _| {});
        let offered = with_index(root, |index| index.below.iter().filter(|b| b.is_some()).count());
        assert_eq!(offered, Some(root.child_count() as usize));
        for node in every_node(root) {
            assert_eq!(parent(node).map(|p| p.id()), node.parent().map(|p| p.id()), "{}", node.kind_name());
        }
    }

    /// Asked without a walk first (each statement indexed on first use), the index
    /// answers as the tree does for every node of every fixture and test case, and of
    /// texts whose repaired parse has zero-width nodes where a statement ends (an empty
    /// block), which the statement's span alone does not place.
    #[test]
    fn the_index_answers_as_the_tree_does_for_every_node() {
        let mut sources = crate::engine::fixture_and_test_sources();
        // An empty block, zero-width where its `def` or `if` ends.
        let odd = ["if x:\n", "def f():\nx = 1\n", "if x:\n    pass\nelse:\ny = 1\n"];
        sources.extend(odd.iter().map(|s| s.to_string()));
        let mut zero_width = 0;
        for source in &sources {
            let tree = crate::engine::parse(source).expect("parse");
            let root = tree.root_node();
            let _parents = index_parents(root);
            for node in every_node(root) {
                zero_width += usize::from(node.start_byte() == node.end_byte() && node.id() != root.id());
                assert_eq!(parent(node).map(|p| p.id()), node.parent().map(|p| p.id()), "{}", node.kind_name());
            }
        }
        assert!(zero_width > 0, "no zero-width node met");
    }

    /// A walk asked to gather the parents it met leaves this thread's index alone and
    /// hands them back; offered to the index of another thread (a part's checks), they
    /// are that index's every statement, and it answers as the tree does.
    #[test]
    fn parents_gathered_by_a_walk_serve_the_index_of_another_thread() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let patterns = PatternSet::compile(&[(0, "(call) @c")]).expect("compile");
        let matches = Matches { patterns: &patterns, ranges: None, max_start_depth: u32::MAX, gather_parents: true };
        let gathered = {
            let _parents = index_parents(root);
            let walked = matches.for_each(root, SOURCE, &[true], &mut |_, _, _| {});
            let offered = with_index(root, |index| index.below.iter().filter(|b| b.is_some()).count());
            assert_eq!(offered, Some(0), "gathered, not offered");
            walked.parents
        };
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _parents = index_parents(root);
                gathered.offer();
                let offered = with_index(root, |index| index.below.iter().filter(|b| b.is_some()).count());
                assert_eq!(offered, Some(root.child_count() as usize));
                for node in every_node(root) {
                    assert_eq!(parent(node).map(|p| p.id()), node.parent().map(|p| p.id()), "{}", node.kind_name());
                }
            });
        });
    }

    /// A parent asked for again comes from the recent answers, and is still the tree's,
    /// however many other nodes were asked about in between (sharing its slot or not).
    #[test]
    fn a_parent_asked_again_is_answered_from_the_recent_ones() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let _parents = index_parents(root);
        let nodes: Vec<Node> = every_node(root).into_iter().filter(|n| n.id() != root.id()).collect();
        for _ in 0..2 {
            for &node in &nodes {
                assert_eq!(parent(node).map(|p| p.id()), node.parent().map(|p| p.id()), "{}", node.kind_name());
            }
        }
        let deepest = *nodes.iter().max_by_key(|n| ancestors(**n).count()).expect("nodes");
        parent(deepest);
        let recent = with_index(root, |index| index.recent.get(deepest)).flatten();
        // SAFETY: the stored parent is a node of `tree`, alive here.
        assert_eq!(recent.map(|p| unsafe { Node::from_raw(p) }.id()), deepest.parent().map(|p| p.id()));
    }

    /// The parents of a statement are found by where each node starts and its id, both
    /// when the walk met the nodes in document order and when it did not (here: each
    /// node's children last to first).
    #[test]
    fn a_statements_parents_are_found_whatever_order_the_walk_met_them_in() {
        fn walk_backwards(node: Node, parents: &mut StatementWalk) {
            parents.visit(node);
            let mut cursor = node.walk();
            let children: Vec<Node> = node.children(&mut cursor).collect();
            if !children.is_empty() {
                parents.descend(node);
                for child in children.into_iter().rev() {
                    walk_backwards(child, parents);
                }
                parents.ascend();
            }
        }
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let mut cursor = root.walk();
        for statement in root.children(&mut cursor) {
            let mut backwards = StatementWalk::default();
            walk_backwards(statement, &mut backwards);
            for parents in [StatementParents::new(statement), backwards.finish()] {
                for node in every_node(statement).into_iter().filter(|n| n.id() != statement.id()) {
                    // SAFETY: the parents stored are nodes of `tree`, alive here.
                    let found = parents.parent_of(node).map(|p| unsafe { Node::from_raw(p) }.id());
                    assert_eq!(found, node.parent().map(|p| p.id()), "{}", node.kind_name());
                }
            }
        }
    }

    /// A walk limited to some ranges goes into part of the file only: what it did not go
    /// into whole is left to the index to walk when asked.
    #[test]
    fn a_walk_of_some_ranges_offers_only_the_statements_it_went_into_whole() {
        let tree = crate::engine::parse(SOURCE).expect("parse");
        let root = tree.root_node();
        let _parents = index_parents(root);
        let patterns = PatternSet::compile(&[(0, "(call) @c")]).expect("compile");
        let start = SOURCE.find("loss = model").expect("in source");
        let range = start..start + 4;
        let matches = Matches {
            patterns: &patterns,
            ranges: Some(std::slice::from_ref(&range)),
            max_start_depth: u32::MAX,
            gather_parents: false,
        };
        matches.for_each(root, SOURCE, &[true], &mut |_, _, _| {});
        // Statements without children (the comment) are whole however little is walked.
        let leaves = every_node(root).iter().filter(|n| n.parent() == Some(root) && n.child_count() == 0).count();
        assert_eq!(leaves, 1);
        let offered = with_index(root, |index| index.below.iter().filter(|b| b.is_some()).count());
        assert_eq!(offered, Some(leaves));
        for node in every_node(root) {
            assert_eq!(parent(node).map(|p| p.id()), node.parent().map(|p| p.id()), "{}", node.kind_name());
        }
    }
}
