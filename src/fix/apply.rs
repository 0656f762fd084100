//! Applying fixes: pick the applicable ones, apply those that do not overlap, lint
//! again and repeat until nothing more applies (bounded), and never keep a fix whose
//! result does not parse. Shared by `--fix`, `--diff` and the editor's fix-all.

use super::{Applicability, Edit, Fix};
use crate::diagnostic::Diagnostic;
use crate::engine::{Engine, RuleSettings, parse, syntax};
use std::path::Path;

/// Fixing stops after this many rounds even if fixes keep applying.
const MAX_ROUNDS: usize = 10;

#[derive(Debug)]
pub struct FixResult {
    pub text: String,
    /// How many fixes were applied.
    pub applied: usize,
    /// Findings whose fix was dropped because the result would not parse.
    pub dropped: Vec<Diagnostic>,
    /// What is still found in the fixed text.
    pub remaining: Vec<Diagnostic>,
}

/// Fix `source` with every fix at least as safe as `threshold`.
pub fn fix_source(
    engine: &Engine,
    source: &str,
    path: &Path,
    settings: &RuleSettings,
    threshold: Applicability,
) -> FixResult {
    fix_source_keeping(engine, source, path, settings, threshold, |_, _| true)
}

/// Fix `source` with every fix at least as safe as `threshold` that `applicable` (given
/// the text being fixed) keeps.
pub fn fix_source_keeping(
    engine: &Engine,
    source: &str,
    path: &Path,
    settings: &RuleSettings,
    threshold: Applicability,
    applicable: impl Fn(&str, &Diagnostic) -> bool,
) -> FixResult {
    let line_ending = crate::source::dominant_line_ending(source);
    let baseline_errors = error_count(source);
    let mut text = source.to_string();
    let mut applied = 0;
    let mut dropped: Vec<Diagnostic> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let diagnostics = engine.lint(&text, path, settings).diagnostics;
        let candidates: Vec<&Diagnostic> = diagnostics
            .iter()
            .filter(|d| d.fix.as_ref().is_some_and(|f| f.is_applicable(threshold)))
            .filter(|d| applicable(&text, d))
            .filter(|d| !dropped.iter().any(|x| x.code == d.code && x.message == d.message))
            .collect();
        let chosen = non_overlapping(&candidates);
        if chosen.is_empty() {
            break;
        }
        let fixes: Vec<&Fix> = chosen.iter().filter_map(|d| d.fix.as_ref()).collect();
        let together = apply_fixes(&text, &fixes, line_ending);
        if error_count(&together) <= baseline_errors {
            text = together;
            applied += chosen.len();
            continue;
        }
        // Some fix breaks the syntax: keep the others, one at a time, each checked.
        let mut progressed = false;
        for diagnostic in chosen {
            let candidate = apply_fixes(&text, &[diagnostic.fix.as_ref().expect("chosen fixes exist")], line_ending);
            if error_count(&candidate) <= baseline_errors {
                text = candidate;
                applied += 1;
                progressed = true;
                break; // offsets of the other fixes are stale now: lint again
            }
            dropped.push(diagnostic.clone());
        }
        if !progressed && dropped.is_empty() {
            break;
        }
    }
    let remaining = engine.lint(&text, path, settings).diagnostics;
    FixResult { text, applied, dropped, remaining }
}

/// Fixes in document order, skipping any whose edits overlap an earlier chosen fix's
/// (identical edits, such as the same added import, do not count as overlapping).
fn non_overlapping<'d>(candidates: &[&'d Diagnostic]) -> Vec<&'d Diagnostic> {
    let mut taken: Vec<&Edit> = Vec::new();
    let mut chosen = Vec::new();
    for diagnostic in candidates {
        let edits = &diagnostic.fix.as_ref().expect("candidates have fixes").edits();
        let clashes = edits.iter().any(|edit| taken.iter().any(|t| *t != edit && overlaps(t, edit)));
        if !clashes {
            taken.extend(edits.iter());
            chosen.push(*diagnostic);
        }
    }
    chosen
}

fn overlaps(a: &Edit, b: &Edit) -> bool {
    let (a, b) = (a.range, b.range);
    // Two insertions at one point clash (their order would be arbitrary); an insertion
    // touching a replacement's edge does not.
    if a.start == a.end && b.start == b.end {
        return a.start == b.start;
    }
    a.start < b.end && b.start < a.end
}

/// Apply the fixes' edits (deduplicated) to `text`.
pub fn apply_fixes(text: &str, fixes: &[&Fix], line_ending: &str) -> String {
    let edits = super::in_text_order(fixes.iter().flat_map(|f| f.edits()).collect::<Vec<&Edit>>());
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for edit in edits {
        if edit.range.start < at {
            continue; // overlapping edit: never produced by `non_overlapping`
        }
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.content.replace('\n', line_ending));
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    out
}

fn error_count(text: &str) -> usize {
    let text = crate::source::lone_carriage_returns_as_newlines(text);
    parse(&text)
        .map_or(usize::MAX, |tree| syntax::error_count(tree.root_node()) + syntax::unclosed_brackets(&text).len())
}
