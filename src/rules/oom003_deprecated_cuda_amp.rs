//! OOM003 deprecated-cuda-amp: `torch.cuda.amp.*` and `torch.cpu.amp.*`.

use crate::engine::field;
use super::{Check, Cost, Evidence, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::diagnostic::TextRange;
use crate::engine::checker::{Checker, Match};
use crate::engine::tree::{self, KindName};
use crate::fix::{Edit, Fix, edits};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM003-deprecated-cuda-amp");

pub static RULE: Rule = Rule {
    code: "OOM003",
    slug: "deprecated-cuda-amp",
    default_severity: Severity::Warning,
    preview: false,
    summary: "`torch.cuda.amp` / `torch.cpu.amp` APIs are deprecated in favour of `torch.amp`",
    cost: Cost::Evidence(Evidence::Deprecation { what: "the deprecated spelling" }),
    fix_title: "Use `torch.amp.autocast(\"cuda\", ...)` / `torch.amp.GradScaler(\"cuda\", ...)`",
    docs: FILES.1,
    query: FILES.0,
    // Every spelling of these modules writes `amp` as a word of its own.
    could_match: mentions_amp,
    reads_project: false,
    check: Check::Query(check),
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
    crate::engine::text_test::has_word(source, "amp")
}

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let Some(reference) = found.get("reference").or_else(|| found.get("name").and_then(ended_attribute)) else {
        return;
    };
    let facts = checker.facts;
    let qualified = match facts.qualified_name(reference) {
        Some(name) => name,
        // `torch.cuda.amp.autocast` written out in a file that never imports torch.
        None if reference.kind_name() == "attribute"
            && checker.text(reference).starts_with("torch.")
            && facts.index().lookup("torch", reference).is_none() =>
        {
            checker.text(reference).to_string()
        }
        None => return,
    };
    let Some((path, replacement)) = DEPRECATED.iter().find(|(path, _)| *path == qualified) else { return };
    if is_annotation(reference) || crate::engine::facts::version_guard::old_torch_fallback(checker.facts, reference)
    {
        return;
    }
    let written = checker.text(reference);
    let message = if written == *path {
        format!("`{path}` is deprecated: PyTorch emits a FutureWarning on every use")
    } else {
        format!("`{written}` is `{path}`, which is deprecated: PyTorch emits a FutureWarning on every use")
    };
    let help = format!("use `{replacement}`");
    let fix = modern_spelling_fix(checker, reference, path);
    checker.report(reference, Severity::Warning, message, help).fix = fix;
}

/// `scaler: Optional[torch.cuda.amp.GradScaler]`: a type names the class and calls nothing,
/// so no warning is emitted.
fn is_annotation(reference: Node) -> bool {
    tree::ancestors(reference).any(|a| a.kind_name() == "type")
}

/// The attribute `name` is the last link of (`amp.autocast` for `autocast`).
fn ended_attribute(name: Node) -> Option<Node> {
    let attribute = tree::parent(name).filter(|p| p.kind_name() == "attribute")?;
    attribute.child_by_field_id(field::ATTRIBUTE).filter(|a| a.id() == name.id()).map(|_| attribute)
}

/// The names `torch.amp` provides in place of the deprecated ones.
const MODERN_NAMES: [&str; 4] = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"];

/// `torch.amp.<name>` with the device made explicit, keeping the meaning (safe). A bare
/// name imported with `from torch.cuda.amp import ...` stays bare, its import rewritten
/// to `torch.amp`, when every use of every name of that import can be rewritten too;
/// otherwise the reference is spelled out as `torch.amp.<name>`. A reference that is not
/// called (an alias, a value passed around) gets no fix: the device cannot be added.
fn modern_spelling_fix<'t>(checker: &Checker<'_, 't>, reference: Node<'t>, path: &str) -> Option<Fix> {
    let (module, name) = path.rsplit_once('.')?;
    let device = if module.starts_with("torch.cpu") { "cpu" } else { "cuda" };
    let mut edits = argument_edits(checker, reference, name, device)?;
    let import = if reference.kind_name() == "identifier" { bare_name_import(checker, reference) } else { None };
    match import {
        Some(statement) if rewritable_import(checker, statement) => {
            let module_name = statement.child_by_field_id(field::MODULE_NAME)?;
            edits.push(Edit::replace(TextRange::of(module_name), "torch.amp"));
        }
        // Spelled through an alias assignment: the alias may be used elsewhere as a value.
        None if reference.kind_name() == "identifier" => return None,
        _ => {
            let (torch, import_edit) = torch_name(checker, reference);
            edits.push(Edit::replace(TextRange::of(reference), format!("{torch}.amp.{name}")));
            edits.extend(import_edit);
        }
    }
    let device_literal = edits::string_literal(checker.facts, device);
    Some(Fix::safe(format!("Use `torch.amp.{name}` with device {device_literal}"), edits))
}

/// How `torch` is spelled where `reference` is: its own root (`T` in `T.cuda.amp.x`),
/// else the file's top-level torch import, added when missing.
fn torch_name<'t>(checker: &Checker<'_, 't>, reference: Node<'t>) -> (String, Option<Edit>) {
    let mut root = reference;
    while let Some(object) = root.child_by_field_id(field::OBJECT).filter(|_| root.kind_name() == "attribute") {
        root = object;
    }
    if root.kind_name() == "identifier" && checker.facts.qualified_name(root).as_deref() == Some("torch") {
        return (checker.text(root).to_string(), None);
    }
    edits::torch_module(checker.facts)
}

/// The edits that make the device explicit where `reference` is used, or `None` when it
/// is not used in a way that can take one.
fn argument_edits(checker: &Checker, reference: Node, name: &str, device: &str) -> Option<Vec<Edit>> {
    let source = checker.source();
    let device_literal = edits::string_literal(checker.facts, device);
    let parent = tree::parent(reference)?;
    let call =
        (parent.kind_name() == "call" && parent.child_by_field_id(field::FUNCTION)?.id() == reference.id()).then_some(parent);
    match (call, name) {
        (Some(call), "custom_fwd" | "custom_bwd") => {
            Some(vec![edits::append_argument(source, call, &format!("device_type={device_literal}"))?])
        }
        (Some(call), "autocast") => {
            // Old: autocast(enabled, dtype, cache_enabled); new: autocast(device_type,
            // dtype, enabled, cache_enabled). Positional arguments become keywords.
            let mut all = vec![edits::prepend_argument(call, &device_literal)?];
            for (argument, keyword) in
                tree::positional_args(call).into_iter().zip(["enabled", "dtype", "cache_enabled"])
            {
                if argument.kind_name() == "list_splat" {
                    return None;
                }
                all.push(Edit::insert(argument.start_byte(), format!("{keyword}=")));
            }
            let arguments = call.child_by_field_id(field::ARGUMENTS)?;
            let splat = arguments.named_children(&mut arguments.walk()).any(|a| a.kind_name() == "list_splat");
            (tree::positional_args(call).len() <= 3 && !splat).then_some(all)
        }
        // GradScaler keeps its parameters in order after the new leading device.
        (Some(call), _) => Some(vec![edits::prepend_argument(call, &device_literal)?]),
        (None, "custom_fwd" | "custom_bwd") if parent.kind_name() == "decorator" => {
            Some(vec![Edit::insert(reference.end_byte(), format!("(device_type={device_literal})"))])
        }
        (None, _) => None,
    }
}

/// The `from torch.cuda.amp import ...` statement a bare name comes from.
fn bare_name_import<'t>(checker: &Checker<'_, 't>, reference: Node<'t>) -> Option<Node<'t>> {
    let binding = checker.facts.index().lookup(checker.text(reference), reference)?;
    (binding.statement.kind_name() == "import_from_statement").then_some(binding.statement)
}

/// Every name the statement imports exists in `torch.amp`, and every use of each can
/// take the device argument, so the import can move to `torch.amp` for all of them.
fn rewritable_import<'t>(checker: &Checker<'_, 't>, statement: Node<'t>) -> bool {
    // Asked for each use of the import's names, and it reads all of them.
    *checker.facts.memo("OOM003 rewritable import", Some(statement), || every_use_rewritable(checker, statement))
}

fn every_use_rewritable<'t>(checker: &Checker<'_, 't>, statement: Node<'t>) -> bool {
    let module = statement.child_by_field_id(field::MODULE_NAME).map(|m| checker.text(m));
    if !matches!(module, Some("torch.cuda.amp" | "torch.cpu.amp")) {
        return false;
    }
    let mut cursor = statement.walk();
    statement.children_by_field_id(field::id(field::NAME), &mut cursor).all(|imported| {
        let (original, local) = match imported.kind_name() {
            "aliased_import" => (imported.child_by_field_id(field::NAME), imported.child_by_field_id(field::ALIAS)),
            _ => (Some(imported), Some(imported)),
        };
        let (Some(original), Some(local)) = (original, local) else { return false };
        let original = checker.text(original);
        MODERN_NAMES.contains(&original)
            && checker.facts.index().occurrences(checker.text(local)).iter().all(|&use_| {
                tree::contains(statement, use_)
                    || !tree::is_name_reference(use_)
                    || bare_name_import(checker, use_).is_some_and(|s| s.id() == statement.id())
                        && argument_edits(checker, use_, original, "cuda").is_some()
            })
    })
}
