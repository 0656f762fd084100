//! `oomlint rules` and `oomlint rule CODE`.

use super::{EXIT_CLEAN, EXIT_ERROR};
use crate::rules::{self, RULES};
use serde_json::json;

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
        println!("{}", serde_json::to_string_pretty(&rules).unwrap_or_default());
        return EXIT_CLEAN;
    }
    let width = RULES.iter().map(|r| r.slug.len()).max().unwrap_or(0);
    // "preview": off unless preview is on (`--preview`, `preview = true`, the editor setting).
    for rule in RULES {
        let state = if rule.preview { "preview" } else { "default" };
        println!(
            "{}  {:width$}  {:7}  {state:7}  {}",
            rule.code,
            rule.slug,
            rule.default_severity.as_str(),
            rule.summary
        );
    }
    EXIT_CLEAN
}

pub fn show(name: &str) -> u8 {
    let Some(rule) = rules::find(name) else {
        eprintln!("error: no rule named `{name}` (see `oomlint rules`)");
        return EXIT_ERROR;
    };
    println!("{}", rule.docs.trim_end());
    println!();
    println!("Default severity: {}", rule.default_severity);
    if rule.preview {
        println!("Preview rule: runs only with --preview (or `preview = true` in the configuration)");
    }
    println!("Query: queries/{}-{}.scm", rule.code, rule.slug);
    EXIT_CLEAN
}
