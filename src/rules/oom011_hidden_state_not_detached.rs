//! OOM011 hidden-state-not-detached: a recurrent state carried from one batch to the next
//! without `.detach()`.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::heuristics;
use crate::engine::facts::index::target_names;
use crate::engine::text_test;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM011-hidden-state-not-detached");

pub static RULE: Rule = Rule {
    code: "OOM011",
    slug: "hidden-state-not-detached",
    default_severity: Severity::Error,
    preview: false,
    summary: "A recurrent hidden state is carried to the next batch without `.detach()`",
    cost: Cost::Memory {
        figure: Figure::PerStep,
        bad: "more memory every batch with the hidden state carried",
        good: "with it detached",
    },
    fix_title: "Detach the state at the start of each batch (`hidden = hidden.detach()`)",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| {
        text_test::contains(source, "backward")
            && (heuristics::mentions_forward_call(source) || mentions_recurrent_call(source))
    },
    reads_project: false,
    check: Check::Query(check),
};

/// Words of a name that runs a recurrent network (`self.rnn`, `lstm_cell`, `gru`).
const RECURRENT_WORDS: [&str; 5] = ["rnn", "lstm", "gru", "cell", "recurrent"];

/// Whether the text calls anything named like a recurrent network: a word holding one of
/// `RECURRENT_WORDS`, case aside, before `(`.
fn mentions_recurrent_call(source: &str) -> bool {
    text_test::case_aside(source, |text| {
        text_test::some_call(text, |before| text_test::holds_ignore_case(text_test::last_word(before), &RECURRENT_WORDS))
    })
}

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(assignment), Some(targets), Some(call), Some(callee), Some(arguments)) =
        (found.get("assignment"), found.get("targets"), found.get("call"), found.get("callee"), found.get("arguments"))
    else {
        return;
    };
    let facts = checker.facts;
    let source = checker.source();
    // The cheap test first: is any target passed back in?
    let carried = carried_targets(targets, arguments, source);
    if carried.is_empty() {
        return;
    }
    let runs_network = facts.is_forward_call(call)
        || tree::last_name(callee, source)
            .is_some_and(|name| heuristics::words(name).iter().any(|w| RECURRENT_WORDS.contains(&w.as_str())));
    if !runs_network || facts.grad_disabled(call) {
        return;
    }
    let Some(step) = tree::enclosing_loop(assignment) else { return };
    // Only a loop that trains: backward through the carried state reaches every batch
    // before it. (A loop over time steps inside one batch is ordinary backprop through time.)
    if facts.calls_named(&["backward"], step).is_empty() {
        return;
    }
    for target in carried {
        let name = tree::text(target, source);
        if detached_or_reset(checker, step, assignment, name) {
            continue;
        }
        let message = format!(
            "`{name}` is fed back into `{}` on the next batch with its autograd graph: backward then reaches \
             through every earlier batch, and memory grows with each one",
            checker.text(callee)
        );
        let help = format!(
            "detach it at the start of each batch: `{name} = {name}.detach()` (for an LSTM's `(h, c)`: \
             `{name} = tuple(h.detach() for h in {name})`)"
        );
        checker.report(target, Severity::Error, message, help);
    }
}

/// Whether the loop feeds a call's result back into the same call (`out, h = f(x, h)`):
/// a graph carried from one iteration into the next. OOM007 leaves `retain_graph=True`
/// alone there, since the next backward does go through the kept graph.
pub(super) fn carries_state<'t>(step: Node<'t>, source: &'t str) -> bool {
    tree::descendants(step).any(|node| {
        if node.kind_name() != "assignment" {
            return false;
        }
        let (Some(targets), Some(value)) = (node.child_by_field_id(field::LEFT), node.child_by_field_id(field::RIGHT)) else {
            return false;
        };
        let Some(arguments) = value.child_by_field_id(field::ARGUMENTS).filter(|_| value.kind_name() == "call") else {
            return false;
        };
        // A state cut from its graph somewhere in the loop (`x = x.detach()`) carries none.
        carried_targets(targets, arguments, source).into_iter().any(|t| {
            let name = tree::text(t, source);
            !tree::text(step, source).contains(&format!("{name} = {name}.detach()"))
        })
    })
}

/// The assignment's targets that are also passed to the call it assigns from.
fn carried_targets<'t>(targets: Node<'t>, arguments: Node<'t>, source: &'t str) -> Vec<Node<'t>> {
    let passed = argument_names(arguments, source);
    target_names(targets).into_iter().filter(|t| passed.contains(&tree::text(*t, source))).collect()
}

/// Names passed straight to the call, also inside a tuple (`model(x, (h, c))`).
fn argument_names<'t>(arguments: Node<'t>, source: &'t str) -> Vec<&'t str> {
    let mut names = Vec::new();
    let mut cursor = arguments.walk();
    for argument in arguments.named_children(&mut cursor) {
        let value = match argument.kind_name() {
            "keyword_argument" => argument.child_by_field_id(field::VALUE),
            _ => Some(argument),
        };
        let Some(value) = value.map(tree::unparenthesize) else { continue };
        match value.kind_name() {
            "identifier" => names.push(tree::text(value, source)),
            "tuple" | "list" => {
                let mut inner = value.walk();
                names.extend(
                    value
                        .named_children(&mut inner)
                        .filter(|n| n.kind_name() == "identifier")
                        .map(|n| tree::text(n, source)),
                );
            }
            _ => {}
        }
    }
    names
}

/// Whether the loop rebinds `name` elsewhere (a fresh state, a detached copy) or hands it
/// to anything that detaches or repackages it (`hidden.detach_()`, `repackage_hidden(hidden)`).
fn detached_or_reset<'t>(checker: &Checker<'_, 't>, step: Node<'t>, assignment: Node<'t>, name: &str) -> bool {
    let index = checker.facts.index();
    let inside = |node: Node| step.start_byte() <= node.start_byte() && node.end_byte() <= step.end_byte();
    // Another binding in the loop: not this assignment (whatever node the index records
    // for it, it overlaps the assignment).
    let overlaps = |node: Node| node.start_byte() < assignment.end_byte() && assignment.start_byte() < node.end_byte();
    let rebound = index.bindings(name).iter().any(|b| inside(b.statement) && !overlaps(b.statement));
    if rebound {
        return true;
    }
    // `h.detach_()` anywhere in the loop, also through a loop over the state's parts.
    if !checker.facts.calls_named(&["detach_"], step).is_empty() {
        return true;
    }
    let source = checker.source();
    index.occurrences_in(name, step.byte_range()).into_iter().any(|occurrence| {
        tree::ancestors(occurrence).take_while(|a| inside(*a)).any(|ancestor| {
            ancestor.kind_name() == "call"
                && tree::callee_name(ancestor, source).is_some_and(|callee| {
                    let callee = callee.to_ascii_lowercase();
                    callee.contains("detach") || callee.contains("repackage") || callee.contains("init_hidden")
                })
        })
    })
}
