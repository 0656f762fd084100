//! The rule registry. A rule is its own files, all named `<code>-<slug>`: its query
//! (`queries/`), its docs (`docs/rules/`), its runnable bad/good fixtures (`fixtures/`),
//! its test cases (`tests/cases/`), and its module here with the metadata and a `check`
//! holding only what the query cannot say. Adding one takes those files and one line in
//! `registry!` below; `tests/rules.rs` fails when a rule lacks any of them.

pub mod cost;

use crate::diagnostic::{Diagnostic, Severity};
use crate::engine::checker::{Checker, Match};
use crate::suppress::{CodeStatus, Suppressions};
pub use cost::{Cost, DeviceMeasure, Evidence, Figure};

/// One line per rule: its module, which holds `pub static RULE: Rule`. `RULES` lists them
/// in this order.
macro_rules! registry {
    ($($module:ident,)*) => {
        $(mod $module;)*
        pub static RULES: &[&Rule] = &[$(&$module::RULE),*];
    };
}

registry! {
    oom001_loss_tensor_kept,
    oom002_eval_without_no_grad,
    oom003_deprecated_cuda_amp,
    oom004_checkpoint_late_binding,
    oom005_checkpoint_reentrant_default,
    oom006_empty_cache_in_loop,
    oom007_retain_graph_in_loop,
    oom008_load_without_map_location,
    oom009_alloc_conf_too_late,
    oom010_retry_inside_except,
    oom011_hidden_state_not_detached,
    oom100_unused_suppression,
}

/// The words of what rules read over the whole file rather than around a finding (the
/// file's `torch.save` calls, whether it moves a model to an accelerator anywhere): an
/// edit on a line holding one may change findings elsewhere, and the language server
/// then relints the whole file.
pub fn file_wide_words() -> impl Iterator<Item = &'static str> {
    [oom002_eval_without_no_grad::FILE_WIDE_WORDS, oom008_load_without_map_location::FILE_WIDE_WORDS]
        .into_iter()
        .flatten()
        .copied()
}

/// The names of calls that facts about module-level code gather from the whole file (the
/// module's byte range holds every function). An edit inside a function whose lines hold
/// one may change findings in module-level code, which the language server then relints
/// along with the function.
pub fn module_wide_words() -> &'static [&'static str] {
    oom001_loss_tensor_kept::MODULE_WIDE_WORDS
}

/// Tests of a file's whole text, besides each rule's `could_match`, whose answers decide
/// findings anywhere in it (OOM001: whether the file names autograd at all). The
/// language server relints the whole file when an edit changes one.
pub fn whole_text_tests(text: &str) -> impl Iterator<Item = bool> + '_ {
    [oom001_loss_tensor_kept::names_autograd as fn(&str) -> bool].into_iter().map(move |test| test(text))
}

pub struct Rule {
    /// Public, stable identifier (`OOM001`).
    pub code: &'static str,
    /// Human name (`loss-tensor-kept`).
    pub slug: &'static str,
    pub default_severity: Severity,
    /// A preview rule runs only with preview on (`--preview`, `preview = true`, the editor's
    /// `preview` setting). A rule is on by default only while its precision on the real-code
    /// corpus (`tests/corpus/`, scored by `scripts/corpus-eval`) is at least 0.95.
    pub preview: bool,
    /// One line: what it finds.
    pub summary: &'static str,
    /// What the cost is and how its fixtures show it; `oomlint measure` runs them and the
    /// figures recorded in `fixtures/measurements.json` are quoted.
    pub cost: Cost,
    /// One line: how to fix a finding.
    pub fix_title: &'static str,
    /// Full docs in markdown, with the fixed sections What it does / Why is this bad? /
    /// Example / How to fix / Fix safety.
    pub docs: &'static str,
    pub query: &'static str,
    /// A cheap text test: `false` proves the rule cannot match the file, so files no
    /// enabled rule could match skip the parse.
    pub could_match: fn(&str) -> bool,
    /// Whether its `check` asks the project index about other files (callers, callees,
    /// decorators defined elsewhere): `check` builds the index only when such a rule runs.
    pub reads_project: bool,
    pub check: Check,
}

/// When a rule's host code runs.
#[derive(Clone, Copy)]
pub enum Check {
    /// With each match of the rule's query.
    Query(for<'t> fn(&mut Checker<'_, 't>, &Match<'_, 't>)),
    /// Once per file, in the engine's suppression stage: after the other rules' findings
    /// met the suppression comments, with which comments and codes suppressed something
    /// and whether the rule each code names ran. Its findings are not suppressed again.
    Suppressions(SuppressionCheck),
}

/// A suppression-stage check: the file's text, its suppression comments (marked with
/// what they suppressed), and what the engine knows about each rule code.
pub type SuppressionCheck = fn(&str, &Suppressions, &dyn Fn(&str) -> CodeStatus) -> Vec<Diagnostic>;

impl Rule {
    /// Whether the rule has runnable bad/good fixtures (every rule whose cost is run).
    pub fn has_fixtures(&self) -> bool {
        !matches!(self.cost, Cost::Housekeeping { .. })
    }

    /// Whether the rule judges the suppression comments, so it needs the other rules'
    /// findings to say anything.
    pub fn reads_suppressions(&self) -> bool {
        matches!(self.check, Check::Suppressions(_))
    }

    /// Whether its findings are uses of a deprecated API (editors strike them through).
    pub fn flags_deprecated_api(&self) -> bool {
        matches!(self.cost, Cost::Evidence(Evidence::Deprecation { .. }))
    }

    /// The first paragraph of a docs section (`## What it does`).
    pub fn docs_section(&self, heading: &str) -> Option<&'static str> {
        let start = self.docs.find(heading)? + heading.len();
        self.docs[start..].split("\n\n").map(str::trim).find(|p| !p.is_empty() && !p.starts_with("## "))
    }
}

/// A rule by code (`OOM001`, any case) or slug (`loss-tensor-kept`).
pub fn find(name: &str) -> Option<&'static Rule> {
    RULES.iter().copied().find(|r| r.code.eq_ignore_ascii_case(name) || r.slug == name)
}

/// The README's table of rules, derived from the registry (a test keeps the README's
/// copy equal to it).
pub fn markdown_table() -> String {
    let mut table = String::from("| code | name | default | what it finds |\n|---|---|---|---|\n");
    for rule in RULES {
        let stem = format!("{}-{}", rule.code, rule.slug);
        let default = if rule.preview {
            format!("preview: {}", rule.default_severity)
        } else {
            rule.default_severity.to_string()
        };
        table.push_str(&format!(
            "| [{}](docs/rules/{stem}.md) | {} | {default} | {} |\n",
            rule.code, rule.slug, rule.summary
        ));
    }
    table
}

/// Include a rule's query and docs by its file stem, so each lives under one name.
macro_rules! rule_files {
    ($stem:literal) => {
        (
            include_str!(concat!("../../queries/", $stem, ".scm")),
            include_str!(concat!("../../docs/rules/", $stem, ".md")),
        )
    };
}
pub(crate) use rule_files;

/// Whether `settings` enable a rule that reads other files of the project, so that
/// building the project index is worth its cost.
pub fn reads_project(settings: &crate::engine::RuleSettings) -> bool {
    RULES.iter().zip(&settings.enabled).any(|(rule, on)| *on && rule.reads_project)
}

/// Whether linting a file's `text` with `settings` may ask the rest of the project: a rule
/// that reads it is on and could match the text (`Rule::could_match`, of the code the
/// engine reads: no byte-order mark, lone carriage returns read as line ends).
pub fn may_ask_project(settings: &crate::engine::RuleSettings, text: &str) -> bool {
    let code = crate::source::lone_carriage_returns_as_newlines(crate::source::without_byte_order_mark(text));
    RULES.iter().zip(&settings.enabled).any(|(rule, on)| *on && rule.reads_project && (rule.could_match)(&code))
}
