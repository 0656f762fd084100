//! Whether a node runs with autograd disabled: inside `with torch.no_grad()` /
//! `torch.inference_mode()` / `torch.set_grad_enabled(False)`, in a function decorated
//! with one of them, after a `torch.set_grad_enabled(False)` statement, in a Lightning
//! evaluation hook, or in a function whose every call site (in the file, and in the
//! project when one is known) is itself under one of these; a project decorator that
//! enters one of them counts as well.

use super::Facts;
use super::heuristics;
use crate::engine::field;
use crate::engine::tree::{self, KindName, ancestors};
use tree_sitter::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradSwitch {
    Disables,
    Enables,
}

/// What a context manager or decorator expression does to grad mode.
pub fn switch_of(expr: Node, source: &str) -> Option<GradSwitch> {
    let expr = tree::unparenthesize(expr);
    let (callee, call) = match expr.kind_name() {
        "call" => (expr.child_by_field_id(field::FUNCTION)?, Some(expr)),
        _ => (expr, None),
    };
    let name = tree::last_name(callee, source)?;
    let first_arg_false = call
        .and_then(|c| tree::positional_args(c).first().copied().or_else(|| tree::keyword_arg(c, "mode", source)))
        .is_some_and(|a| tree::text(a, source) == "False");
    // The last name decides: a silence-favouring reading, since `no_grad` means the
    // same thing however torch was imported.
    match name {
        "no_grad" => Some(GradSwitch::Disables),
        // A project's wrapper named for what it does (`smart_inference_mode()`).
        name if name.ends_with("_inference_mode") || name.ends_with("_no_grad") => Some(GradSwitch::Disables),
        "inference_mode" if first_arg_false => None,
        "inference_mode" => Some(GradSwitch::Disables),
        "enable_grad" => Some(GradSwitch::Enables),
        "set_grad_enabled" if call.is_some() => {
            Some(if first_arg_false { GradSwitch::Disables } else { GradSwitch::Enables })
        }
        _ => None,
    }
}

/// What a `with` statement does to grad mode (its first item that switches it).
pub fn with_switch(with: Node, source: &str) -> Option<GradSwitch> {
    let clause = with.named_children(&mut with.walk()).find(|c| c.kind_name() == "with_clause")?;
    let mut cursor = clause.walk();
    let items: Vec<Node> = clause.named_children(&mut cursor).filter(|c| c.kind_name() == "with_item").collect();
    items.into_iter().find_map(|item| {
        let value = item.child_by_field_id(field::VALUE)?;
        let value = if value.kind_name() == "as_pattern" { value.named_child(0)? } else { value };
        switch_of(value, source)
    })
}

impl<'t> Facts<'t> {
    /// True when autograd is certainly off where `node` runs.
    pub fn grad_disabled(&self, node: Node<'t>) -> bool {
        for ancestor in ancestors(node) {
            match ancestor.kind_name() {
                "with_statement" => match self.with_switch(ancestor) {
                    Some(GradSwitch::Disables) => return true,
                    Some(GradSwitch::Enables) => return false,
                    None => {}
                },
                "function_definition" => {
                    if self.disabled_by_statement(node, ancestor) {
                        return true;
                    }
                    return self.function_grad_disabled(ancestor);
                }
                _ => {}
            }
        }
        self.disabled_by_statement(node, self.root)
    }

    fn switch_of(&self, expr: Node<'t>) -> Option<GradSwitch> {
        switch_of(expr, self.source)
    }

    fn with_switch(&self, with: Node<'t>) -> Option<GradSwitch> {
        with_switch(with, self.source)
    }

    /// Whether the body of `function` runs with gradients disabled (memoised).
    fn function_grad_disabled(&self, function: Node<'t>) -> bool {
        if let Some(&known) = self.grad_disabled_functions.borrow().get(&function.id()) {
            return known;
        }
        // Provisional answer while the call sites are examined: recursion is not proof.
        self.grad_disabled_functions.borrow_mut().insert(function.id(), false);
        let answer = self.compute_function_grad_disabled(function);
        self.grad_disabled_functions.borrow_mut().insert(function.id(), answer);
        answer
    }

    fn compute_function_grad_disabled(&self, function: Node<'t>) -> bool {
        if let Some(decorated) = tree::parent(function).filter(|p| p.kind_name() == "decorated_definition") {
            let mut cursor = decorated.walk();
            for decorator in decorated.named_children(&mut cursor).filter(|d| d.kind_name() == "decorator") {
                let Some(expression) = decorator.named_child(0) else { continue };
                match self.switch_of(expression) {
                    Some(GradSwitch::Disables) => return true,
                    Some(GradSwitch::Enables) => return false,
                    None if self.is_no_grad_decorator(expression) || self.project_decorator_disables(expression) => {
                        return true;
                    }
                    None => {}
                }
            }
        }
        let Some(name_node) = function.child_by_field_id(field::NAME) else { return false };
        let name = self.text(name_node);
        let is_method = ancestors(function)
            .find(|a| tree::is_scope(a.kind_name()))
            .is_some_and(|a| a.kind_name() == "class_definition");
        if is_method && heuristics::is_framework_no_grad_hook(name) {
            return true;
        }
        let Some(here) = self.calls_here_with_grad_disabled(name, name_node, is_method) else { return false };
        let Some(elsewhere) = self.calls_from_other_files(function) else { return false };
        here + elsewhere > 0
    }

    /// A decorator defined in this file (`@no_grad_eval`, `@frozen()`) whose wrapper calls
    /// the function it wraps with gradients disabled.
    fn is_no_grad_decorator(&self, expression: Node<'t>) -> bool {
        let name = match expression.kind_name() {
            "call" => expression.child_by_field_id(field::FUNCTION),
            _ => Some(expression),
        };
        let Some(name) = name.filter(|n| n.kind_name() == "identifier") else { return false };
        let Some(binding) = self.index().lookup(self.text(name), name) else { return false };
        let definition = binding.statement;
        if !matches!(binding.kind, super::index::BindingKind::Definition)
            || definition.kind_name() != "function_definition"
        {
            return false;
        }
        // The parameters of the decorator and of the functions inside it: one of them is
        // the wrapped function.
        let parameters: Vec<&str> = std::iter::once(definition)
            .chain(tree::descendants(definition).filter(|n| n.kind_name() == "function_definition"))
            .filter_map(|f| f.child_by_field_id(field::PARAMETERS))
            .flat_map(|p| {
                super::index::target_names(p)
                    .into_iter()
                    .chain(tree::descendants(p).filter(|n| n.kind_name() == "identifier"))
            })
            .map(|n| self.text(n))
            .collect();
        tree::descendants(definition).filter(|n| n.kind_name() == "call").any(|call| {
            let callee = call.child_by_field_id(field::FUNCTION);
            callee.is_some_and(|c| c.kind_name() == "identifier" && parameters.contains(&self.text(c)))
                && ancestors(call)
                    .take_while(|a| a.id() != definition.id())
                    .any(|a| a.kind_name() == "with_statement" && self.with_switch(a) == Some(GradSwitch::Disables))
        })
    }

    /// `@evaluation_mode` / `@utils.inference()`: a project function that wraps what it
    /// decorates in `torch.no_grad()` or `torch.inference_mode()`.
    fn project_decorator_disables(&self, expression: Node<'t>) -> bool {
        let Some(project) = self.project.as_deref() else { return false };
        let callee = match expression.kind_name() {
            "call" => expression.child_by_field_id(field::FUNCTION),
            _ => Some(expression),
        };
        let Some(callee) = callee.filter(|c| matches!(c.kind_name(), "identifier" | "attribute")) else { return false };
        project
            .decorator_disables_grad(self.path, self.project_scope(expression).as_deref(), self.text(callee))
            .is_some()
    }

    /// How many calls of `function` other files of the project make, all with autograd
    /// disabled; `None` when one of them runs it with autograd on (or passes it around
    /// as a value), and that place is kept as the reason.
    fn calls_from_other_files(&self, function: Node<'t>) -> Option<usize> {
        let Some(project) = self.project.as_deref() else { return Some(0) };
        let Some(name) = self.project_name(function) else { return Some(0) };
        let callers = project.callers(self.path, &name);
        match callers.enabled {
            Some(site) => {
                self.grad_reasons.borrow_mut().insert(function.id(), site);
                None
            }
            None => Some(callers.disabled),
        }
    }

    /// How many calls of the function this file makes, all with gradients disabled;
    /// `None` when a use of its name is not such a call (a name passed around as a value
    /// may be called anywhere).
    fn calls_here_with_grad_disabled(&self, name: &str, definition: Node<'t>, is_method: bool) -> Option<usize> {
        let index = self.index();
        let mut call_sites = 0;
        for &identifier in index.occurrences(name).iter() {
            if identifier.id() == definition.id() {
                continue;
            }
            let parent = tree::parent(identifier);
            let reference = match parent {
                Some(p) if p.kind_name() == "attribute" => {
                    if p.child_by_field_id(field::ATTRIBUTE).map(|a| a.id()) != Some(identifier.id()) {
                        continue; // `name.x`: a different use of the name
                    }
                    p
                }
                // `def f` of a method is only reached as `obj.f`; a bare `f` is another name.
                _ if is_method => continue,
                _ => identifier,
            };
            if ancestors(reference).any(|a| matches!(a.kind_name(), "import_statement" | "import_from_statement")) {
                continue;
            }
            let call = tree::parent(reference).filter(|c| {
                c.kind_name() == "call" && c.child_by_field_id(field::FUNCTION).map(|f| f.id()) == Some(reference.id())
            });
            match call {
                Some(call) if self.grad_disabled(call) => call_sites += 1,
                _ => return None,
            }
        }
        Some(call_sites)
    }

    /// A `torch.set_grad_enabled(False)` statement earlier in the same body, not undone.
    fn disabled_by_statement(&self, node: Node<'t>, body: Node<'t>) -> bool {
        let mut state = None;
        let home = tree::enclosing_body(node).id();
        // `calls_named` already keeps to `body`.
        for call in self.calls_named(&["set_grad_enabled"], body) {
            if call.start_byte() >= node.start_byte() || tree::enclosing_body(call).id() != home {
                continue;
            }
            if tree::parent(call).is_none_or(|p| p.kind_name() != "expression_statement") {
                continue;
            }
            // Only statements at the body's top level, or in blocks that contain `node`.
            let block = tree::parent(call).and_then(tree::parent);
            if block.is_some_and(|b| !tree::contains(b, node)) {
                continue;
            }
            state = self.switch_of(call);
        }
        state == Some(GradSwitch::Disables)
    }
}
