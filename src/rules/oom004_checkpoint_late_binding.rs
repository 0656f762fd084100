//! OOM004 checkpoint-late-binding: a checkpointed closure that captures a loop variable.

use super::{Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::index::{BindingKind, target_names};
use crate::engine::tree;
use std::collections::BTreeSet;
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM004-checkpoint-late-binding");

pub static RULE: Rule = Rule {
    code: "OOM004",
    slug: "checkpoint-late-binding",
    default_severity: Severity::Error,
    summary: "A closure passed to `checkpoint` in a loop captures the loop variable late",
    cost: "no memory cost: the recomputation in backward runs the last iteration's layer, so \
           gradients are silently wrong (non-zero difference to the un-checkpointed reference)",
    fix_title: "Bind the loop variable as a default argument (`lambda x, layer=layer: ...`)",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| source.contains("checkpoint"),
    check,
};

const CHECKPOINT: &str = "torch.utils.checkpoint.checkpoint";

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee), Some(function)) = (found.get("call"), found.get("callee"), found.get("function"))
    else {
        return;
    };
    let facts = checker.facts;
    let resolved = facts.qualified_name(callee).or_else(|| {
        (checker.text(callee) == CHECKPOINT && facts.index().lookup("torch", callee).is_none())
            .then(|| CHECKPOINT.to_string())
    });
    if resolved.as_deref() != Some(CHECKPOINT) {
        return;
    }
    let Some(step) = tree::enclosing_loop(call) else { return };
    // Backward inside the same iteration recomputes before the variable changes.
    if backward_later_in(checker, step, call) {
        return;
    }
    let loop_names = loop_bound_names(checker, call);
    let Some((params, body)) = closure_parts(checker, function) else { return };
    let source = checker.source();
    let captured: BTreeSet<&str> = tree::descendants(body)
        .filter(|n| n.kind() == "identifier" && is_load(*n))
        .map(|n| tree::text(n, source))
        .filter(|n| loop_names.contains(n) && !params.contains(n))
        .collect();
    if captured.is_empty() {
        return;
    }
    let names: Vec<String> = captured.iter().map(|n| format!("`{n}`")).collect();
    let what =
        if function.kind() == "lambda" { "the lambda".to_string() } else { format!("`{}`", checker.text(function)) };
    let message = format!(
        "{what} passed to `checkpoint` captures loop variable {} by reference: backward recomputes with its last value, so gradients are silently wrong",
        names.join(", ")
    );
    let bindings: Vec<String> = captured.iter().map(|n| format!("{n}={n}")).collect();
    let help = format!("bind it as a default argument: `lambda ..., {}: ...`", bindings.join(", "));
    checker.report(function, Severity::Error, message, help);
}

/// Loop targets of every loop around `call` in its function, and every name assigned
/// inside those loops.
fn loop_bound_names<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> BTreeSet<&'t str> {
    let source = checker.source();
    let mut names = BTreeSet::new();
    for ancestor in tree::ancestors_in_function(call).filter(|a| tree::is_loop(a.kind())) {
        if let Some(left) = ancestor.child_by_field_name("left") {
            names.extend(target_names(left).into_iter().map(|n| tree::text(n, source)));
        }
        let Some(body) = ancestor.child_by_field_name("body") else { continue };
        for node in tree::descendants(body) {
            let same_function =
                tree::enclosing_function(node).map(|f| f.id()) == tree::enclosing_function(call).map(|f| f.id());
            if !same_function {
                continue;
            }
            let target = match node.kind() {
                "assignment" | "augmented_assignment" | "for_statement" => node.child_by_field_name("left"),
                "named_expression" => node.child_by_field_name("name"),
                _ => None,
            };
            if let Some(target) = target {
                names.extend(target_names(target).into_iter().map(|n| tree::text(n, source)));
            }
        }
    }
    names
}

/// Parameter names and body of a lambda, or of the nested `def` a name refers to.
fn closure_parts<'t>(checker: &Checker<'_, 't>, function: Node<'t>) -> Option<(BTreeSet<&'t str>, Node<'t>)> {
    let source = checker.source();
    let definition = match function.kind() {
        "lambda" => function,
        _ => {
            let binding = checker.facts.index().lookup(checker.text(function), function)?;
            if !matches!(binding.kind, BindingKind::Definition) || binding.statement.kind() != "function_definition" {
                return None;
            }
            binding.statement
        }
    };
    let params = definition
        .child_by_field_name("parameters")
        .map(|p| {
            tree::descendants(p)
                .filter(|n| n.kind() == "identifier" && !is_inside_default(*n, p))
                .map(|n| tree::text(n, source))
                .collect()
        })
        .unwrap_or_default();
    let mut params: BTreeSet<&str> = params;
    let body = definition.child_by_field_name("body")?;
    if definition.kind() == "function_definition" {
        // Names the def assigns itself are its locals, not captures.
        for node in tree::descendants(body) {
            if let Some(left) = node.child_by_field_name("left").filter(|_| node.kind() == "assignment") {
                params.extend(target_names(left).into_iter().map(|n| tree::text(n, source)));
            }
        }
    }
    Some((params, body))
}

/// A parameter's default value is evaluated at definition time: not a parameter name.
fn is_inside_default(node: Node, params: Node) -> bool {
    tree::ancestors(node).take_while(|a| a.id() != params.id()).any(|a| {
        matches!(a.kind(), "default_parameter" | "typed_default_parameter")
            && a.child_by_field_name("value").is_some_and(|v| tree::contains(v, node))
    })
}

/// An identifier read as a variable (not an attribute name or a keyword argument's name).
fn is_load(node: Node) -> bool {
    let Some(parent) = node.parent() else { return true };
    let is_field = |field: &str| parent.child_by_field_name(field).is_some_and(|f| f.id() == node.id());
    !(parent.kind() == "attribute" && is_field("attribute") || parent.kind() == "keyword_argument" && is_field("name"))
}

fn backward_later_in(checker: &Checker, step: Node, call: Node) -> bool {
    checker
        .facts
        .calls_named(&["backward", "manual_backward"])
        .into_iter()
        .any(|c| tree::contains(step, c) && c.start_byte() > call.start_byte())
}
