//! OOM010 retry-inside-except: recovering from an out-of-memory error by running the
//! model again inside the `except` block.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::heuristics::words;
use crate::engine::facts::out_of_memory::catches_out_of_memory;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM010-retry-inside-except");

pub static RULE: Rule = Rule {
    code: "OOM010",
    slug: "retry-inside-except",
    default_severity: Severity::Warning,
    preview: false,
    summary: "An out-of-memory error is retried inside the `except` block, with the failed step still alive",
    cost: Cost::Memory {
        figure: Figure::Peak,
        bad: "peak retrying a failed batch of 64 as two halves inside `except`",
        good: "retrying after the `except` block",
    },
    fix_title: "Set a flag in `except` and retry after the block",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| {
        text_test::contains(source, "except")
            && text_test::contains_any(source, &["OutOfMemory", "out of memory"])
    },
    reads_project: false,
    check: Check::Query(check),
};

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let Some(handler) = found.get("handler") else { return };
    if !catches_out_of_memory(checker.facts, handler) {
        return;
    }
    let source = checker.source();
    let retried = Retried {
        enclosing: tree::enclosing_function(handler)
            .and_then(|f| f.child_by_field_id(field::NAME))
            .map(|n| tree::text(n, source)),
        tried: tried_calls(handler, source),
    };
    // One finding per handler: its first retry.
    let Some((call, kind)) = tree::descendants(handler)
        .filter(|n| n.kind_name() == "call")
        .find_map(|call| retry_kind(checker, handler, &retried, call).map(|kind| (call, kind)))
    else {
        return;
    };
    let what = if kind == Retry::Function { "retries" } else { "runs the network again" };
    let callee = call.child_by_field_id(field::FUNCTION).map(|f| checker.text(f)).unwrap_or_default();
    let message = format!(
        "`{callee}` {what} inside the `except` block: the exception's traceback still holds the failed step's \
         tensors, so the retry runs with that memory in use"
    );
    let help = "set a flag (or save the batch) in `except`, and retry after the block, once the failed step's \
                tensors are freed"
        .to_string();
    checker.report(call, Severity::Warning, message, help);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// The network runs again.
    Network,
    /// The function the `try` called (or the one it is in) is called again.
    Function,
}

/// What a handler's retry would call again: the function the `try` is in, and the
/// callees of the calls in the `try` body.
struct Retried<'t> {
    enclosing: Option<&'t str>,
    tried: Vec<&'t str>,
}

/// Whether `call` in `handler` runs the network again or repeats the failed call.
fn retry_kind<'t>(
    checker: &Checker<'_, 't>,
    handler: Node<'t>,
    retried: &Retried<'t>,
    call: Node<'t>,
) -> Option<Retry> {
    let facts = checker.facts;
    let source = checker.source();
    // Code in a function defined inside the handler does not run there.
    if tree::ancestors(call).take_while(|a| a.id() != handler.id()).any(|a| tree::is_function(a.kind_name())) {
        return None;
    }
    if facts.is_forward_call(call) {
        return Some(Retry::Network);
    }
    let callee = call.child_by_field_id(field::FUNCTION)?;
    let name = tree::last_name(callee, source)?;
    // Bookkeeping around the step (`losses.append`, `loss.backward`, the criterion) is not
    // the retry.
    if facts.is_loss_call(call) || BOOKKEEPING.contains(&name) {
        return None;
    }
    // A call named for letting something go (`release_vae_upsampler(session)`,
    // `unload_all()`, `clear_cache()`) frees what the step held on either path: cleanup
    // the `try` also does when it succeeds, not the step again.
    if words(name).first().is_some_and(|verb| RELEASE_VERBS.contains(&verb.as_str())) {
        return None;
    }
    // An in-place tensor method (`buffer.resize_(n)`) fails inside one operator: no frame
    // below the handler's holds tensors, so repeating it after freeing something else is
    // a fallback, not a retry that runs next to the failed step's memory.
    if name.ends_with('_') && !name.starts_with('_') && callee.kind_name() == "attribute" {
        return None;
    }
    let text = tree::text(callee, source);
    (retried.enclosing == Some(name) || retried.tried.contains(&text)).then_some(Retry::Function)
}

/// Bookkeeping and cleanup: none of these runs the step again, even when the `try` made
/// the same call (`torch.cuda.synchronize()` on both sides, a barrier, freeing the cache,
/// collecting garbage, logging).
const BOOKKEEPING: &[&str] = &[
    "append",
    "extend",
    "backward",
    "item",
    "step",
    "zero_grad",
    "print",
    "len",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "debug",
    "critical",
    "log",
    "print_exc",
    "format",
    "str",
    "synchronize",
    "barrier",
    "empty_cache",
    "ipc_collect",
    "collect",
    "reset_peak_memory_stats",
    "memory_summary",
    "flush",
    "sleep",
];

/// The first word of a function that lets go of something rather than computing it.
const RELEASE_VERBS: [&str; 10] =
    ["release", "free", "close", "cleanup", "clear", "unload", "remove", "delete", "destroy", "shutdown"];

/// The callees of the calls in the `try` body the handler belongs to.
fn tried_calls<'t>(handler: Node<'t>, source: &'t str) -> Vec<&'t str> {
    let Some(statement) = tree::ancestors(handler).find(|a| a.kind_name() == "try_statement") else { return Vec::new() };
    let Some(body) = statement.child_by_field_id(field::BODY) else { return Vec::new() };
    tree::descendants(body)
        .filter(|n| n.kind_name() == "call")
        .filter_map(|c| c.child_by_field_id(field::FUNCTION))
        .map(|f| tree::text(f, source))
        .collect()
}

