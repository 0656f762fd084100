//! OOM005 checkpoint-reentrant-default: `torch.utils.checkpoint` called without an
//! explicit `use_reentrant=`.

use super::{Check, Cost, Evidence, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::tree::{self, KindName};
use crate::fix::edits::append_argument;
use crate::fix::{Applicability, Fix};

const FILES: (&str, &str) = rule_files!("OOM005-checkpoint-reentrant-default");

pub static RULE: Rule = Rule {
    code: "OOM005",
    slug: "checkpoint-reentrant-default",
    default_severity: Severity::Warning,
    preview: false,
    summary: "`torch.utils.checkpoint` called without an explicit `use_reentrant=`",
    cost: Cost::Evidence(Evidence::Warning { category: "UserWarning", what: "checkpointing without `use_reentrant`" }),
    fix_title: "Pass `use_reentrant=False`",
    docs: FILES.1,
    query: FILES.0,
    could_match: could_call_checkpoint,
    reads_project: false,
    check: Check::Query(check),
};

/// A call spelled `checkpoint(` / `checkpoint_sequential(` in a file that names torch (it
/// must import or spell out `torch.utils.checkpoint`).
fn could_call_checkpoint(source: &str) -> bool {
    text_test::contains(source, "torch")
        && text_test::some_call(source, |before| {
            before.ends_with("checkpoint") || before.ends_with("checkpoint_sequential")
        })
}

const CHECKPOINT_FUNCTIONS: [&str; 2] =
    ["torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"];

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee), Some(arguments)) = (found.get("call"), found.get("callee"), found.get("arguments"))
    else {
        return;
    };
    // Only PyTorch's: a project's own `checkpoint(func, inputs, params, flag)` or another
    // library's helper is not this API.
    let Some(function) = checker.facts.resolves_to(callee, &CHECKPOINT_FUNCTIONS) else { return };
    let source = checker.source();
    if tree::keyword_arg(call, "use_reentrant", source).is_some() {
        return;
    }
    // A branch for PyTorch before 1.11, which has no `use_reentrant` (passing it raises) and
    // does not warn: the modern branch beside it usually passes it already.
    if crate::engine::facts::version_guard::old_torch_fallback(checker.facts, call) {
        return;
    }
    // `**options` may carry it.
    let mut cursor = arguments.walk();
    if arguments.named_children(&mut cursor).any(|a| a.kind_name() == "dictionary_splat") {
        return;
    }
    let short = function.rsplit('.').next().unwrap_or("checkpoint");
    let message = format!(
        "`{short}` without `use_reentrant=`: PyTorch warns on every call and will make it an error, and the \
         reentrant variant it falls back to breaks with some inputs"
    );
    let help = "pass `use_reentrant=False`, the variant PyTorch recommends".to_string();
    let fix = append_argument(source, call, "use_reentrant=False")
        .map(|edit| Fix::new(Applicability::Unsafe, RULE.fix_title, vec![edit]));
    checker.report(callee, Severity::Warning, message, help).fix = fix;
}
