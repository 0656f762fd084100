//! Small helpers over tree-sitter-python nodes that every rule and fact needs.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::marker::PhantomData;
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
    /// Node id to its parent, for the nodes of the statements indexed so far.
    parents: HashMap<usize, ffi::TSNode, BuildHasherDefault<IdHasher>>,
    /// The top-level statements indexed so far, by id.
    indexed: HashSet<usize, BuildHasherDefault<IdHasher>>,
    /// The root's children, in order, once first needed.
    statements: Option<Vec<ffi::TSNode>>,
}

impl ParentIndex {
    fn parent<'t>(&mut self, node: Node<'t>) -> Option<Node<'t>> {
        // SAFETY: the stored nodes and `root` belong to the same (alive) tree as `node`,
        // which the `ParentsIndexed` guard keeps borrowed; the returned node takes
        // `node`'s lifetime.
        let raw = |raw: ffi::TSNode| unsafe { Node::from_raw(raw) };
        if let Some(&parent) = self.parents.get(&node.id()) {
            return Some(raw(parent));
        }
        let root: Node<'t> = raw(self.root);
        if node.id() == root.id() {
            return None;
        }
        // By offset among the top-level statements (asking the root for the child that
        // holds `node` walks its children one by one: quadratic over a long module).
        let statements = self.statements.get_or_insert_with(|| {
            let mut cursor = root.walk();
            root.children(&mut cursor).map(|c| c.into_raw()).collect()
        });
        let at = statements.partition_point(|&c| raw(c).start_byte() <= node.start_byte());
        let candidate = at.checked_sub(1).map(|i| raw(statements[i]));
        // The candidate by offset, then (for zero-width nodes at a boundary) the root's answer.
        let by_offset = candidate.filter(|c| c.end_byte() >= node.end_byte());
        let asked = std::iter::once_with(|| root.child_with_descendant(node)).flatten();
        for statement in by_offset.into_iter().chain(asked) {
            if statement.id() == node.id() {
                return Some(root);
            }
            if self.indexed.insert(statement.id()) {
                index_subtree(statement, &mut self.parents);
            }
            if let Some(&parent) = self.parents.get(&node.id()) {
                return Some(raw(parent));
            }
        }
        None
    }
}

/// Record the parent of every node below `top`.
fn index_subtree(top: Node, parents: &mut HashMap<usize, ffi::TSNode, BuildHasherDefault<IdHasher>>) {
    parents.reserve(top.descendant_count());
    let mut cursor = top.walk();
    let mut open: Vec<Node> = Vec::new();
    'walk: loop {
        let node = cursor.node();
        if let Some(parent) = open.last() {
            parents.insert(node.id(), parent.into_raw());
        }
        if cursor.goto_first_child() {
            open.push(node);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
            open.pop();
        }
    }
}

/// Node ids are addresses: spread them cheaply instead of hashing them securely.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    /// Every bit of the result depends on every bit of the id (the SplitMix64 finisher):
    /// ids are aligned addresses, and a mix that leaves some bits of the table index
    /// constant crowds a large file's nodes into a fraction of the table, so lookups
    /// slow down as the file grows.
    fn write_usize(&mut self, id: usize) {
        let mut z = id as u64;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        self.0 = z ^ (z >> 31);
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
        parents: HashMap::default(),
        indexed: HashSet::default(),
        statements: None,
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
    let mut done = false;
    ancestors(node).take_while(move |n| {
        if done {
            return false;
        }
        done = is_function(n.kind());
        true
    })
}

pub fn enclosing_function(node: Node) -> Option<Node> {
    ancestors(node).find(|n| is_function(n.kind()))
}

/// The innermost `for`/`while` loop around `node` in the same function.
pub fn enclosing_loop(node: Node) -> Option<Node> {
    ancestors_in_function(node).find(|n| is_loop(n.kind()))
}

/// The function body or module that `node` runs in.
pub fn enclosing_body(node: Node) -> Node {
    let mut last = node;
    for ancestor in ancestors(node) {
        if is_function(ancestor.kind()) {
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
    Descendants { cursor: root.walk(), depth: 0, done: false }
}

pub struct Descendants<'t> {
    cursor: TreeCursor<'t>,
    /// How far below `root` the cursor is, counted here: the cursor's own `depth()` walks
    /// its whole stack, which makes a walk of a deep tree quadratic.
    depth: usize,
    done: bool,
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        if self.done {
            return None;
        }
        let node = self.cursor.node();
        if self.cursor.goto_first_child() {
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
    let function = call.child_by_field_name("function")?;
    last_name(function, source)
}

/// The final identifier of a name or dotted name.
pub fn last_name<'s>(node: Node, source: &'s str) -> Option<&'s str> {
    match node.kind() {
        "identifier" => Some(text(node, source)),
        "attribute" => node.child_by_field_name("attribute").map(|a| text(a, source)),
        _ => None,
    }
}

/// For `obj.method(...)`, the `obj` node.
pub fn method_receiver(call: Node) -> Option<Node> {
    let function = call.child_by_field_name("function")?;
    (function.kind() == "attribute").then(|| function.child_by_field_name("object")).flatten()
}

/// Positional arguments of a call (keyword arguments and splats left out).
pub fn positional_args(call: Node) -> Vec<Node> {
    let Some(args) = call.child_by_field_name("arguments") else { return Vec::new() };
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment" | "list_splat" | "dictionary_splat"))
        .collect()
}

/// The value of keyword argument `name` in a call.
pub fn keyword_arg<'t>(call: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    let found = args.named_children(&mut cursor).find(|a| {
        a.kind() == "keyword_argument" && a.child_by_field_name("name").is_some_and(|n| text(n, source) == name)
    });
    found.and_then(|a| a.child_by_field_name("value"))
}

/// Strip redundant parentheses.
pub fn unparenthesize(mut node: Node) -> Node {
    while node.kind() == "parenthesized_expression" {
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
    let is_field = |field: &str| parent.child_by_field_name(field).is_some_and(|f| f.id() == identifier.id());
    !(parent.kind() == "attribute" && is_field("attribute") || parent.kind() == "keyword_argument" && is_field("name"))
}

/// Whether `root` contains the name or dotted name `name` (`losses`, `self.losses`).
pub fn mentions(root: Node, name: &str, source: &str) -> bool {
    descendants(root).any(|n| matches!(n.kind(), "identifier" | "attribute") && text(n, source) == name)
}
