//! OOM004 checkpoint-late-binding: a checkpointed closure that captures a loop variable.

use crate::engine::field;
use super::{Check, Cost, Evidence, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::index::{BindingKind, target_names};
use crate::engine::tree::{self, KindName};
use crate::fix::{Edit, Fix};
use std::collections::BTreeSet;
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM004-checkpoint-late-binding");

pub static RULE: Rule = Rule {
    code: "OOM004",
    slug: "checkpoint-late-binding",
    default_severity: Severity::Error,
    preview: false,
    summary: "A closure passed to `checkpoint` in a loop captures the loop variable late",
    cost: Cost::Evidence(Evidence::GradientDifference),
    fix_title: "Bind the loop variable as a default argument (`lambda x, layer=layer: ...`)",
    docs: FILES.1,
    query: FILES.0,
    could_match: may_call_checkpoint,
    reads_project: false,
    check: Check::Query(check),
};

const CHECKPOINT: &str = "torch.utils.checkpoint.checkpoint";
/// The name its callees end in.
const NAME: &str = "checkpoint";

/// Whether a call in the text may resolve to `CHECKPOINT`, in a file that names torch: a
/// name ending in `checkpoint` is called (`checkpoint(`, `cp.checkpoint(`), or a name is
/// bound to one another way, through which the check resolves a call. Most files that say
/// `checkpoint` only save checkpoints (`args.resume_from_checkpoint`,
/// `checkpointing_steps`): the pattern would otherwise be tried at every call in a loop
/// handed a name or a lambda, and the callee of each resolved, for nothing.
fn may_call_checkpoint(source: &str) -> bool {
    text_test::contains(source, "torch")
        && (text_test::some_call(source, |before| before.ends_with(NAME)) || binds_checkpoint(source))
}

/// Whether a name ending in `checkpoint` is bound to another name other than by a call:
/// imported under it (`... checkpoint as ckpt`) or assigned whole (`ckpt = cp.checkpoint`,
/// or as one of a tuple's values).
fn binds_checkpoint(source: &str) -> bool {
    let ends_word = |text: &str| text.chars().next().is_none_or(|c| !text_test::is_word_character(c));
    memchr::memmem::find_iter(source.as_bytes(), NAME).any(|at| {
        let after = &source[at + NAME.len()..];
        if !ends_word(after) {
            return false;
        }
        let imported_as = after.trim_start().strip_prefix("as").is_some_and(ends_word);
        let next_on_line = after.trim_start_matches([' ', '\t']).bytes().next();
        let value_ends = matches!(next_on_line, None | Some(b'\n' | b'\r' | b';' | b'#' | b','));
        imported_as || value_ends && source[..at].rsplit(['\n', '\r']).next().is_some_and(|line| line.contains('='))
    })
}

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee), Some(function)) = (found.get("call"), found.get("callee"), found.get("function"))
    else {
        return;
    };
    let facts = checker.facts;
    if facts.resolves_to(callee, &[CHECKPOINT]).is_none() {
        return;
    }
    let Some(step) = enclosing_iteration(call) else { return };
    // Backward inside the same iteration recomputes before the variable changes.
    if backward_later_in(checker, step, call) {
        return;
    }
    let loop_names = loop_bound_names(checker, call);
    let Some((params, body)) = closure_parts(checker, function) else { return };
    let source = checker.source();
    let captured: BTreeSet<&str> = tree::descendants(body)
        .filter(|n| n.kind_name() == "identifier" && tree::is_name_reference(*n))
        .map(|n| tree::text(n, source))
        .filter(|n| loop_names.contains(n) && !params.contains(n))
        .collect();
    if captured.is_empty() {
        return;
    }
    let names: Vec<String> = captured.iter().map(|n| format!("`{n}`")).collect();
    let what =
        if function.kind_name() == "lambda" { "the lambda".to_string() } else { format!("`{}`", checker.text(function)) };
    let message = format!(
        "{what} passed to `checkpoint` captures loop variable {} by reference: backward recomputes with its last value, so gradients are silently wrong",
        names.join(", ")
    );
    let bindings: Vec<String> = captured.iter().map(|n| format!("{n}={n}")).collect();
    let help = format!("bind it as a default argument: `lambda ..., {}: ...`", bindings.join(", "));
    let fix = bind_defaults_fix(checker, function, step, &bindings);
    checker.report(function, Severity::Error, message, help).fix = fix;
}

/// Add `name=name` defaults to the closure's parameters, binding each value when the
/// closure is made (safe: that is the value the loop meant). A `def` made before the loop
/// cannot take them: the names are not bound yet where it is defined.
fn bind_defaults_fix<'t>(
    checker: &Checker<'_, 't>,
    function: Node<'t>,
    step: Node<'t>,
    bindings: &[String],
) -> Option<Fix> {
    let source = checker.source();
    let definition = match function.kind_name() {
        "lambda" => function,
        _ => {
            let binding = checker.facts.index().lookup(checker.text(function), function)?;
            Some(binding.statement).filter(|d| tree::contains(step, *d))?
        }
    };
    let defaults = bindings.join(", ");
    let edit = match definition.child_by_field_id(field::PARAMETERS) {
        None => Edit::insert(definition.start_byte() + "lambda".len(), format!(" {defaults}")),
        Some(parameters) => {
            // Defaults go before `**kwargs`, and after everything else.
            let mut cursor = parameters.walk();
            let kwargs = parameters.named_children(&mut cursor).find(|p| p.kind_name() == "dictionary_splat_pattern");
            let end = if parameters.kind_name() == "parameters" { parameters.end_byte() - 1 } else { parameters.end_byte() };
            match kwargs {
                Some(kwargs) => Edit::insert(kwargs.start_byte(), format!("{defaults}, ")),
                None => {
                    let inside = source[parameters.start_byte()..end].trim_end();
                    let at = parameters.start_byte() + inside.len();
                    let empty = parameters.named_child_count() == 0;
                    let content = if empty {
                        defaults
                    } else if inside.ends_with(',') {
                        format!(" {defaults}")
                    } else {
                        format!(", {defaults}")
                    };
                    Edit::insert(at, content)
                }
            }
        }
    };
    Some(Fix::safe(format!("Bind {} as default arguments", bindings.join(", ")), vec![edit]))
}

/// The innermost loop or comprehension around `call` in its function: a comprehension's
/// variable is captured by reference too (`[checkpoint(lambda h: head(h), x) for head in
/// heads]` recomputes every element with the last head).
fn enclosing_iteration(call: Node) -> Option<Node> {
    tree::ancestors_in_function(call).find(|a| tree::is_loop(a.kind_name()) || is_comprehension(a.kind_name()))
}

fn is_comprehension(kind: &str) -> bool {
    matches!(kind, "list_comprehension" | "generator_expression" | "set_comprehension" | "dictionary_comprehension")
}

/// Loop targets of every loop or comprehension around `call` in its function, and every
/// name assigned inside those loops.
fn loop_bound_names<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> BTreeSet<&'t str> {
    let source = checker.source();
    let mut names = BTreeSet::new();
    for comprehension in tree::ancestors_in_function(call).filter(|a| is_comprehension(a.kind_name())) {
        let mut cursor = comprehension.walk();
        let clauses: Vec<Node> =
            comprehension.named_children(&mut cursor).filter(|c| c.kind_name() == "for_in_clause").collect();
        for left in clauses.into_iter().filter_map(|c| c.child_by_field_id(field::LEFT)) {
            names.extend(target_names(left).into_iter().map(|n| tree::text(n, source)));
        }
    }
    for ancestor in tree::ancestors_in_function(call).filter(|a| tree::is_loop(a.kind_name())) {
        if let Some(left) = ancestor.child_by_field_id(field::LEFT) {
            names.extend(target_names(left).into_iter().map(|n| tree::text(n, source)));
        }
        let assigned = checker.facts.memo("oom004-assigned-in-loop", Some(ancestor), || assigned_in_loop(ancestor));
        names.extend(assigned.iter().map(|name| &source[name.clone()]));
    }
    names
}

/// Every name assigned in a loop's body by the function the loop is in (the same for
/// every call inside it: kept per loop, since a loop may hold many calls).
fn assigned_in_loop(loop_: Node) -> Vec<std::ops::Range<usize>> {
    let Some(body) = loop_.child_by_field_id(field::BODY) else { return Vec::new() };
    let function = tree::enclosing_function(loop_).map(|f| f.id());
    let mut names = Vec::new();
    for node in tree::descendants(body) {
        let target = match node.kind_name() {
            "assignment" | "augmented_assignment" | "for_statement" => node.child_by_field_id(field::LEFT),
            "named_expression" => node.child_by_field_id(field::NAME),
            _ => None,
        };
        if let Some(target) = target
            && tree::enclosing_function(node).map(|f| f.id()) == function
        {
            names.extend(target_names(target).into_iter().map(|n| n.byte_range()));
        }
    }
    names
}

/// Parameter names and body of a lambda, or of the nested `def` a name refers to.
fn closure_parts<'t>(checker: &Checker<'_, 't>, function: Node<'t>) -> Option<(BTreeSet<&'t str>, Node<'t>)> {
    let source = checker.source();
    let definition = match function.kind_name() {
        "lambda" => function,
        _ => {
            let binding = checker.facts.index().lookup(checker.text(function), function)?;
            if !matches!(binding.kind, BindingKind::Definition) || binding.statement.kind_name() != "function_definition" {
                return None;
            }
            binding.statement
        }
    };
    let params = definition
        .child_by_field_id(field::PARAMETERS)
        .map(|p| {
            tree::descendants(p)
                .filter(|n| n.kind_name() == "identifier" && !is_inside_default(*n, p))
                .map(|n| tree::text(n, source))
                .collect()
        })
        .unwrap_or_default();
    let mut params: BTreeSet<&str> = params;
    let body = definition.child_by_field_id(field::BODY)?;
    if definition.kind_name() == "function_definition" {
        // Names the def assigns itself are its locals, not captures.
        for node in tree::descendants(body) {
            if let Some(left) = node.child_by_field_id(field::LEFT).filter(|_| node.kind_name() == "assignment") {
                params.extend(target_names(left).into_iter().map(|n| tree::text(n, source)));
            }
        }
    }
    Some((params, body))
}

/// A parameter's default value is evaluated at definition time: not a parameter name.
fn is_inside_default(node: Node, params: Node) -> bool {
    tree::ancestors(node).take_while(|a| a.id() != params.id()).any(|a| {
        matches!(a.kind_name(), "default_parameter" | "typed_default_parameter")
            && a.child_by_field_id(field::VALUE).is_some_and(|v| tree::contains(v, node))
    })
}

fn backward_later_in<'t>(checker: &Checker<'_, 't>, step: Node<'t>, call: Node<'t>) -> bool {
    checker
        .facts
        .calls_named(&["backward", "manual_backward"], step)
        .into_iter()
        .any(|c| tree::contains(step, c) && c.start_byte() > call.start_byte())
}

#[cfg(test)]
mod tests {
    use super::may_call_checkpoint;

    /// The text test keeps every way a call can reach `torch.utils.checkpoint.checkpoint`
    /// (every flagged case of the rule passes it too, or its test would fail), and leaves out
    /// files that only save and load checkpoints.
    #[test]
    fn text_test_keeps_calls_and_aliases_of_checkpoint_and_leaves_out_saved_checkpoints() {
        let calls = [
            "import torch\nfrom torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n",
            "import torch.utils.checkpoint as cp\ny = cp.checkpoint (f, x)\n",
            "import torch\ny = torch.utils.checkpoint.checkpoint(\n    f, x)\n",
            "from torch.utils.checkpoint import checkpoint as ckpt\ny = ckpt(f, x)\n",
            "from torch.utils.checkpoint import (\n    checkpoint\n    as ckpt,\n)\n",
            "import torch\nckpt = torch.utils.checkpoint.checkpoint\ny = ckpt(f, x)\n",
            "import torch\nckpt = torch.utils.checkpoint.checkpoint  # alias\n",
            "import torch\nckpt, n = torch.utils.checkpoint.checkpoint, 2\n",
            "import torch\nckpt = torch.utils.checkpoint.checkpoint",
        ];
        for source in calls {
            assert!(may_call_checkpoint(source), "{source}");
        }
        let saves_only = [
            "import torch\nif args.resume_from_checkpoint:\n    load(args.resume_from_checkpoint)\n",
            "import torch\nfor step in range(n):\n    if step % args.checkpointing_steps == 0:\n        save(f'checkpoint-{step}')\n",
            "import torch\nmodel.enable_gradient_checkpointing()\n",
            "import torch\nif path == args.resume_from_checkpoint:\n    pass\n",
            // No torch: the name cannot stand for PyTorch's function.
            "from mylib import checkpoint\ny = checkpoint(f, x)\n",
        ];
        for source in saves_only {
            assert!(!may_call_checkpoint(source), "{source}");
        }
    }
}
