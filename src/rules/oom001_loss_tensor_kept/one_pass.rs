//! OOM001's one-pass accumulators: `train_loss += loss` (or `losses.append(loss)`) where
//! `backward()` runs on that loss every step, and the accumulator lives for one pass over
//! the data. Each backward frees the buffers its graph saved; what the accumulator keeps
//! is a scalar and a chain of small autograd nodes, dropped when the accumulator is made
//! anew for the next pass or goes out of scope when its function returns. That is the
//! PyTorch FAQ's pattern, but it costs next to no GPU memory, so the rule leaves it
//! alone. An accumulator that lives across the whole run, or whose value is kept beyond
//! the pass (appended to a history, returned, stored on an object), is still reported.

use crate::engine::field;
use super::{BACKWARD_NAMES, container_root, fresh_bindings};
use crate::engine::checker::Checker;
use crate::engine::facts::index::{BindingKind, target_names};
use crate::engine::facts::tensors::{GRAPH_KEEPING_METHODS, TensorValue};
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

/// Whether what `store` keeps in `container` is freed by a `backward()` every step of
/// `step` and held by an accumulator that lives for one pass over the data only.
pub(super) fn freed_within_one_pass<'t>(
    checker: &Checker<'_, 't>,
    container: Node<'t>,
    store: Node<'t>,
    value: Node<'t>,
    step: Node<'t>,
) -> bool {
    let Some(accumulator) = local_name(checker, container) else { return false };
    backpropagated_each_step(checker, step, store, value, accumulator)
        && lives_one_pass(checker, container_root(container), store, step)
}

/// `total` for `total`, `stats` for `stats["kl"]`: a plain name, not an attribute of an
/// object (`self.history` lives as long as the object does).
fn local_name<'s>(checker: &Checker<'s, '_>, container: Node) -> Option<&'s str> {
    let mut node = container;
    while node.kind_name() == "subscript" {
        node = node.child_by_field_id(field::VALUE)?;
    }
    (node.kind_name() == "identifier").then(|| checker.text(node))
}

/// Whether a `backward()` that runs on every step of `step` (not under a condition, not
/// with `retain_graph=True`) backpropagates through what is stored: through the same
/// name (`loss.backward()` ... `total += loss`) or through a name the stored one feeds
/// (`loss = ce + kl` ... `stats["kl"].append(kl)`). A stored value that runs a forward
/// pass or a loss of its own (`total += criterion(out, y)`) has a graph no backward
/// frees.
fn backpropagated_each_step<'t>(
    checker: &Checker<'_, 't>,
    step: Node<'t>,
    store: Node<'t>,
    value: Node<'t>,
    accumulator: &str,
) -> bool {
    let source = checker.source();
    let facts = checker.facts;
    if tree::descendants(value).any(|n| n.kind_name() == "call" && facts.builds_graph(n)) {
        return false;
    }
    let mut flow: Vec<&str> = tree::descendants(value)
        .filter(|n| n.kind_name() == "identifier" && tree::is_name_reference(*n))
        .filter(|n| facts.holds_graph(*n))
        .map(|n| tree::text(n, source))
        .filter(|n| *n != accumulator)
        .collect();
    if flow.is_empty() {
        return false;
    }
    let body = tree::enclosing_body(store);
    let assignments: Vec<Node> = tree::descendants(step)
        .filter(|n| matches!(n.kind_name(), "assignment" | "augmented_assignment") && n.id() != store.id())
        .filter(|n| tree::enclosing_body(*n).id() == body.id())
        .collect();
    // Twice round: a loop body may compute the name it feeds before the stored value.
    for _ in 0..2 {
        for assignment in &assignments {
            let (Some(left), Some(right)) =
                (assignment.child_by_field_id(field::LEFT), assignment.child_by_field_id(field::RIGHT))
            else {
                continue;
            };
            if !flow.iter().any(|f| tree::mentions(right, f, source)) || facts.tensor_value(right) == TensorValue::Detached
            {
                continue;
            }
            for target in target_names(left).into_iter().map(|t| tree::text(t, source)) {
                if target != accumulator && !flow.contains(&target) {
                    flow.push(target);
                }
            }
        }
    }
    facts.calls_named(&BACKWARD_NAMES, step).into_iter().any(|call| {
        runs_every_step(call, step)
            && tree::keyword_arg(call, "retain_graph", source).is_none_or(|v| tree::text(v, source) == "False")
            && flow.iter().any(|f| tree::mentions(call, f, source))
    })
}

/// Whether `call` runs on every iteration of `step`: not under an `if`, an inner loop,
/// an exception handler or a nested function.
fn runs_every_step(call: Node, step: Node) -> bool {
    tree::ancestors(call).take_while(|a| a.id() != step.id()).all(|a| {
        !matches!(
            a.kind_name(),
            "if_statement"
                | "elif_clause"
                | "else_clause"
                | "conditional_expression"
                | "boolean_operator"
                | "except_clause"
                | "for_statement"
                | "while_statement"
                | "function_definition"
                | "lambda"
        )
    })
}

/// Whether the accumulator `root` (a plain name) holds one pass's values only: it is a
/// name of the store's own scope, made anew (`total = 0`, `losses = []`) unconditionally
/// before `step` and inside every loop around `step` — at the top of each epoch, or once
/// in a function that ends after its one loop over the data — and its value goes nowhere
/// that outlives the pass (see `escapes`). A module-level name made once lives for the
/// whole run, so at module level a loop around `step` must make it anew.
fn lives_one_pass<'t>(checker: &Checker<'_, 't>, root: Node<'t>, store: Node<'t>, step: Node<'t>) -> bool {
    let index = checker.facts.index();
    let name = checker.text(root);
    let Some(scope) = index.scope_chain(root).find(|s| !index.bindings_in(*s, name).is_empty()) else {
        return false;
    };
    let function = tree::enclosing_function(store);
    let own_scope = match function {
        Some(f) => f.id() == scope.id(),
        None => scope.kind_name() == "module",
    };
    if !own_scope {
        return false;
    }
    // Only an assignment resets an accumulator for the pass; a loop that binds the name
    // (`for total in ...`) hands it one item after another.
    let fresh: Vec<Node> = fresh_bindings(checker, scope, name)
        .into_iter()
        .filter(|b| !matches!(b.kind, BindingKind::LoopTarget(_)))
        .map(|b| b.statement)
        .collect();
    // The loops the accumulator survives: those around the store that do not make it anew.
    let mut survived = tree::ancestors_in_function(store)
        .filter(|n| tree::is_loop(n.kind_name()))
        .filter(|l| !fresh.iter().any(|b| tree::contains(*l, *b)));
    if survived.next().is_none_or(|l| l.id() != step.id()) || survived.next().is_some() {
        return false;
    }
    let outer_loop = tree::ancestors_in_function(step).find(|n| tree::is_loop(n.kind_name()));
    if function.is_none() && outer_loop.is_none() {
        return false;
    }
    // Made anew before the pass on every path: a statement of a block the pass runs in.
    let made_anew = fresh.iter().any(|b| {
        b.start_byte() < step.start_byte()
            && outer_loop.is_none_or(|l| tree::contains(l, *b))
            && statement_block(*b).is_some_and(|block| tree::contains(block, step))
    });
    made_anew && !escapes(checker, scope, name, store, step)
}

/// The block (or module) whose statement `node` is.
fn statement_block(node: Node) -> Option<Node> {
    tree::ancestors(node).find(|a| matches!(a.kind_name(), "block" | "module"))
}

/// How many names holding the accumulated value (`avg = total / n`, `epoch_loss = avg`)
/// are followed before giving up and counting the value as kept.
const MAX_FOLLOWED: usize = 16;

/// Whether the value of `name` (bound in `scope`), from `step` on, is kept beyond the
/// pass: appended or stored into a container or attribute, returned or yielded, read
/// by a closure, or handed to a function that might keep it. Reading it into a
/// Python number (`.item()`, `float(...)`), printing or logging it, comparing it,
/// updating it in place (`total /= n`) or backpropagating through it keeps nothing;
/// a name it is assigned to is followed in turn.
fn escapes<'t>(checker: &Checker<'_, 't>, scope: Node<'t>, name: &str, store: Node<'t>, step: Node<'t>) -> bool {
    let index = checker.facts.index();
    let mut followed: Vec<(String, usize)> = vec![(name.to_string(), step.start_byte())];
    let mut next = 0;
    while let Some((name, from)) = followed.get(next).cloned() {
        next += 1;
        for occurrence in index.occurrences_in(&name, from..scope.end_byte()) {
            if !tree::is_name_reference(occurrence) || tree::contains(store, occurrence) {
                continue;
            }
            if tree::enclosing_body(occurrence).id() != tree::enclosing_body(step).id() {
                // A closure reading a function's accumulator may keep it. A function's
                // read of a module-level accumulator is not followed: the editor relints
                // a function body without the module-level code unless that code calls
                // it, so a module-level finding must not rest on function bodies (a
                // function that keeps a module-level epoch sum is missed).
                if scope.kind_name() != "module" && index.lookup(&name, occurrence).is_some_and(|b| b.scope == scope.id()) {
                    return true;
                }
                continue;
            }
            match where_it_goes(checker, occurrence) {
                Flow::Nowhere => {}
                Flow::Kept => return true,
                Flow::Into(names, from) => {
                    for derived in names {
                        if !followed.iter().any(|(n, _)| *n == derived) {
                            followed.push((derived, from));
                        }
                    }
                    if followed.len() > MAX_FOLLOWED {
                        return true;
                    }
                }
            }
        }
    }
    false
}

enum Flow {
    /// Read into a number, printed, compared, updated in place: nothing is kept.
    Nowhere,
    /// Stored, returned or handed to code that may keep it.
    Kept,
    /// Bound to other names, read from the given offset on.
    Into(Vec<String>, usize),
}

/// Containers filled through these methods keep what they are handed.
const STORING_METHODS: &[&str] =
    &["append", "extend", "insert", "add", "appendleft", "put", "update", "setdefault", "__setitem__"];

/// Calls that read a value to print or log it and keep no tensor.
const READING_CALLS: &[&str] = &[
    "print",
    "format",
    "log",
    "log_dict",
    "log_metrics",
    "add_scalar",
    "add_scalars",
    "set_postfix",
    "set_postfix_str",
    "set_description",
    "info",
    "debug",
    "warning",
    "write",
    "backward",
];

/// A container's views, iterated over like the container itself (`stats.items()`).
const VIEW_METHODS: &[&str] = &["items", "values", "keys"];

/// Functions whose result is still the argument's graph (`torch.stack(losses)`).
const GRAPH_KEEPING_FUNCTIONS: &[&str] = &["stack", "cat", "sum", "mean", "max", "min", "abs", "sqrt", "exp", "log"];

/// What an occurrence of a name holding the accumulated value does with it.
fn where_it_goes<'t>(checker: &Checker<'_, 't>, occurrence: Node<'t>) -> Flow {
    let source = checker.source();
    let names_of = |target: Node<'t>| -> Option<Vec<String>> {
        let names = target_names(target);
        let plain = tree::descendants(target).all(|n| !matches!(n.kind_name(), "attribute" | "subscript"));
        plain.then(|| names.into_iter().map(|n| tree::text(n, source).to_string()).collect())
    };
    let mut node = occurrence;
    loop {
        let Some(parent) = tree::parent(node) else { return Flow::Kept };
        let is_field = |field: u16| parent.child_by_field_id(field).is_some_and(|f| f.id() == node.id());
        match parent.kind_name() {
            "binary_operator" | "unary_operator" | "parenthesized_expression" | "conditional_expression"
            | "boolean_operator" | "list" | "tuple" | "set" | "pair" | "dictionary" | "expression_list"
            | "list_splat" => {}
            "subscript" if is_field(field::VALUE) => {}
            "attribute" if is_field(field::OBJECT) => {}
            "keyword_argument" if is_field(field::VALUE) => {}
            "argument_list" => {}
            "comparison_operator" | "not_operator" | "interpolation" | "subscript"
            | "expression_statement" | "if_statement" | "elif_clause" | "while_statement" | "assert_statement"
            | "delete_statement" => return Flow::Nowhere,
            "call" => {
                if checker.facts.tensor_value(parent) == TensorValue::Detached {
                    return Flow::Nowhere;
                }
                let callee = tree::callee_name(parent, source).unwrap_or("");
                let in_receiver = tree::method_receiver(parent).is_some_and(|r| tree::contains(r, occurrence));
                if READING_CALLS.contains(&callee) {
                    return Flow::Nowhere;
                }
                if in_receiver {
                    // `losses.append(...)`, `total.div_(n)`: the accumulator changed in place.
                    if STORING_METHODS.contains(&callee) || callee.ends_with('_') {
                        return Flow::Nowhere;
                    }
                    if !GRAPH_KEEPING_METHODS.contains(&callee) && !VIEW_METHODS.contains(&callee) {
                        return Flow::Kept;
                    }
                } else if STORING_METHODS.contains(&callee) || !GRAPH_KEEPING_FUNCTIONS.contains(&callee) {
                    return Flow::Kept;
                }
            }
            "for_in_clause" if is_field(field::RIGHT) => {
                // `sum(l.item() for l in losses)`: what the comprehension makes of each.
                let Some(comprehension) = tree::parent(parent) else { return Flow::Kept };
                let element = comprehension.child_by_field_id(field::BODY).map(|body| match body.kind_name() {
                    "pair" => body.child_by_field_id(field::VALUE).unwrap_or(body),
                    _ => body,
                });
                let detached = element.is_some_and(|e| checker.facts.tensor_value(e) == TensorValue::Detached);
                if detached {
                    return Flow::Nowhere;
                }
                node = comprehension;
                continue;
            }
            // Bound anew (`total, seen = 0, 0`, `for total in ...`): the old value is dropped.
            "pattern_list" | "tuple_pattern" | "list_pattern" => {}
            "assignment" | "augmented_assignment" | "for_statement" | "for_in_clause" if is_field(field::LEFT) => {
                return Flow::Nowhere;
            }
            "assignment" | "augmented_assignment" => {
                let Some(left) = parent.child_by_field_id(field::LEFT) else { return Flow::Kept };
                return match names_of(left) {
                    Some(names) => Flow::Into(names, parent.end_byte()),
                    None => Flow::Kept,
                };
            }
            "for_statement" if is_field(field::RIGHT) => {
                let Some(left) = parent.child_by_field_id(field::LEFT) else { return Flow::Kept };
                return match names_of(left) {
                    Some(names) => Flow::Into(names, left.end_byte()),
                    None => Flow::Kept,
                };
            }
            _ => return Flow::Kept,
        }
        node = parent;
    }
}
