//! Small helpers over tree-sitter-python nodes that every rule and fact needs.

use tree_sitter::{Node, TreeCursor};

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
/// Computed by one descent from the root: `Node::parent` itself descends from the root
/// on every call, so climbing parent by parent would repeat that descent per level (a
/// long module's root has hundreds of children to scan each time).
pub fn ancestors(node: Node) -> impl DoubleEndedIterator<Item = Node> {
    let mut path = Vec::new();
    let mut current = root_of(node);
    while current.id() != node.id() {
        path.push(current);
        match current.child_with_descendant(node) {
            Some(next) => current = next,
            None => break,
        }
    }
    path.into_iter().rev()
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
    Descendants { cursor: root.walk(), done: false }
}

pub struct Descendants<'t> {
    cursor: TreeCursor<'t>,
    done: bool,
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        if self.done {
            return None;
        }
        let node = self.cursor.node();
        if !self.cursor.goto_first_child() {
            loop {
                if self.cursor.depth() == 0 {
                    self.done = true;
                    break;
                }
                if self.cursor.goto_next_sibling() {
                    break;
                }
                self.cursor.goto_parent();
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
    let Some(parent) = identifier.parent() else { return true };
    let is_field = |field: &str| parent.child_by_field_name(field).is_some_and(|f| f.id() == identifier.id());
    !(parent.kind() == "attribute" && is_field("attribute") || parent.kind() == "keyword_argument" && is_field("name"))
}

/// Whether `root` contains the name or dotted name `name` (`losses`, `self.losses`).
pub fn mentions(root: Node, name: &str, source: &str) -> bool {
    descendants(root).any(|n| matches!(n.kind(), "identifier" | "attribute") && text(n, source) == name)
}
