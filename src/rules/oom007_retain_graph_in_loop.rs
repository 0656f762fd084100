//! OOM007 retain-graph-in-loop: `backward(retain_graph=True)` in a loop with no later
//! backward through the same graph in that iteration.

use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::{Severity, TextRange};
use crate::engine::checker::{Checker, Match};
use crate::engine::tree;
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
    could_match: |source| source.contains("retain_graph"),
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
    let is_backward = (callee.kind() == "attribute" && tree::last_name(callee, source) == Some("backward"))
        || facts.qualified_name(callee).is_some_and(|q| AUTOGRAD_FUNCTIONS.contains(&q.as_str()));
    if !is_backward {
        return;
    }
    let Some(step) = tree::enclosing_loop(call) else { return };
    // The iteration must build the graph it retains: a loop over several losses of one
    // graph (`for loss in losses: loss.backward(retain_graph=True)`) needs it retained.
    let builds_graph = tree::descendants(step).any(|n| n.kind() == "call" && facts.is_forward_or_loss_call(n));
    if !builds_graph {
        return;
    }
    // A later backward in the same iteration (a second loss, the generator after the
    // discriminator, a loss after a gradient penalty) is why the graph was kept.
    let later =
        facts.calls_named(&["backward", "grad"], step).into_iter().any(|other| other.start_byte() >= call.end_byte());
    // A state carried into the next iteration (`out, hidden = model(x, hidden)`) is
    // backpropagated through next time: OOM011 reports that instead.
    if later || super::oom011_hidden_state_not_detached::carries_state(step, source) {
        return;
    }
    let message = "`retain_graph=True` in a loop, and nothing backpropagates through the graph again in this \
                   iteration: its saved activations stay alive into the next step's forward pass"
        .to_string();
    let help = "remove `retain_graph=True`; keep it only for a second backward through the same graph".to_string();
    let fix = removal(retain).map(|edit| Fix::new(Applicability::Unsafe, RULE.fix_title, vec![edit]));
    checker.report(retain, Severity::Warning, message, help).fix = fix;
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
