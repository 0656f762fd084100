//! The rule registry. A rule is its query (`queries/<code>-<slug>.scm`), its metadata
//! and docs (`docs/rules/<code>-<slug>.md`), and a `check` function holding only what the
//! query cannot say.

mod oom001_loss_tensor_kept;
mod oom002_eval_without_no_grad;
mod oom003_deprecated_cuda_amp;
mod oom004_checkpoint_late_binding;
mod oom005_checkpoint_reentrant_default;
mod oom007_retain_graph_in_loop;
mod oom008_load_without_map_location;
mod oom010_retry_inside_except;
mod oom011_hidden_state_not_detached;
pub mod oom100_unused_suppression;

use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use crate::measure::Cost;

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
    /// How the cost is measured and quoted (`crate::measure::cost`); the figures come
    /// from `fixtures/measurements.json`.
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
    pub check: for<'t> fn(&mut Checker<'_, 't>, &Match<'_, 't>),
}

pub static RULES: &[&Rule] = &[
    &oom001_loss_tensor_kept::RULE,
    &oom002_eval_without_no_grad::RULE,
    &oom003_deprecated_cuda_amp::RULE,
    &oom004_checkpoint_late_binding::RULE,
    &oom005_checkpoint_reentrant_default::RULE,
    &oom007_retain_graph_in_loop::RULE,
    &oom008_load_without_map_location::RULE,
    &oom010_retry_inside_except::RULE,
    &oom011_hidden_state_not_detached::RULE,
    &oom100_unused_suppression::RULE,
];

impl Rule {
    /// The cost as measured, quoted by diagnostics, hovers and docs.
    pub fn measured_cost(&self) -> String {
        crate::measure::cost::measured_cost(self)
    }

    /// Whether the rule has runnable bad/good fixtures (every rule whose cost is run).
    pub fn has_fixtures(&self) -> bool {
        !matches!(self.cost, Cost::Housekeeping { .. })
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
