//! OOM100 unused-suppression: a suppression comment, or a code in one, that suppressed
//! nothing. It has no query: it runs in the engine's suppression stage, once the other
//! rules' findings have met the file's suppression comments.

use super::{Check, Cost, Rule, rule_files};
use crate::diagnostic::{Diagnostic, Severity, TextRange};
use crate::engine::text_test;
use crate::fix::{Edit, Fix};
use crate::suppress::{CodeStatus, Directive, Spelling, Suppressions};
use std::collections::HashSet;

const FILES: (&str, &str) = rule_files!("OOM100-unused-suppression");

pub static RULE: Rule = Rule {
    code: "OOM100",
    slug: "unused-suppression",
    default_severity: Severity::Warning,
    preview: false,
    summary: "A suppression comment, or a code in one, that suppresses nothing",
    cost: Cost::Housekeeping {
        why: "a suppression that hides nothing today hides the next finding on its line, whatever it costs",
    },
    fix_title: "Remove the unused suppression",
    docs: FILES.1,
    query: FILES.0,
    could_match: could_report,
    reads_project: false,
    check: Check::Suppressions(report),
};

/// Only our own directive or a `noqa` naming an `OOM` code can be reported; files with
/// other linters' `noqa` comments alone are not parsed for this rule.
fn could_report(source: &str) -> bool {
    text_test::contains(source, "oomlint")
        || (text_test::contains_any(source, &["noqa", "NOQA"]) && noqa_names_an_oom_code(source))
}

/// Whether a `noqa:` names an `OOM` code on its line, case aside: what the regex
/// `(?i)noqa[ \t]*:[^\n]*oom[0-9]` finds (no other letter folds to these), as a scan.
/// Compiling that regex cost more than a millisecond, at the first file with a `noqa`.
fn noqa_names_an_oom_code(source: &str) -> bool {
    let bytes = source.as_bytes();
    memchr::memchr2_iter(b'n', b'N', bytes).any(|at| {
        if !bytes.get(at..at + 4).is_some_and(|word| word.eq_ignore_ascii_case(b"noqa")) {
            return false;
        }
        let mut colon = at + 4;
        while matches!(bytes.get(colon), Some(b' ' | b'\t')) {
            colon += 1;
        }
        if bytes.get(colon) != Some(&b':') {
            return false;
        }
        let rest = &bytes[colon + 1..];
        let line = &rest[..memchr::memchr(b'\n', rest).unwrap_or(rest.len())];
        line.windows(4).any(|code| code[..3].eq_ignore_ascii_case(b"oom") && code[3].is_ascii_digit())
    })
}

/// The findings for every directive, after `Suppressions::filter` marked what was used.
fn report(source: &str, suppressions: &Suppressions, status: &dyn Fn(&str) -> CodeStatus) -> Vec<Diagnostic> {
    // `# noqa: OOM100` / `ignore[OOM100]` keeps the suppressions of its line as they are.
    let kept_lines: HashSet<usize> = suppressions
        .directives
        .iter()
        .filter(|d| d.codes.iter().any(|(code, _)| code == RULE.code))
        .map(|d| d.line)
        .collect();
    let mut found = Vec::new();
    for directive in suppressions.directives.iter().filter(|d| !kept_lines.contains(&d.line)) {
        if directive.codes.is_empty() {
            // A bare `# noqa` belongs to every linter; only our own bare directive is ours.
            if directive.spelling == Spelling::Oomlint && !directive.used {
                found.push(diagnostic(
                    directive.range,
                    "Suppression comment suppresses nothing: no finding on this line".into(),
                    removal(source, directive),
                ));
            }
            continue;
        }
        let unused: Vec<(usize, CodeStatus)> = directive
            .codes
            .iter()
            .zip(&directive.used_codes)
            .enumerate()
            .filter(|(_, ((code, _), used))| !**used && is_ours(directive.spelling, code))
            .map(|(at, ((code, _), _))| (at, status(code)))
            .filter(|(_, status)| *status != CodeStatus::NotRun)
            .collect();
        if unused.is_empty() {
            continue;
        }
        let reasons: Vec<String> = unused
            .iter()
            .map(|&(at, status)| {
                let code = &directive.codes[at].0;
                match status {
                    CodeStatus::Unknown => format!("{code} (no such rule)"),
                    _ => format!("{code} (nothing reported on this line)"),
                }
            })
            .collect();
        let kept: Vec<&str> = (0..directive.codes.len())
            .filter(|at| !unused.iter().any(|(u, _)| u == at))
            .map(|at| directive.codes[at].0.as_str())
            .collect();
        let (range, edit) = if kept.is_empty() {
            (directive.range, removal(source, directive))
        } else {
            let first = directive.codes.first().expect("codes are not empty").1;
            let last = directive.codes.last().expect("codes are not empty").1;
            let span = |at: usize| directive.codes[at].1;
            let flagged = TextRange { start: span(unused[0].0).start, end: span(unused[unused.len() - 1].0).end };
            (flagged, Edit::replace(TextRange { start: first.start, end: last.end }, kept.join(", ")))
        };
        let message = format!("Unused suppression: {}", reasons.join(", "));
        found.push(diagnostic(range, message, edit));
    }
    found
}

/// Codes we answer for: every code in our own directive, and `OOM` codes in a `noqa`
/// (which other linters' codes share).
fn is_ours(spelling: Spelling, code: &str) -> bool {
    spelling == Spelling::Oomlint
        || code.strip_prefix("OOM").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn diagnostic(range: TextRange, message: String, edit: Edit) -> Diagnostic {
    Diagnostic {
        code: RULE.code,
        range,
        severity: RULE.default_severity,
        message,
        help: "Remove it, so it cannot hide a later finding on this line".into(),
        fix: Some(Fix::safe(RULE.fix_title, vec![edit])),
        related: Vec::new(),
    }
}

/// The edit that removes a whole directive and leaves the rest of the line as it was: a
/// comment-only line goes entirely, a trailing comment goes with the blanks before it,
/// and text after the directive stays a comment.
fn removal(source: &str, directive: &Directive) -> Edit {
    let (comment, range) = (directive.comment, directive.range);
    let after = &source[range.end..comment.end];
    let blanks_before = |at: usize, floor: usize| {
        at - (source[floor..at].len() - source[floor..at].trim_end_matches([' ', '\t']).len())
    };
    if range.start != comment.start {
        // Inside a longer comment (`# why  # noqa: OOM001`): drop it and the blanks before.
        return Edit::replace(TextRange { start: blanks_before(range.start, comment.start), end: range.end }, "");
    }
    if !after.trim().is_empty() {
        // `# oomlint: ignore[OOM001] because …` keeps `# because …`, and
        // `# oomlint: ignore[OOM001]  # type: ignore` keeps `# type: ignore`.
        let rest = range.end + (after.len() - after.trim_start().len());
        let opening = if source[rest..].starts_with('#') { "" } else { "# " };
        return Edit::replace(TextRange { start: range.start, end: rest }, opening);
    }
    let line_start = source[..comment.start].rfind('\n').map_or(0, |i| i + 1);
    if source[line_start..comment.start].trim().is_empty() {
        let line_end = source[comment.end..].find('\n').map_or(source.len(), |i| comment.end + i + 1);
        return Edit::replace(TextRange { start: line_start, end: line_end }, "");
    }
    Edit::replace(TextRange { start: blanks_before(comment.start, line_start), end: comment.end }, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan answers as the regex it stands for, over lines that tell them apart if
    /// anything does: blanks of each kind before the colon, the code on a later line,
    /// cut short, at the very end, in mixed case, after non-ASCII text.
    #[test]
    fn a_noqa_naming_an_oom_code_is_found_as_its_regex_finds_it() {
        let regex = regex::Regex::new(r"(?i)noqa[ \t]*:[^\n]*oom[0-9]").expect("valid regex");
        let lines = [
            "",
            "# noqa: OOM001",
            "# NOQA:oom2",
            "# NoQa \t : E501, Oom9",
            "# noqa : E501",
            "# noqa\n: OOM001",
            "# noqa: E501\n# OOM001",
            "# noqa OOM001",
            "# noqa:  OOM",
            "# noqa: OOMx1",
            "# noq: OOM001",
            "x = 1  # é noqa: é OOM1",
            "# noqa:\u{a0}OOM1",
            "# noqa\u{a0}: OOM1",
            "noqa:oom0",
            "nnoqa::ooom1",
            "# oomlint: ignore[OOM001]",
        ];
        let mut found = 0;
        for a in lines {
            for b in lines {
                let text = format!("{a}\n{b}");
                let expected = regex.is_match(&text);
                assert_eq!(noqa_names_an_oom_code(&text), expected, "{text:?}");
                found += usize::from(expected);
            }
        }
        assert!(found > 50 && found < lines.len().pow(2), "both answers are tried");
    }
}
