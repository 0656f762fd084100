//! OOM001 loss-tensor-kept: a graph-attached tensor stored beyond its step.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::heuristics;
use crate::engine::facts::index::{Binding, BindingKind, target_names};
use crate::engine::facts::tensors::{GRAPH_KEEPING_METHODS, TensorValue};
use crate::engine::tree::{self, KindName};
use crate::fix::{Applicability, Edit, Fix};
use tree_sitter::Node;

mod one_pass;

const FILES: (&str, &str) = rule_files!("OOM001-loss-tensor-kept");

pub static RULE: Rule = Rule {
    code: "OOM001",
    slug: "loss-tensor-kept",
    default_severity: Severity::Error,
    preview: false,
    summary: "A graph-attached tensor (a loss, a model output) is stored beyond its step",
    cost: Cost::Memory {
        figure: Figure::End,
        bad: "kept by the loss tensors of 4 validation batches of 8",
        good: "with `.item()`",
    },
    fix_title: "Store `loss.item()` (a Python number) or `tensor.detach()`",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| heuristics::mentions_graph_source(source) && may_store(source),
    reads_project: true,
    check: Check::Query(check),
};

/// Whether `source` may hold a store one of the rule's patterns matches, read from its
/// text alone: a method named `append` or `extend`, a `+=`, an assignment to a subscript,
/// or `x = x + v`. `false` proves none can match: a file of model definitions stores
/// nothing, and is not parsed when no other rule could match it either (5 of the 9 files
/// of pytorch/examples that this rule alone had parsed).
fn may_store(source: &str) -> bool {
    text_test::contains_any(source, &["append", "extend", "+="]) || assigns_to_subscript(source) || adds_to_itself(source)
}

/// A `]` followed, on its logical line, by an `=` that is not `==` (`a[i] = v`), or by a
/// `:` (an annotated target, `a[i]: T = v`, and many that are not).
fn assigns_to_subscript(source: &str) -> bool {
    let bytes = source.as_bytes();
    memchr::memchr_iter(b']', bytes).any(|at| {
        let next = spaces_after(bytes, at + 1);
        match bytes.get(next) {
            Some(b'=') => bytes.get(next + 1) != Some(&b'='),
            Some(b':') => true,
            _ => false,
        }
    })
}

/// A `+` whose left operand is a name (`x + v`) and which follows a plain `=` whose
/// target names that name: `x = x + v`, and `x: T = x + v`.
fn adds_to_itself(source: &str) -> bool {
    let bytes = source.as_bytes();
    memchr::memchr_iter(b'+', bytes).any(|plus| {
        let name_end = spaces_before(bytes, plus);
        let name_start = name_end - text_test::last_word(&source[..name_end]).len();
        let equals_end = spaces_before(bytes, name_start);
        if name_start == name_end || equals_end == 0 || bytes[equals_end - 1] != b'=' {
            return false;
        }
        let equals = equals_end - 1;
        // Not `==`, `<=`, `+=`, `:=`, ...: those compare, or bind in a way no pattern reads.
        if equals > 0 && b"=!<>+-*/%&|^:@~".contains(&bytes[equals - 1]) {
            return false;
        }
        text_test::has_word(&source[target_start(bytes, equals)..equals], &source[name_start..name_end])
    })
}

/// Where the spaces (and line continuations) that end at `at` begin.
fn spaces_before(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes[..at] {
            [.., b' ' | b'\t'] => at -= 1,
            [.., b'\\', b'\n'] => at -= 2,
            [.., b'\\', b'\r', b'\n'] => at -= 3,
            _ => return at,
        }
    }
}

/// Where the spaces (and line continuations) that start at `at` end.
fn spaces_after(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at..).unwrap_or_default() {
            [b' ' | b'\t', ..] => at += 1,
            [b'\\', b'\n', ..] => at += 2,
            [b'\\', b'\r', b'\n', ..] => at += 3,
            _ => return at,
        }
    }
}

/// Where the target of the assignment whose `=` is at `at` may start: after the last
/// line end before it that is not a continuation (`\` at the end of the line), `;` or
/// other `=` (`y = x + v` in `x = y = x + v` is an assignment to `y`). So each `=` has a
/// stretch of its own to search, and a line of many is read once, not once per `=`.
fn target_start(bytes: &[u8], at: usize) -> usize {
    let mut end = at;
    while let Some(boundary) = memchr::memrchr3(b'\n', b';', b'=', &bytes[..end]) {
        let continued = bytes[boundary] == b'\n' && matches!(bytes[..boundary], [.., b'\\'] | [.., b'\\', b'\r']);
        if !continued {
            return boundary + 1;
        }
        end = boundary;
    }
    0
}

/// OOM001 asks whether module-level code runs a backward pass, by autograd
/// (`loss.backward()`) or by a function written for it (`backprop(...)`): the calls so
/// named anywhere in the file decide it (see `crate::rules::module_wide_words`).
pub(super) const MODULE_WIDE_WORDS: &[&str] = &["backward", "backprop"];

/// A file that never names torch (nor Lightning) and never calls `backward` builds no
/// autograd graph of its own (a `loss(x, y)` of plain numbers in a lesson that precedes
/// the tensors): only a function of another project file can hand it one. Read over the
/// whole file (`crate::rules::whole_text_tests`); the backward passes a function writes
/// by hand (`engine::facts::tensors`) are found through the names of the functions
/// called and the module-level code, which an editor's partial relint covers.
pub(super) fn names_autograd(source: &str) -> bool {
    text_test::contains_any(source, &["torch", "lightning", "backward"])
}

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(store), Some(container), Some(value)) = (found.get("store"), found.get("container"), found.get("value"))
    else {
        return;
    };
    let facts = checker.facts;
    // The questions about the container come first: they read the syntax and the file's
    // bindings only, and most stores of a script (counters, lists of file names, a
    // result per component) are made anew each step or never outlive one. Whether the
    // value holds a graph follows names, grad modes and the project's callees.
    if overwrites_one_slot(store) {
        return;
    }
    let step = tree::enclosing_loop(store);
    if !outlives_step(checker, container, step) {
        return;
    }
    if !facts.holds_graph(value) || facts.grad_disabled(store) {
        return;
    }
    if !names_autograd(checker.source()) && project_callee_of(checker, value).is_none() {
        return;
    }
    if accumulated_for_backward(checker, container, store, value) {
        return;
    }
    // Each step must build a graph of its own (a forward pass or a loss); slices of one
    // graph made before the loop share it and cost nothing per step. Asked once per loop:
    // a script's loop stores many values, and the answer reads the whole loop.
    let builds_graph = |step: Node<'t>| {
        *facts.memo("OOM001 a step builds a graph", Some(step), || {
            tree::descendants(step).any(|n| n.kind_name() == "call" && facts.builds_graph(n))
        })
    };
    if step.is_some_and(|step| !builds_graph(step)) {
        return;
    }
    let region = step.unwrap_or_else(|| tree::enclosing_body(store));
    let release = graph_release(checker, region, value);
    // A CPU copy kept after a backward that frees the graph holds no GPU memory to speak of.
    let to_cpu = [".cpu()", ".to(\"cpu\")", ".to('cpu')"].iter().any(|m| checker.text(value).ends_with(m));
    if matches!(release, GraphRelease::Freed) && to_cpu {
        return;
    }
    // A running sum or list of losses that each step's backward frees, made anew for each
    // pass over the data: a chain of small autograd nodes, dropped with the accumulator.
    if matches!(release, GraphRelease::Freed)
        && step.is_some_and(|step| one_pass::freed_within_one_pass(checker, container, store, value, step))
    {
        return;
    }
    let (severity, why) = match release {
        GraphRelease::Freed => (
            Severity::Warning,
            "`backward()` frees the graph's buffers, but each step still keeps a tensor and its autograd nodes alive",
        ),
        GraphRelease::Retained => {
            (Severity::Error, "`backward(retain_graph=True)` keeps the graph, so every step's activations stay alive")
        }
        GraphRelease::Never => {
            (Severity::Error, "no `backward()` here frees the graph, so every step's activations stay alive")
        }
    };
    let value_text = checker.text(value);
    let container_text = checker.text(container);
    let message = format!("`{value_text}` is kept in `{container_text}` with its autograd graph: {why}");
    let help = if looks_scalar(value_text) {
        format!("store `{value_text}.item()` (a Python number), or `{value_text}.detach()`")
    } else {
        format!("store `{value_text}.detach()` (or move it off the GPU with `.detach().cpu()`)")
    };
    let fix = detach_fix(checker, value);
    let callee = project_callee_of(checker, value);
    let diagnostic = checker.report(store, severity, message, help);
    diagnostic.fix = Some(fix);
    diagnostic.related.extend(callee);
}

/// The project function (in another file, or this one) whose returned tensor `value`
/// is, directly (`compute_loss(batch)`) or through one assignment (`loss =
/// compute_loss(batch)`): the place that makes the value graph-attached.
fn project_callee_of<'t>(checker: &Checker<'_, 't>, value: Node<'t>) -> Option<crate::diagnostic::Related> {
    let facts = checker.facts;
    let value = tree::unparenthesize(value);
    let call = match value.kind_name() {
        "call" => value,
        "identifier" => match facts.index().lookup(checker.text(value), value)?.kind {
            BindingKind::Value(bound) if bound.kind_name() == "call" => bound,
            _ => return None,
        },
        _ => return None,
    };
    facts.project_callee(call).filter(|(v, _)| *v == TensorValue::Attached).map(|(_, site)| site)
}

/// `loss` → `loss.item()` for a scalar loss, `x` → `x.detach()` otherwise. Unsafe: the
/// stored element changes type (a float instead of a tensor) or loses its gradient.
fn detach_fix(checker: &Checker, value: Node) -> Fix {
    let text = checker.text(value);
    let method = if looks_scalar(text) { "item" } else { "detach" };
    let primary =
        matches!(value.kind_name(), "identifier" | "attribute" | "call" | "subscript" | "parenthesized_expression");
    let edits = if primary {
        vec![Edit::insert(value.end_byte(), format!(".{method}()"))]
    } else {
        vec![Edit::insert(value.start_byte(), "("), Edit::insert(value.end_byte(), format!(").{method}()"))]
    };
    Fix::new(Applicability::Unsafe, format!("Store `{text}.{method}()`"), edits)
}

/// The container survives the step: made before the loop (or an attribute of `self`),
/// not a fresh one per iteration.
fn outlives_step<'t>(checker: &Checker<'_, 't>, container: Node<'t>, step: Option<Node<'t>>) -> bool {
    let root = container_root(container);
    if root.kind_name() != "identifier" {
        return false;
    }
    let name = checker.text(root);
    let Some(step) = step else {
        // Outside a loop, `self.outputs.append(x)` outlives the step in per-step methods
        // (`training_step`, `forward`); elsewhere it is one-off bookkeeping.
        if name == "self" {
            let method = tree::enclosing_function(container).and_then(|f| f.child_by_field_id(field::NAME));
            return method.map(|m| checker.text(m)).is_some_and(|m| m == "forward" || m.ends_with("_step"));
        }
        // Outside a loop only a name shared across calls (a global) outlives the call.
        return tree::enclosing_function(container).is_some()
            && checker.facts.index().lookup(name, root).is_some_and(|b| {
                tree::enclosing_function(b.statement).is_none() && b.statement.kind_name() != "import_statement"
            });
    };
    if name == "self" {
        return true;
    }
    // A local list filled inside a forward pass is that pass's output, not a history.
    let function = tree::enclosing_function(container);
    let function_name = function.and_then(|f| f.child_by_field_id(field::NAME));
    if function_name.is_some_and(|n| heuristics::is_forward_method_name(checker.text(n))) {
        return false;
    }
    let index = checker.facts.index();
    let Some(scope) = index.scope_chain(root).find(|s| !index.bindings_in(*s, name).is_empty()) else {
        return false; // never bound here: cannot tell
    };
    // A list of the store's own scope (local to one call, or a module-level name filled
    // at module level), filled once per component (each text encoder, each layer, each
    // network) rather than once per batch or step, does not grow across steps: a leak
    // needs a step loop that the list survives. A list made anew each epoch and filled
    // over the networks holds one entry per network, however long training runs. A
    // global filled inside a function is not the store's own: each call may be a step.
    let own_scope = match function {
        Some(f) => f.id() == scope.id(),
        None => scope.kind_name() == "module",
    };
    let fresh: Vec<Node> = fresh_bindings(checker, scope, name).into_iter().map(|b| b.statement).collect();
    if own_scope {
        // The loops the list survives: those around the store that do not make it anew.
        let mut outer_loops = tree::ancestors_in_function(container)
            .filter(|n| tree::is_loop(n.kind_name()))
            .filter(|l| !fresh.iter().any(|b| tree::contains(*l, *b)));
        if !outer_loops.any(|l| is_step_loop(checker, l)) {
            return false;
        }
    }
    // Re-created inside the loop (`batch_losses = []`, `total = 0`): lives one step.
    !fresh.iter().any(|binding| tree::contains(step, *binding))
}

/// The bindings of `name` made directly in `scope` that make it anew rather than carry
/// its earlier value: an assignment that does not read it (`losses = []`, `total = 0`),
/// one target of several (`total, n = 0, 0`), a loop over it (`for losses in ...`).
fn fresh_bindings<'t>(checker: &Checker<'_, 't>, scope: Node<'t>, name: &str) -> Vec<Binding<'t>> {
    let mut bindings = checker.facts.index().bindings_in(scope, name);
    bindings.retain(|b| match b.kind {
        BindingKind::Value(value) => !tree::mentions(value, name, checker.source()),
        BindingKind::LoopTarget(_) | BindingKind::Unpacked(_) => true,
        _ => false,
    });
    bindings
}

/// A loop whose iterations are steps over data: a `while` loop, a loop that trains
/// (`backward()`, `optimizer.step()`), or one over something named like data or steps
/// (`loader`, `batches`, `range(num_steps)`, `tqdm(...)`).
fn is_step_loop<'t>(checker: &Checker<'_, 't>, step: Node<'t>) -> bool {
    if step.kind_name() == "while_statement" {
        return true;
    }
    let source = checker.source();
    let over_data = step.child_by_field_id(field::RIGHT).is_some_and(|iterable| {
        tree::descendants(iterable)
            .filter(|n| n.kind_name() == "identifier")
            .any(|n| heuristics::is_step_iterable_name(tree::text(n, source)))
    });
    over_data
        || checker.facts.calls_named(&["backward", "manual_backward", "step"], step).into_iter().any(|c| {
            tree::callee_name(c, source) != Some("step")
                || tree::method_receiver(c).is_some_and(|r| tree::text(r, source).contains("optim"))
        })
}

/// `self.history` for `self.history[k]`, `losses` for `losses`.
fn container_root(mut node: Node) -> Node {
    loop {
        let next = match node.kind_name() {
            "attribute" => node.child_by_field_id(field::OBJECT),
            "subscript" => node.child_by_field_id(field::VALUE),
            _ => None,
        };
        match next {
            Some(inner) => node = inner,
            None => return node,
        }
    }
}

/// `total += loss` ... `total.backward()`, `torch.stack(losses).mean().backward()`,
/// or a function that returns the accumulated tensor to a caller that backpropagates
/// (`return total`, `return torch.stack(losses)`; a bare `return losses` list is as
/// likely a history, so it does not count).
fn accumulated_for_backward<'t>(
    checker: &Checker<'_, 't>,
    container: Node<'t>,
    store: Node<'t>,
    value: Node<'t>,
) -> bool {
    let body = tree::enclosing_body(store);
    let name = checker.text(container);
    let source = checker.source();
    // What backward may be called on: the container, or a name read back from it later
    // (`loss = losses[i]`, `for loss in losses`).
    let mut names = vec![name];
    let mut reduced: Vec<&str> = Vec::new();
    for later in tree::descendants(body).filter(|n| n.start_byte() > store.end_byte()) {
        let (target, read) = match later.kind_name() {
            "assignment" => (later.child_by_field_id(field::LEFT), later.child_by_field_id(field::RIGHT)),
            "for_statement" => (later.child_by_field_id(field::LEFT), later.child_by_field_id(field::RIGHT)),
            _ => continue,
        };
        if let (Some(target), Some(read)) = (target, read)
            && tree::mentions(read, name, source)
        {
            let targets: Vec<&str> = target_names(target).into_iter().map(|n| tree::text(n, source)).collect();
            // `total = sum(losses)` / `embeds = torch.cat(parts)`: an intermediate that
            // still carries every stored graph.
            if later.kind_name() == "assignment" && carries(read, name, source, true) {
                reduced.extend(targets.iter().copied());
            }
            names.extend(targets);
        }
    }
    let backward_mentions = checker.facts.calls_named(&BACKWARD_NAMES, body).into_iter().any(|call| {
        tree::enclosing_body(call).id() == body.id() && names.iter().any(|n| tree::mentions(call, n, source))
    });
    let is_list = tree::parent(container).is_some_and(|p| p.kind_name() == "attribute")
        || tree::parent(value).is_some_and(|p| p.kind_name() == "list");
    backward_mentions
        || returns(checker, body, name, !is_list)
        || reduced.iter().any(|derived| returns(checker, body, derived, true))
        || flows_into_backward(checker, body, store.end_byte(), vec![name.to_string()], 0)
}

/// Whether what `names` hold after `after` reaches a `backward()` in `body`, through
/// the assignments that follow (`values = torch.cat(values)`, `advantage = returns -
/// values`, `loss = actor_loss + critic_loss`, `loss.backward()`) or through a function
/// of this file that it is handed to and that backpropagates through the matching
/// parameter (`compute_loss(policies, values)`): a rollout's outputs kept for the update
/// at its end. A name rebound to a detached value (`values = torch.cat(values).detach()`)
/// or to something that does not read the flow no longer carries it.
fn flows_into_backward<'t>(
    checker: &Checker<'_, 't>,
    body: Node<'t>,
    after: usize,
    mut names: Vec<String>,
    depth: usize,
) -> bool {
    let source = checker.source();
    let facts = checker.facts;
    let reads = |node: Node, names: &[String]| names.iter().any(|n| tree::mentions(node, n, source));
    for later in tree::descendants(body).filter(|n| n.start_byte() >= after) {
        if tree::enclosing_body(later).id() != body.id() {
            continue;
        }
        match later.kind_name() {
            "assignment" | "augmented_assignment" | "for_statement" => {
                let (Some(target), Some(read)) = (later.child_by_field_id(field::LEFT), later.child_by_field_id(field::RIGHT))
                else {
                    continue;
                };
                let targets: Vec<String> =
                    target_names(target).into_iter().map(|n| tree::text(n, source).to_string()).collect();
                let carried = reads(read, &names) && facts.tensor_value(read) != TensorValue::Detached;
                if carried {
                    names.extend(targets.into_iter().filter(|t| !names.contains(t)).collect::<Vec<_>>());
                } else if later.kind_name() != "augmented_assignment" {
                    names.retain(|n| !targets.contains(n));
                }
            }
            "call" if reads(later, &names) => {
                if tree::callee_name(later, source).is_some_and(|c| BACKWARD_NAMES.contains(&c)) {
                    return true;
                }
                if depth < 2 && hands_flow_to_backward(checker, later, &names, depth) {
                    return true;
                }
            }
            _ => {}
        }
        if names.is_empty() {
            return false;
        }
    }
    false
}

/// `compute_loss(policies, values)`, a function of this file: whether a parameter that
/// receives one of `names` flows into a `backward()` inside it.
fn hands_flow_to_backward<'t>(checker: &Checker<'_, 't>, call: Node<'t>, names: &[String], depth: usize) -> bool {
    let source = checker.source();
    let Some(definition) = checker.facts.local_definition(call) else { return false };
    let Some(parameters) = definition.child_by_field_id(field::PARAMETERS) else { return false };
    let mut parameter_names: Vec<&str> = parameters
        .named_children(&mut parameters.walk())
        .filter_map(|p| match p.kind_name() {
            "identifier" => Some(p),
            "typed_parameter" => p.named_child(0).filter(|n| n.kind_name() == "identifier"),
            "default_parameter" | "typed_default_parameter" => p.child_by_field_id(field::NAME),
            _ => None,
        })
        .map(|n| tree::text(n, source))
        .collect();
    if tree::method_receiver(call).is_some() && parameter_names.first() == Some(&"self") {
        parameter_names.remove(0);
    }
    let mut received: Vec<String> = tree::positional_args(call)
        .into_iter()
        .zip(parameter_names.iter())
        .filter(|(argument, _)| names.iter().any(|n| tree::mentions(*argument, n, source)))
        .map(|(_, parameter)| parameter.to_string())
        .collect();
    if let Some(arguments) = call.child_by_field_id(field::ARGUMENTS) {
        for keyword in arguments.named_children(&mut arguments.walk()).filter(|a| a.kind_name() == "keyword_argument") {
            if let (Some(name), Some(value)) = (keyword.child_by_field_id(field::NAME), keyword.child_by_field_id(field::VALUE))
                && names.iter().any(|n| tree::mentions(value, n, source))
            {
                received.push(tree::text(name, source).to_string());
            }
        }
    }
    let Some(callee_body) = definition.child_by_field_id(field::BODY) else { return false };
    !received.is_empty() && flows_into_backward(checker, definition, callee_body.start_byte(), received, depth + 1)
}

/// Whether `function` returns `name` as a tensor, as itself or reduced (`return total`,
/// `return total / n`, `return torch.stack(losses).mean()`), not as a number computed
/// from it (`return sum(l.item() for l in losses)`).
fn returns(checker: &Checker, function: Node, name: &str, bare: bool) -> bool {
    let source = checker.source();
    let last = name.rsplit('.').next().unwrap_or(name);
    // The name's occurrences inside the function alone: a script's functions share
    // names, and filtering every occurrence in the file for each of them makes a long
    // script's time grow with the square of its length.
    checker
        .facts
        .index()
        .occurrences_in(last, function.byte_range())
        .into_iter()
        .filter_map(|n| tree::ancestors_in_function(n).find(|a| a.kind_name() == "return_statement"))
        .filter(|r| tree::enclosing_body(*r).id() == function.id())
        .filter_map(|r| r.named_child(0))
        .flat_map(|value| match value.kind_name() {
            "expression_list" => value.named_children(&mut value.walk()).collect(),
            _ => vec![value],
        })
        .any(|value| carries(value, name, source, bare))
}

/// Whether `expr` is the tensor held in `name`, or a reduction of it that keeps its
/// graph (`total / n`, `torch.stack(losses).mean()`). `bare`: whether `name` by itself
/// counts.
fn carries(expr: Node, name: &str, source: &str, bare: bool) -> bool {
    let expr = tree::unparenthesize(expr);
    match expr.kind_name() {
        "identifier" | "attribute" => bare && tree::text(expr, source) == name,
        "binary_operator" => [expr.child_by_field_id(field::LEFT), expr.child_by_field_id(field::RIGHT)]
            .into_iter()
            .flatten()
            .any(|operand| carries(operand, name, source, true)),
        "call" => {
            let callee = tree::callee_name(expr, source).unwrap_or("");
            if let Some(receiver) = tree::method_receiver(expr).filter(|_| GRAPH_KEEPING_METHODS.contains(&callee))
                && carries(receiver, name, source, bare)
            {
                return true;
            }
            matches!(callee, "stack" | "cat" | "sum" | "mean")
                && tree::positional_args(expr).iter().any(|a| carries(*a, name, source, true))
        }
        _ => false,
    }
}

const BACKWARD_NAMES: [&str; 2] = ["backward", "manual_backward"];

enum GraphRelease {
    Freed,
    Retained,
    Never,
}

/// `d["loss"] = loss` keeps only the latest step's value: not a leak.
fn overwrites_one_slot(store: Node) -> bool {
    let Some(subscript) = store.child_by_field_id(field::LEFT).filter(|l| l.kind_name() == "subscript") else {
        return false;
    };
    let Some(key) = subscript.child_by_field_id(field::SUBSCRIPT) else { return false };
    matches!(key.kind_name(), "string" | "integer" | "concatenated_string")
}

/// Whether something frees the graph of what is stored in `region` each step: a
/// `backward()` there, a Lightning `training_step` (the trainer calls backward), or a
/// `return` that hands the value to a caller.
fn graph_release<'t>(checker: &Checker<'_, 't>, region: Node<'t>, value: Node<'t>) -> GraphRelease {
    let source = checker.source();
    let function = if tree::is_function(region.kind_name()) { Some(region) } else { tree::enclosing_function(region) };
    let function_name = function.and_then(|f| f.child_by_field_id(field::NAME)).map(|n| tree::text(n, source));
    let returned = function.is_some_and(|f| returns(checker, f, tree::text(value, source), true));
    let calls: Vec<Node> = checker.facts.calls_named(&BACKWARD_NAMES, region);
    if calls.is_empty() {
        if function_name == Some("training_step") || returned { GraphRelease::Freed } else { GraphRelease::Never }
    } else if calls
        .iter()
        .any(|&c| tree::keyword_arg(c, "retain_graph", source).is_some_and(|v| tree::text(v, source) == "True"))
    {
        GraphRelease::Retained
    } else {
        GraphRelease::Freed
    }
}

fn looks_scalar(value: &str) -> bool {
    value.to_ascii_lowercase().contains("loss")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the rule's patterns match a store in `source`, whatever the rule's host
    /// code would decide about it.
    fn patterns_match(source: &str) -> bool {
        fn report_store(checker: &mut Checker, found: &Match) {
            if let Some(store) = found.get("store") {
                checker.report(store, Severity::Info, String::new(), String::new());
            }
        }
        static ENGINE: std::sync::OnceLock<crate::engine::Engine> = std::sync::OnceLock::new();
        let engine = ENGINE.get_or_init(|| {
            let every_file = Box::leak(Box::new(Rule { could_match: |_| true, check: Check::Query(report_store), ..RULE }));
            crate::engine::Engine::compile(&[every_file]).expect("compiles")
        });
        let settings = crate::engine::RuleSettings { enabled: vec![true], ..Default::default() };
        !engine.lint(source, std::path::Path::new("t.py"), &settings).diagnostics.is_empty()
    }

    #[test]
    fn every_way_of_writing_a_store_passes_the_text_test() {
        let stores = [
            "losses.append(loss)",
            "losses . append (loss)",
            "outs.extend([y])",
            "total += loss",
            "total+=[loss]",
            "seen[k] = loss",
            "seen[k]=loss",
            "seen[k] \\\n    = loss",
            "seen[k]: Tensor = loss",
            "total = total + loss",
            "total=total+loss",
            "total: float = total + loss",
            "total = \\\n    total + loss",
            "a = 1; total = total + loss",
            "données = données + perte",
        ];
        for store in stores {
            assert!(patterns_match(store), "the patterns do not match {store}");
            assert!(may_store(store), "the text test misses {store}");
        }
    }

    #[test]
    fn code_that_stores_nothing_fails_the_text_test() {
        let nothing_stored = [
            "class Net(nn.Module):\n    def forward(self, x):\n        return self.fc(x[0]) + x\n",
            "y = x + 1\nz = y.w + x\nw = (w) + 1\nv = v.x + 1\nu == u + 1\n",
            "if a[i] == b:\n    f(b[0])\n",
        ];
        for code in nothing_stored {
            assert!(!patterns_match(code), "the patterns match {code}");
            assert!(!may_store(code), "the text test passes {code}");
        }
    }

    /// Each `=` is read back to its target once: a generated line of 200,000 sums, each
    /// after a target of another name, takes as long as reading it (read back to the start
    /// of the line at each, it would take minutes).
    #[test]
    fn a_line_of_many_sums_is_read_once() {
        let line: String = (0..200_000).map(|i| format!("b{i}=a{i}+ ")).collect();
        assert!(!may_store(&line));
        assert!(may_store(&format!("{line}a7=a7+1")));
    }

    /// Over every fixture and test case: where the rule's patterns match anything, the
    /// text test passes, so it never keeps a file the rule would report on from its lint.
    #[test]
    fn the_text_test_passes_wherever_the_patterns_match() {
        let (mut matched, mut passed_over) = (0, 0);
        for source in crate::engine::fixture_and_test_sources() {
            let found = patterns_match(&source);
            assert!(!found || may_store(&source), "a store the text test misses in:\n{source}");
            matched += usize::from(found);
            passed_over += usize::from(!may_store(&source));
        }
        assert!(matched > 20 && passed_over > 0, "{matched} sources with stores, {passed_over} without");
    }
}
