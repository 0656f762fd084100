//! OOM007 retain-graph-in-loop: `backward(retain_graph=True)` in a loop with no later
//! backward through the same graph in that iteration.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::{Severity, TextRange};
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::tree::{self, KindName};
use crate::fix::{Applicability, Edit, Fix};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM007-retain-graph-in-loop");

pub static RULE: Rule = Rule {
    code: "OOM007",
    slug: "retain-graph-in-loop",
    default_severity: Severity::Warning,
    preview: false,
    summary: "`backward(retain_graph=True)` in a loop that never backpropagates through the graph again",
    cost: Cost::Memory {
        figure: Figure::Peak,
        bad: "peak training batch 16 with `retain_graph=True`",
        good: "without it",
    },
    fix_title: "Remove `retain_graph=True`",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| text_test::contains(source, "retain_graph"),
    reads_project: false,
    check: Check::Query(check),
};

const AUTOGRAD_FUNCTIONS: [&str; 2] = ["torch.autograd.backward", "torch.autograd.grad"];

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee), Some(retain)) = (found.get("call"), found.get("callee"), found.get("retain")) else {
        return;
    };
    let facts = checker.facts;
    let source = checker.source();
    // `loss.backward(...)`, or `torch.autograd.backward` / `grad` however imported.
    let is_backward = (callee.kind_name() == "attribute" && tree::last_name(callee, source) == Some("backward"))
        || facts.qualified_name(callee).is_some_and(|q| AUTOGRAD_FUNCTIONS.contains(&q.as_str()));
    if !is_backward {
        return;
    }
    // The loop is around the call, or around every call of the helper it is in (a
    // `_update_latents(...)` called once per denoising step).
    let (step, site) = match tree::enclosing_loop(call) {
        Some(step) => (step, call),
        None => match helper_called_in_loops(checker, call) {
            Some(found) => found,
            None => return,
        },
    };
    // The iteration must build the graph it retains: a loop over several losses of one
    // graph (`for loss in losses: loss.backward(retain_graph=True)`) needs it retained.
    let builds_graph = tree::descendants(step).any(|n| n.kind_name() == "call" && facts.is_forward_or_loss_call(n));
    if !builds_graph {
        return;
    }
    // A later backward in the same iteration (a second loss, the generator after the
    // discriminator, a loss after a gradient penalty) is why the graph was kept.
    let later_in = |region: Node<'t>, after: usize| {
        facts.calls_named(&["backward", "grad"], region).into_iter().any(|other| other.start_byte() >= after)
    };
    let helper = tree::enclosing_function(call).filter(|_| site.id() != call.id());
    let later = later_in(step, site.end_byte()) || helper.is_some_and(|h| later_in(h, call.end_byte()));
    // A state carried into the next iteration (`out, hidden = model(x, hidden)`) is
    // backpropagated through next time: OOM011 reports that instead.
    if later || super::oom011_hidden_state_not_detached::carries_state(step, source) {
        return;
    }
    let place = if helper.is_some() { "in a helper called once per loop iteration" } else { "in a loop" };
    let message = format!(
        "`retain_graph=True` {place}, and nothing backpropagates through the graph again in this iteration: its \
         saved activations stay alive into the next step's forward pass"
    );
    let help = "remove `retain_graph=True`; keep it only for a second backward through the same graph".to_string();
    let fix = removal(retain).map(|edit| Fix::new(Applicability::Unsafe, RULE.fix_title, vec![edit]));
    checker.report(retain, Severity::Warning, message, help).fix = fix;
}

/// For a call outside any loop, in a function of this file: the loop around one of the
/// function's call sites (`self.f(...)` or `f(...)`), when every call site is in a loop,
/// with that call site.
fn helper_called_in_loops<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let function = tree::enclosing_function(call).filter(|f| f.kind_name() == "function_definition")?;
    let name = function.child_by_field_id(field::NAME)?;
    let sites: Vec<Node<'t>> = checker
        .facts
        .index()
        .calls_named_in(checker.text(name), 0..checker.source().len())
        .into_iter()
        .filter(|site| !tree::contains(function, *site))
        .collect();
    let mut in_loops = sites.iter().map(|site| tree::enclosing_loop(*site).map(|step| (step, *site)));
    let first = in_loops.next()??;
    in_loops.all(|s| s.is_some()).then_some(first)
}

/// Deletes the keyword argument with the comma that separates it from its neighbour.
fn removal(argument: Node) -> Option<Edit> {
    let (start, end) = match (argument.prev_named_sibling(), argument.next_named_sibling()) {
        (Some(previous), _) => (previous.end_byte(), argument.end_byte()),
        (None, Some(next)) => (argument.start_byte(), next.start_byte()),
        (None, None) => (argument.start_byte(), argument.end_byte()),
    };
    Some(Edit::replace(TextRange { start, end }, ""))
}
