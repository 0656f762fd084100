//! OOM003 deprecated-cuda-amp: `torch.cuda.amp.*` and `torch.cpu.amp.*`.

use super::{Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use regex::Regex;
use std::sync::OnceLock;

const FILES: (&str, &str) = rule_files!("OOM003-deprecated-cuda-amp");

pub static RULE: Rule = Rule {
    code: "OOM003",
    slug: "deprecated-cuda-amp",
    default_severity: Severity::Warning,
    summary: "`torch.cuda.amp` / `torch.cpu.amp` APIs are deprecated in favour of `torch.amp`",
    cost: "no memory cost: each call emits a FutureWarning and the API is slated for removal; \
           the `torch.amp` spelling gives identical outputs",
    fix_title: "Use `torch.amp.autocast(\"cuda\", ...)` / `torch.amp.GradScaler(\"cuda\", ...)`",
    docs: FILES.1,
    query: FILES.0,
    // Every spelling of these modules writes `amp` as a word of its own.
    could_match: mentions_amp,
    check,
};

/// Deprecated path → (device, its replacement).
const DEPRECATED: &[(&str, &str)] = &[
    ("torch.cuda.amp.autocast", "torch.amp.autocast(\"cuda\", ...)"),
    ("torch.cuda.amp.autocast_mode.autocast", "torch.amp.autocast(\"cuda\", ...)"),
    ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler(\"cuda\", ...)"),
    ("torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.GradScaler(\"cuda\", ...)"),
    ("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(device_type=\"cuda\", ...)"),
    ("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(device_type=\"cuda\")"),
    ("torch.cpu.amp.autocast", "torch.amp.autocast(\"cpu\", ...)"),
    ("torch.cpu.amp.autocast_mode.autocast", "torch.amp.autocast(\"cpu\", ...)"),
    ("torch.cpu.amp.GradScaler", "torch.amp.GradScaler(\"cpu\", ...)"),
    ("torch.cpu.amp.grad_scaler.GradScaler", "torch.amp.GradScaler(\"cpu\", ...)"),
];

fn mentions_amp(source: &str) -> bool {
    static WORD: OnceLock<Regex> = OnceLock::new();
    source.contains("amp") && WORD.get_or_init(|| Regex::new(r"\bamp\b").expect("valid regex")).is_match(source)
}

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let Some(reference) = found.get("reference") else { return };
    let facts = checker.facts;
    let qualified = match facts.qualified_name(reference) {
        Some(name) => name,
        // `torch.cuda.amp.autocast` written out in a file that never imports torch.
        None if reference.kind() == "attribute"
            && checker.text(reference).starts_with("torch.")
            && facts.index().lookup("torch", reference).is_none() =>
        {
            checker.text(reference).to_string()
        }
        None => return,
    };
    let Some((path, replacement)) = DEPRECATED.iter().find(|(path, _)| *path == qualified) else { return };
    let written = checker.text(reference);
    let message = if written == *path {
        format!("`{path}` is deprecated: PyTorch emits a FutureWarning on every use")
    } else {
        format!("`{written}` is `{path}`, which is deprecated: PyTorch emits a FutureWarning on every use")
    };
    let help = format!("use `{replacement}`");
    checker.report(reference, Severity::Warning, message, help);
}
