//! What one file tells the rest of the project, computed from its text alone (so it can
//! be cached by content): its top-level functions and methods with their decorators and
//! small facts about each, its imports, and the places where it calls (or passes around)
//! a function, each with the grad mode the place itself sets.
//!
//! One walk over the tree after the parse; nothing here resolves a name across files.

use crate::engine::facts::Facts;
use crate::engine::facts::grad_mode::{GradSwitch, switch_of, with_switch};
use crate::engine::facts::heuristics;
use crate::engine::facts::tensors::TensorValue;
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, LazyLock};
use tree_sitter::Node;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct FileSummary {
    /// Top-level functions and the methods of top-level classes, in document order.
    pub functions: Vec<FunctionSummary>,
    /// Module-level names defined by `def` or `class`.
    pub definitions: HashMap<Box<str>, Definition>,
    pub imports: Vec<Import>,
    /// Calls and uses as a value, by the last name called (`evaluate` for `ev.evaluate()`).
    pub sites: HashMap<Box<str>, Vec<Site>>,
    /// Whether the parser had to recover from errors (what parsed is still summarised).
    pub has_syntax_errors: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Definition {
    /// Index into `functions`.
    Function(u32),
    Class,
}

/// `import a.b` binds `a` to `a`; `import a.b as c` binds `c` to `a.b`; `from ..m import
/// f as g` binds `g` to `m.f` two packages up (`level` 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub name: Box<str>,
    pub level: u8,
    pub path: Box<str>,
    /// The function (index into `functions`) the import is made in; `None` at module level.
    pub scope: Option<u32>,
    /// 1-based line of the statement.
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FunctionSummary {
    /// `evaluate`, or `Trainer.evaluate` for a method.
    pub name: Box<str>,
    /// 1-based line of the `def`.
    pub line: u32,
    pub is_method: bool,
    /// What a `torch` decorator (`@torch.no_grad()`) does to its grad mode.
    pub own_switch: Option<GradSwitch>,
    /// Other decorators, as spelled without their arguments (`utils.evaluation_mode`).
    pub decorators: Vec<Box<str>>,
    /// A framework hook the framework itself runs under `no_grad` (`validation_step`).
    pub framework_hook: bool,
    /// Used as a decorator, it runs the decorated function with autograd disabled: a
    /// wrapper that calls it inside `with torch.no_grad():` (factories included), or a
    /// `torch.no_grad()` returned or applied to it.
    pub no_grad_decorator: bool,
}

/// A call of a function, or a use of it as a value (which may be called anywhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// What it is called on, as spelled (`self`, `trainer`, `utils.metrics`); `Some("")`
    /// for an expression that is not a dotted name (`get_trainer().evaluate()`).
    pub receiver: Option<Arc<str>>,
    /// 1-based.
    pub line: u32,
    /// The function (index into `functions`) the site is in; `None` at module level.
    pub caller: Option<u32>,
    /// The grad mode set around the site inside its function (a `with`, or a `torch`
    /// decorator of the function); `None`: the caller's own callers decide.
    pub switch: Option<GradSwitch>,
    pub is_call: bool,
}

/// The walk's state at a node.
#[derive(Clone, Copy)]
struct Context<'t> {
    /// The listed function the node is in.
    function: Option<u32>,
    /// The top-level class the node is directly in (for its methods).
    class: Option<Node<'t>>,
    switch: Option<GradSwitch>,
    /// Inside a function nested in the listed one (a wrapper, a lambda).
    nested: bool,
}

/// The node kinds and fields the walk tells apart, by the grammar's numbers: the walk
/// visits every node of every file of a project, and a kind compared by its name costs a
/// string's validation and comparison per node, a field looked up by name a search of
/// the grammar's field names.
struct Grammar {
    function_definition: u16,
    class_definition: u16,
    lambda: u16,
    with_statement: u16,
    call: u16,
    identifier: u16,
    attribute: u16,
    import_statement: u16,
    import_from_statement: u16,
    return_statement: u16,
    block: u16,
    string: u16,
    type_annotation: u16,
    /// Where a name stands as a value (passed, listed, returned, assigned).
    value_places: [u16; 6],
    keyword_argument: u16,
    assignment: u16,
    function_field: u16,
    object_field: u16,
    attribute_field: u16,
    value_field: u16,
    right_field: u16,
}

static GRAMMAR: LazyLock<Grammar> = LazyLock::new(|| {
    let language = crate::engine::language();
    let kind = |name: &str| language.id_for_node_kind(name, true);
    let field = |name: &str| language.field_id_for_name(name).map_or(0, |id| id.get());
    Grammar {
        function_definition: kind("function_definition"),
        class_definition: kind("class_definition"),
        lambda: kind("lambda"),
        with_statement: kind("with_statement"),
        call: kind("call"),
        identifier: kind("identifier"),
        attribute: kind("attribute"),
        import_statement: kind("import_statement"),
        import_from_statement: kind("import_from_statement"),
        return_statement: kind("return_statement"),
        block: kind("block"),
        string: kind("string"),
        type_annotation: kind("type"),
        value_places: ["argument_list", "list", "tuple", "return_statement", "expression_list", "pair"].map(kind),
        keyword_argument: kind("keyword_argument"),
        assignment: kind("assignment"),
        function_field: field("function"),
        object_field: field("object"),
        attribute_field: field("attribute"),
        value_field: field("value"),
        right_field: field("right"),
    }
});

pub fn summarize(source: &str, root: Node) -> FileSummary {
    walk(source, root).summary
}

/// What each function of the summary (by index) hands back from its `return`
/// statements (`Unknown` when they disagree or say nothing), from the same facts the rules
/// use. Costly next to the summary (the file's facts), so asked only for a file whose
/// functions a rule calls from another file.
pub fn returned_values(source: &str, root: Node) -> Vec<TensorValue> {
    let walk = walk(source, root);
    let mut returned = vec![TensorValue::Unknown; walk.summary.functions.len()];
    if !heuristics::mentions_graph_source(source) {
        return returned;
    }
    let facts = Facts::new(source, root, Path::new(""));
    let mut values: HashMap<u32, Vec<TensorValue>> = HashMap::new();
    for &(function, statement) in &walk.returns {
        let value = match statement.named_child(0) {
            // Whatever is computed with autograd off holds no graph.
            Some(_) if facts.grad_disabled(statement) => TensorValue::Detached,
            Some(value) => facts.tensor_value(value),
            None => TensorValue::Detached,
        };
        values.entry(function).or_default().push(value);
    }
    for (function, values) in values {
        returned[function as usize] = if values.contains(&TensorValue::Attached) {
            TensorValue::Attached
        } else if values.iter().all(|v| *v == TensorValue::Detached) {
            TensorValue::Detached
        } else {
            TensorValue::Unknown
        };
    }
    returned
}

fn walk<'s, 't>(source: &'s str, root: Node<'t>) -> Walk<'s, 't> {
    let mut walk = Walk::new(source, root);
    walk.visit(root, Vec::new());
    walk
}

/// What the top-level `statements` of `root` tell, as a walk of the whole file would
/// record it from them when `imported` are the names the imports before them bind: their
/// functions numbered from 0. `resummary` puts it in place of what the old text's
/// statements told.
pub(super) fn summarize_statements<'s>(
    source: &'s str,
    root: Node,
    statements: &[Node],
    imported: impl IntoIterator<Item = &'s str>,
) -> FileSummary {
    let mut walk = Walk::new(source, root);
    walk.known.extend(imported);
    let top = Context { function: None, class: None, switch: None, nested: false };
    for &statement in statements {
        walk.visit(statement, vec![(root, top, top, false)]);
    }
    walk.summary
}

struct Walk<'s, 't> {
    source: &'s str,
    summary: FileSummary,
    /// Names worth recording when used as a value: module-level definitions and imports.
    known: HashSet<&'s str>,
    /// The receivers of the sites, each kept once: a file calls most of its methods on
    /// a few (`self`, `torch`, `model`).
    receivers: HashMap<&'s str, Arc<str>>,
    /// `return` statements directly in each listed function.
    returns: Vec<(u32, Node<'t>)>,
}

impl<'s, 't> Walk<'s, 't> {
    /// A walk of `root`'s text that knows its module-level definitions.
    fn new(source: &'s str, root: Node<'t>) -> Walk<'s, 't> {
        let mut walk = Walk {
            source,
            summary: FileSummary::default(),
            known: HashSet::new(),
            receivers: HashMap::new(),
            returns: Vec::new(),
        };
        walk.summary.has_syntax_errors = root.has_error();
        walk.declare_top_level(root);
        walk
    }

    fn text(&self, node: Node) -> &'s str {
        tree::text(node, self.source)
    }

    /// Module-level definitions, so that uses of them before their `def` are known.
    fn declare_top_level(&mut self, root: Node) {
        let mut cursor = root.walk();
        for child in root.named_children(&mut cursor) {
            let definition = if child.kind_name() == "decorated_definition" {
                child.child_by_field_id(field::DEFINITION).unwrap_or(child)
            } else {
                child
            };
            if matches!(definition.kind_name(), "function_definition" | "class_definition")
                && let Some(name) = definition.child_by_field_id(field::NAME)
            {
                self.known.insert(tree::text(name, self.source));
            }
        }
    }

    /// One pre-order walk of `start` with a tree cursor, keeping the path from the root
    /// (each node's parent and grand-parent are known without asking the tree, which
    /// finds them by a descent from the root); `path` is the path above `start`.
    fn visit(&mut self, start: Node<'t>, mut path: Vec<(Node<'t>, Context<'t>, Context<'t>, bool)>) {
        let grammar = &*GRAMMAR;
        let top = Context { function: None, class: None, switch: None, nested: false };
        // Each node on the path with the context inside it and the one it was given, and
        // whether it is a `def` or `class`.
        let mut cursor = start.walk();
        let mut context = top;
        let mut node = cursor.node();
        loop {
            if node.is_named()
                && let Some(inner) = self.enter(grammar, node, &path, context)
                && cursor.goto_first_child()
            {
                let child = cursor.node();
                let kind = node.kind_id();
                let definition = kind == grammar.function_definition || kind == grammar.class_definition;
                path.push((node, inner, context, definition));
                context = child_context(grammar, definition, child, inner, context);
                node = child;
                continue;
            }
            // The next sibling, else the next sibling of the nearest ancestor that has one.
            loop {
                if cursor.goto_next_sibling() {
                    node = cursor.node();
                    let &(_, inner, outer, definition) = path.last().expect("a sibling has a parent");
                    context = child_context(grammar, definition, node, inner, outer);
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
                path.pop();
            }
        }
    }

    /// Record what `node` tells (its parents are the ends of `path`) and return the
    /// context inside it, or `None` when nothing inside it matters.
    fn enter(
        &mut self,
        grammar: &Grammar,
        node: Node<'t>,
        path: &[(Node<'t>, Context<'t>, Context<'t>, bool)],
        context: Context<'t>,
    ) -> Option<Context<'t>> {
        let parent = path.last().map(|p| p.0);
        let mut inner = context;
        let kind = node.kind_id();
        if kind == grammar.identifier {
            self.value_use(grammar, node, parent, context);
            return None;
        } else if kind == grammar.attribute {
            self.value_use(grammar, node, parent, context);
            // `a.b`: neither name inside is a call or a value of its own.
            if node.child_by_field_id(grammar.object_field).is_some_and(|o| o.kind_id() == grammar.identifier) {
                return None;
            }
        } else if kind == grammar.call {
            self.call(grammar, node, context);
        } else if kind == grammar.function_definition {
            let grandparent = path.len().checked_sub(2).map(|i| path[i].0);
            inner = self.enter_function(node, parent, grandparent, context);
        } else if kind == grammar.lambda {
            inner.switch = None;
            inner.nested = context.function.is_some();
        } else if kind == grammar.class_definition {
            // Only classes at module level list their methods.
            let grandparent = path.len().checked_sub(2).map(|i| path[i].0);
            let top_level =
                context.function.is_none() && context.class.is_none() && is_module_level(parent, grandparent);
            inner.class = top_level.then_some(node);
            if let Some(name) = node.child_by_field_id(field::NAME).filter(|_| top_level) {
                self.summary.definitions.insert(self.text(name).into(), Definition::Class);
            }
        } else if kind == grammar.with_statement {
            if let Some(switch) = with_switch(node, self.source) {
                inner.switch = Some(switch);
            }
        } else if kind == grammar.import_statement || kind == grammar.import_from_statement {
            self.import(node, context);
            return None;
        } else if kind == grammar.return_statement {
            if !context.nested
                && let Some(function) = context.function
            {
                self.returns.push((function, node));
            }
        } else if kind == grammar.string {
            // Only an interpolation holds code.
            if !self.text(node).contains('{') {
                return None;
            }
        } else if kind == grammar.type_annotation {
            // `x: int`: a name that is neither called nor passed.
            if node.child_count() == 1 && node.child(0).is_some_and(|t| t.kind_id() == grammar.identifier) {
                return None;
            }
        } else if node.child_count() == 0 {
            return None;
        }
        Some(inner)
    }

    fn enter_function(
        &mut self,
        function: Node<'t>,
        parent: Option<Node<'t>>,
        grandparent: Option<Node<'t>>,
        context: Context<'t>,
    ) -> Context<'t> {
        let decorated = parent.filter(|p| p.kind_name() == "decorated_definition");
        let decorators = decorated.map(decorators_of).unwrap_or_default();
        let switch = decorators.iter().find_map(|d| d.named_child(0).and_then(|e| switch_of(e, self.source)));
        let listed = context.function.is_none() && (context.class.is_some() || is_module_level(parent, grandparent));
        if !listed {
            // A nested function (a decorator's wrapper): its body runs when it is called,
            // under its own decorator's grad mode, else as the listed function around it.
            if context.function.is_some() && switch == Some(GradSwitch::Disables) {
                self.mark_no_grad_decorator(context.function);
            }
            return Context { switch, nested: context.function.is_some(), ..context };
        }
        let name = function.child_by_field_id(field::NAME).map_or("", |n| self.text(n));
        let qualified: Box<str> = match context.class.and_then(|c| c.child_by_field_id(field::NAME)) {
            Some(class) => format!("{}.{name}", self.text(class)).into(),
            None => name.into(),
        };
        let index = self.summary.functions.len() as u32;
        if context.class.is_none() {
            self.summary.definitions.insert(name.into(), Definition::Function(index));
        }
        let spelled = decorators
            .iter()
            .filter_map(|d| d.named_child(0))
            .filter(|e| switch_of(*e, self.source).is_none())
            .filter_map(|e| dotted_callee(e, self.source))
            .map(Box::from)
            .collect();
        self.summary.functions.push(FunctionSummary {
            name: qualified,
            line: function.start_position().row as u32 + 1,
            is_method: context.class.is_some(),
            own_switch: switch,
            decorators: spelled,
            framework_hook: context.class.is_some() && heuristics::is_framework_no_grad_hook(name),
            no_grad_decorator: returns_applied_switch(function, self.source),
        });
        Context { function: Some(index), class: None, switch, nested: false }
    }

    fn mark_no_grad_decorator(&mut self, function: Option<u32>) {
        if let Some(f) = function.and_then(|f| self.summary.functions.get_mut(f as usize)) {
            f.no_grad_decorator = true;
        }
    }

    fn call(&mut self, grammar: &Grammar, call: Node<'t>, context: Context<'t>) {
        let Some(function) = call.child_by_field_id(grammar.function_field) else { return };
        let kind = function.kind_id();
        let (receiver, name) = if kind == grammar.identifier {
            (None, self.text(function))
        } else if kind == grammar.attribute {
            let (Some(object), Some(attribute)) =
                (function.child_by_field_id(grammar.object_field), function.child_by_field_id(grammar.attribute_field))
            else {
                return;
            };
            let receiver = if is_dotted_name(object) { self.text(object) } else { "" };
            (Some(receiver), self.text(attribute))
        } else {
            return;
        };
        // A wrapper that calls what it wraps with autograd disabled makes a no-grad decorator.
        if context.nested
            && context.switch == Some(GradSwitch::Disables)
            && receiver.is_none()
            && is_parameter_around(call, name, self.source)
        {
            self.mark_no_grad_decorator(context.function);
        }
        self.record(name, receiver, call, context, true);
    }

    /// A function passed around as a value (`hooks.append(evaluate)`,
    /// `run(self.evaluate)`): it may be called anywhere.
    fn value_use(&mut self, grammar: &Grammar, node: Node<'t>, parent: Option<Node<'t>>, context: Context<'t>) {
        let Some(parent) = parent else { return };
        let place = parent.kind_id();
        let as_value = if grammar.value_places.contains(&place) {
            true
        } else if place == grammar.keyword_argument || place == grammar.assignment {
            parent.child_by_field_id(grammar.value_field).or_else(|| parent.child_by_field_id(grammar.right_field))
                == Some(node)
        } else {
            false
        };
        if !as_value {
            return;
        }
        if node.kind_id() == grammar.identifier {
            if self.known.contains(self.text(node)) {
                self.record(self.text(node), None, node, context, false)
            }
            return;
        }
        let (Some(object), Some(attribute)) =
            (node.child_by_field_id(grammar.object_field), node.child_by_field_id(grammar.attribute_field))
        else {
            return;
        };
        let receiver = self.text(object);
        if object.kind_id() == grammar.identifier && (receiver == "self" || self.known.contains(receiver)) {
            self.record(self.text(attribute), Some(receiver), node, context, false);
        }
    }

    fn record(&mut self, name: &str, receiver: Option<&'s str>, node: Node, context: Context, is_call: bool) {
        let receiver = receiver.map(|r| self.receivers.entry(r).or_insert_with(|| Arc::from(r)).clone());
        let site = Site {
            receiver,
            line: node.start_position().row as u32 + 1,
            caller: context.function,
            switch: context.switch,
            is_call,
        };
        match self.summary.sites.get_mut(name) {
            Some(sites) => sites.push(site),
            None => {
                self.summary.sites.insert(name.into(), vec![site]);
            }
        }
    }

    fn import(&mut self, statement: Node<'t>, context: Context<'t>) {
        let scope = context.function;
        let line = statement.start_position().row as u32 + 1;
        let mut cursor = statement.walk();
        if statement.kind_name() == "import_statement" {
            for name in statement.children_by_field_id(field::id(field::NAME), &mut cursor) {
                let (path, bound) = match name.kind_name() {
                    "aliased_import" => {
                        let (Some(path), Some(alias)) =
                            (name.child_by_field_id(field::NAME), name.child_by_field_id(field::ALIAS))
                        else {
                            continue;
                        };
                        (self.text(path), self.text(alias))
                    }
                    _ => {
                        let path = self.text(name);
                        (path.split('.').next().unwrap_or(path), path.split('.').next().unwrap_or(path))
                    }
                };
                self.add_import(bound, 0, path, scope, line);
            }
            return;
        }
        let Some(module) = statement.child_by_field_id(field::MODULE_NAME) else { return };
        let (level, module_path) = match module.kind_name() {
            "relative_import" => {
                let spelled = self.text(module);
                let level = spelled.chars().take_while(|c| *c == '.').count();
                (level, spelled[level..].trim())
            }
            _ => (0, self.text(module)),
        };
        for name in statement.children_by_field_id(field::id(field::NAME), &mut cursor) {
            let (imported, bound) = match name.kind_name() {
                "aliased_import" => {
                    let (Some(path), Some(alias)) =
                        (name.child_by_field_id(field::NAME), name.child_by_field_id(field::ALIAS))
                    else {
                        continue;
                    };
                    (self.text(path), self.text(alias))
                }
                _ => (self.text(name), self.text(name)),
            };
            let path = if module_path.is_empty() { imported.to_string() } else { format!("{module_path}.{imported}") };
            self.add_import(bound, level.min(u8::MAX as usize) as u8, &path, scope, line);
        }
    }

    fn add_import(&mut self, bound: &'s str, level: u8, path: &str, scope: Option<u32>, line: u32) {
        self.known.insert(bound);
        self.summary.imports.push(Import { name: bound.into(), level, path: path.into(), scope, line });
    }
}

/// Whether `name` is a parameter of a function around `node` (a wrapper calling the
/// function it wraps).
fn is_parameter_around(node: Node, name: &str, source: &str) -> bool {
    tree::ancestors(node).filter(|a| a.kind_name() == "function_definition").any(|function| {
        let Some(parameters) = function.child_by_field_id(field::PARAMETERS) else { return false };
        let mut cursor = parameters.walk();
        let names: Vec<Node> = parameters.named_children(&mut cursor).collect();
        names.into_iter().any(|p| {
            let identifier = if p.kind_name() == "identifier" { Some(p) } else { p.named_child(0) };
            identifier.is_some_and(|i| i.kind_name() == "identifier" && tree::text(i, source) == name)
        })
    })
}

fn decorators_of(decorated: Node) -> Vec<Node> {
    let mut cursor = decorated.walk();
    decorated.named_children(&mut cursor).filter(|d| d.kind_name() == "decorator").collect()
}

/// Whether a `def` or `class` whose parent and grand-parent are these is a statement of
/// the module (decorated or not).
fn is_module_level(parent: Option<Node>, grandparent: Option<Node>) -> bool {
    match parent {
        Some(p) if p.kind_name() == "decorated_definition" => grandparent.is_some_and(|g| g.kind_name() == "module"),
        Some(p) => p.kind_name() == "module",
        None => false,
    }
}

/// The context a child of a node is walked in: a decorator, a name or the parameters of
/// a `def` or `class` (`definition`) are where the statement is, not inside it.
fn child_context<'t>(
    grammar: &Grammar,
    definition: bool,
    child: Node<'t>,
    inner: Context<'t>,
    outer: Context<'t>,
) -> Context<'t> {
    if definition && child.kind_id() != grammar.block { outer } else { inner }
}

/// `name`, `a.b.name`: a dotted name made of identifiers only.
fn is_dotted_name(node: Node) -> bool {
    match node.kind_name() {
        "identifier" => true,
        "attribute" => node.child_by_field_id(field::OBJECT).is_some_and(is_dotted_name),
        _ => false,
    }
}

/// `utils.evaluation_mode` for `@utils.evaluation_mode` and `@utils.evaluation_mode(True)`.
fn dotted_callee<'s>(expression: Node, source: &'s str) -> Option<&'s str> {
    let callee = match expression.kind_name() {
        "call" => expression.child_by_field_id(field::FUNCTION)?,
        _ => expression,
    };
    is_dotted_name(callee).then(|| tree::text(callee, source))
}

/// `return torch.no_grad()(function)` or `return torch.inference_mode()` (a factory whose
/// result decorates): a `return` directly in `function` handing back a disabling switch.
fn returns_applied_switch(function: Node, source: &str) -> bool {
    let Some(body) = function.child_by_field_id(field::BODY) else { return false };
    let mut cursor = body.walk();
    let statements: Vec<Node> = body.named_children(&mut cursor).collect();
    statements.into_iter().filter(|s| s.kind_name() == "return_statement").filter_map(|s| s.named_child(0)).any(
        |value| {
            let value = tree::unparenthesize(value);
            let applied = (value.kind_name() == "call")
                .then(|| value.child_by_field_id(field::FUNCTION))
                .flatten()
                .filter(|f| f.kind_name() == "call");
            [Some(value), applied].into_iter().flatten().any(|v| switch_of(v, source) == Some(GradSwitch::Disables))
        },
    )
}
