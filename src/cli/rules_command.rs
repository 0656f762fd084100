//! `oomlint rules` and `oomlint rule CODE`.

use super::{EXIT_CLEAN, EXIT_ERROR};
use crate::rules::{self, RULES};
use serde_json::json;
use std::fmt::Write as _;
use std::io::Write as _;

pub fn list(as_json: bool) -> u8 {
    if as_json {
        let rules: Vec<_> = RULES
            .iter()
            .map(|r| {
                json!({
                    "code": r.code,
                    "name": r.slug,
                    "default_severity": r.default_severity.as_str(),
                    "preview": r.preview,
                    "summary": r.summary,
                    "cost": r.measured_cost(),
                    "fix": r.fix_title,
                })
            })
            .collect();
        return print(&format!("{}\n", serde_json::to_string_pretty(&rules).unwrap_or_default()));
    }
    let width = RULES.iter().map(|r| r.slug.len()).max().unwrap_or(0);
    let mut out = String::new();
    // "preview": off unless preview is on (`--preview`, `preview = true`, the editor setting).
    for rule in RULES {
        let state = if rule.preview { "preview" } else { "default" };
        let severity = rule.default_severity.as_str();
        let _ = writeln!(out, "{}  {:width$}  {severity:7}  {state:7}  {}", rule.code, rule.slug, rule.summary);
    }
    print(&out)
}

pub fn show(name: &str) -> u8 {
    let Some(rule) = rules::find(name) else {
        eprintln!("error: no rule named `{name}` (see `oomlint rules`)");
        return EXIT_ERROR;
    };
    let mut out = format!("{}\n\nDefault severity: {}\n", rule.docs.trim_end(), rule.default_severity);
    if rule.preview {
        out.push_str("Preview rule: runs only with --preview (or `preview = true` in the configuration)\n");
    }
    let _ = writeln!(out, "Query: queries/{}-{}.scm", rule.code, rule.slug);
    print(&out)
}

/// Standard output closed early (`oomlint rules | head`) is not an error worth a panic.
fn print(text: &str) -> u8 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write to standard output: {e}");
            EXIT_ERROR
        }
        _ => EXIT_CLEAN,
    }
}
