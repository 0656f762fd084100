//! One walk over the tree that records what several facts need: every name binding per
//! scope (assignments, imports, parameters, loop targets, definitions), every call by
//! the name it is made through, and every identifier by its spelling.
//! Built lazily, only for files where some rule's query matched.

use crate::engine::tree::{self, is_scope};
use std::collections::HashMap;
use tree_sitter::Node;

/// Identifies a scope: the function, lambda or class node, or the module root.
pub type ScopeId = usize;

#[derive(Debug, Clone, Copy)]
pub enum BindingKind<'t> {
    /// `name = value` (also `name := value`).
    Value(Node<'t>),
    /// `a, name = value`: one of several targets of one value.
    Unpacked(Node<'t>),
    /// `name op= value`.
    Augmented(Node<'t>),
    /// `import a.b as name`, `from a import b as name`: the dotted path it stands for.
    Import,
    Parameter,
    /// `def name` / `class name`.
    Definition,
    /// `for name in iterable`.
    LoopTarget(Node<'t>),
    /// `with ... as name`, `except ... as name` and other bindings we do not model.
    Other,
}

#[derive(Debug, Clone)]
pub struct Binding<'t> {
    pub kind: BindingKind<'t>,
    /// The statement that binds (the assignment, the loop, the import ...).
    pub statement: Node<'t>,
    /// From this byte on the binding is in force.
    pub visible_from: usize,
    /// For imports, the dotted path the name stands for.
    pub import_path: Option<String>,
}

#[derive(Default)]
pub struct FileIndex<'t> {
    bindings: HashMap<&'t str, HashMap<ScopeId, Vec<Binding<'t>>>>,
    /// Calls by the last identifier of their callee.
    pub calls_by_name: HashMap<&'t str, Vec<Node<'t>>>,
    /// Every identifier (including attribute names) by spelling.
    pub identifiers: HashMap<&'t str, Vec<Node<'t>>>,
    pub root_scope: ScopeId,
}

impl<'t> FileIndex<'t> {
    pub fn build(root: Node<'t>, source: &'t str) -> FileIndex<'t> {
        let mut index = FileIndex { root_scope: root.id(), ..FileIndex::default() };
        // Explicit stack: deep expression nesting must not overflow a rayon thread's stack.
        let mut stack = vec![(root, root.id())];
        while let Some((node, scope)) = stack.pop() {
            let inner_scope = if is_scope(node.kind()) { node.id() } else { scope };
            index.record(node, scope, inner_scope, source);
            let mut cursor = node.walk();
            let children: Vec<Node> = node.children(&mut cursor).collect();
            for child in children.into_iter().rev() {
                // A definition's name belongs to the outer scope, everything else inside.
                let child_scope = if is_scope(node.kind())
                    && node.child_by_field_name("name").is_some_and(|n| n.id() == child.id())
                {
                    scope
                } else {
                    inner_scope
                };
                stack.push((child, child_scope));
            }
        }
        for list in index.bindings.values_mut().flat_map(|scopes| scopes.values_mut()) {
            list.sort_by_key(|b| b.visible_from);
        }
        index
    }

    fn record(&mut self, node: Node<'t>, scope: ScopeId, inner: ScopeId, source: &'t str) {
        match node.kind() {
            "identifier" => {
                self.identifiers.entry(tree::text(node, source)).or_default().push(node);
            }
            "call" => {
                if let Some(name) = tree::callee_name(node, source) {
                    self.calls_by_name.entry(name).or_default().push(node);
                }
            }
            "assignment" => {
                if let (Some(left), Some(right)) =
                    (node.child_by_field_name("left"), node.child_by_field_name("right"))
                {
                    let statement = node.parent().filter(|p| p.kind() == "expression_statement");
                    let statement = statement.unwrap_or(node);
                    let value = innermost_assigned_value(right);
                    self.bind_targets(left, scope, source, statement, node.end_byte(), value);
                }
            }
            "named_expression" => {
                if let (Some(name), Some(value)) =
                    (node.child_by_field_name("name"), node.child_by_field_name("value"))
                {
                    self.bind(name, scope, source, BindingKind::Value(value), node, node.end_byte());
                }
            }
            "augmented_assignment" => {
                if let (Some(left), Some(right)) =
                    (node.child_by_field_name("left"), node.child_by_field_name("right"))
                {
                    if left.kind() == "identifier" {
                        let kind = BindingKind::Augmented(right);
                        self.bind(left, scope, source, kind, node, node.end_byte());
                    }
                }
            }
            "for_statement" => {
                if let (Some(left), Some(right), Some(body)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                    node.child_by_field_name("body"),
                ) {
                    for target in target_names(left) {
                        let kind = BindingKind::LoopTarget(right);
                        self.bind(target, scope, source, kind, node, body.start_byte());
                    }
                }
            }
            "as_pattern" => {
                if let Some(alias) = node.child_by_field_name("alias") {
                    for target in target_names(alias) {
                        self.bind(target, scope, source, BindingKind::Other, node, node.end_byte());
                    }
                }
            }
            "function_definition" | "class_definition" => {
                if let Some(name) = node.child_by_field_name("name") {
                    self.bind(name, scope, source, BindingKind::Definition, node, node.start_byte());
                }
                if let Some(params) = node.child_by_field_name("parameters") {
                    self.bind_parameters(params, inner, source, node);
                }
            }
            "lambda" => {
                if let Some(params) = node.child_by_field_name("parameters") {
                    self.bind_parameters(params, inner, source, node);
                }
            }
            "import_statement" => self.bind_import(node, scope, source, None),
            "import_from_statement" => {
                let module = node.child_by_field_name("module_name").map(|m| tree::text(m, source));
                self.bind_import(node, scope, source, Some(module.unwrap_or(".")));
            }
            _ => {}
        }
    }

    fn bind_targets(
        &mut self,
        left: Node<'t>,
        scope: ScopeId,
        source: &'t str,
        statement: Node<'t>,
        visible_from: usize,
        value: Node<'t>,
    ) {
        if left.kind() == "identifier" {
            self.bind(left, scope, source, BindingKind::Value(value), statement, visible_from);
        } else {
            for target in target_names(left) {
                let kind = BindingKind::Unpacked(value);
                self.bind(target, scope, source, kind, statement, visible_from);
            }
        }
    }

    fn bind_parameters(&mut self, params: Node<'t>, scope: ScopeId, source: &'t str, def: Node<'t>) {
        let mut cursor = params.walk();
        for param in params.named_children(&mut cursor) {
            let name = match param.kind() {
                "identifier" => Some(param),
                "default_parameter" | "typed_default_parameter" => param.child_by_field_name("name"),
                "typed_parameter" | "list_splat_pattern" | "dictionary_splat_pattern" => {
                    param.named_child(0).filter(|n| n.kind() == "identifier")
                }
                _ => None,
            };
            if let Some(name) = name {
                self.bind(name, scope, source, BindingKind::Parameter, def, def.start_byte());
            }
        }
    }

    fn bind_import(&mut self, node: Node<'t>, scope: ScopeId, source: &'t str, from: Option<&str>) {
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (path, local) = match name.kind() {
                "aliased_import" => {
                    let (Some(path), Some(alias)) =
                        (name.child_by_field_name("name"), name.child_by_field_name("alias"))
                    else {
                        continue;
                    };
                    (tree::text(path, source), alias)
                }
                // `import a.b` binds `a` (to `a`); `from m import b` binds `b`.
                "dotted_name" => match name.named_child(0) {
                    Some(first) if from.is_none() => (tree::text(first, source), first),
                    Some(_) => (tree::text(name, source), name),
                    None => continue,
                },
                _ => continue,
            };
            let full = match from {
                Some(module) => format!("{module}.{path}"),
                None => path.to_string(),
            };
            let local_name = tree::text(local, source);
            let local_name = local_name.rsplit('.').next().unwrap_or(local_name);
            let binding = Binding {
                kind: BindingKind::Import,
                statement: node,
                visible_from: node.end_byte(),
                import_path: Some(full),
            };
            self.bindings.entry(local_name).or_default().entry(scope).or_default().push(binding);
        }
    }

    fn bind(
        &mut self,
        name: Node<'t>,
        scope: ScopeId,
        source: &'t str,
        kind: BindingKind<'t>,
        statement: Node<'t>,
        visible_from: usize,
    ) {
        let binding = Binding { kind, statement, visible_from, import_path: None };
        self.bindings.entry(tree::text(name, source)).or_default().entry(scope).or_default().push(binding);
    }

    /// Scopes whose bindings `node` can see, innermost first (class bodies are not
    /// visible from the functions inside them, as in Python).
    pub fn scope_chain(&self, node: Node<'t>) -> Vec<ScopeId> {
        let mut chain = Vec::new();
        for ancestor in tree::ancestors(node) {
            let kind = ancestor.kind();
            if is_scope(kind) && (kind != "class_definition" || chain.is_empty()) {
                chain.push(ancestor.id());
            }
        }
        chain.push(self.root_scope);
        chain
    }

    /// The binding of `name` in force at `node`: the last one made before it in the
    /// innermost scope that binds the name at all (a later one when none comes before,
    /// as for a name set further down a loop body).
    pub fn lookup(&self, name: &str, node: Node<'t>) -> Option<&Binding<'t>> {
        let at = node.start_byte();
        let scopes = self.bindings.get(name)?;
        self.scope_chain(node).into_iter().find_map(|scope| {
            let list = scopes.get(&scope)?;
            list.iter().rev().find(|b| b.visible_from <= at).or(list.first())
        })
    }

    /// Bindings of `name` made directly in `scope`.
    pub fn bindings_in(&self, scope: ScopeId, name: &str) -> &[Binding<'t>] {
        self.bindings.get(name).and_then(|s| s.get(&scope)).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// `a = b = value` binds both names to `value`.
fn innermost_assigned_value(mut right: Node) -> Node {
    while right.kind() == "assignment" {
        match right.child_by_field_name("right") {
            Some(next) => right = next,
            None => break,
        }
    }
    right
}

/// The plain names bound by an assignment or loop target (`a`, `a, (b, c)`, `[a, *b]`).
pub fn target_names(target: Node) -> Vec<Node> {
    let mut names = Vec::new();
    let mut stack = vec![target];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "identifier" => names.push(node),
            "pattern_list" | "tuple_pattern" | "list_pattern" | "list_splat_pattern"
            | "expression_list" | "tuple" | "list" | "parenthesized_expression" => {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor));
            }
            _ => {}
        }
    }
    names
}
