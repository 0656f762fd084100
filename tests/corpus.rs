//! The real-code corpus (`tests/corpus/`) stays well-formed: every label names a repository
//! of `repos.json` at its pinned commit, a known rule and a known kind with a reason, and the
//! file keeps one label per line in sorted order, so that labels added by several people
//! merge line by line. Scoring needs the repositories themselves: `scripts/corpus-eval`.

use oomlint::rules::RULES;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

fn corpus_file(name: &str) -> String {
    let path = format!("{}/tests/corpus/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The file's objects, one per line between the opening and closing bracket.
fn one_object_per_line(name: &str) -> Vec<Value> {
    let text = corpus_file(name);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"["), "{name}: first line must be `[`");
    assert_eq!(lines.last(), Some(&"]"), "{name}: last line must be `]`");
    let body = &lines[1..lines.len() - 1];
    body.iter()
        .enumerate()
        .map(|(i, line)| {
            let object = if i + 1 < body.len() {
                line.strip_suffix(',').unwrap_or_else(|| panic!("{name}:{}: a line ends with `,`", i + 2))
            } else {
                line
            };
            let value: Value =
                serde_json::from_str(object).unwrap_or_else(|e| panic!("{name}:{}: not one JSON object: {e}", i + 2));
            assert!(value.is_object(), "{name}:{}: not an object", i + 2);
            value
        })
        .collect()
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("`{field}` must be a string in {value}"))
}

#[test]
fn repos_pin_a_commit_and_a_scope() {
    let repos = one_object_per_line("repos.json");
    assert!(repos.len() >= 14);
    let mut seen = HashSet::new();
    for repo in &repos {
        let name = text(repo, "repo");
        assert!(name.split('/').count() == 2, "`{name}` is not owner/name");
        assert!(seen.insert(name), "{name} listed twice");
        let commit = text(repo, "commit");
        assert!(commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()), "{name}: commit `{commit}`");
        let scope = repo["scope"].as_array().unwrap_or_else(|| panic!("{name}: no scope"));
        assert!(!scope.is_empty(), "{name}: empty scope");
    }
    let names: Vec<&str> = repos.iter().map(|r| text(r, "repo")).collect();
    assert!(names.is_sorted(), "repos.json is sorted by repository");
}

#[test]
fn labels_are_facts_about_pinned_commits_in_merge_friendly_order() {
    let commits: HashMap<String, String> = one_object_per_line("repos.json")
        .iter()
        .map(|r| (text(r, "repo").to_string(), text(r, "commit").to_string()))
        .collect();
    let labels = one_object_per_line("labels.json");
    assert!(labels.len() >= 116);
    let mut keys = Vec::new();
    for label in &labels {
        let repo = text(label, "repo");
        let commit = commits.get(repo).unwrap_or_else(|| panic!("{repo} is not in repos.json: {label}"));
        assert_eq!(text(label, "commit"), commit, "label at another commit than repos.json pins: {label}");
        let rule = text(label, "rule");
        assert!(RULES.iter().any(|r| r.code == rule), "unknown rule {rule}: {label}");
        assert!(["TP", "FP", "DEBATABLE", "MISS"].contains(&text(label, "label")), "unknown kind: {label}");
        assert!(text(label, "why").len() >= 10, "every label says why: {label}");
        let line = label["line"].as_u64().filter(|&l| l >= 1).unwrap_or_else(|| panic!("1-based line: {label}"));
        let cell = match &label["cell"] {
            Value::Null => 0,
            value => value.as_u64().filter(|&c| c >= 1).unwrap_or_else(|| panic!("cell is null or 1-based: {label}")),
        };
        let path = text(label, "path");
        assert!(path.ends_with(".ipynb") == (cell > 0), "a cell exactly for notebooks: {label}");
        keys.push((repo.to_string(), path.to_string(), cell, line, rule.to_string()));
    }
    for pair in keys.windows(2) {
        assert!(
            pair[0] < pair[1],
            "labels.json must be sorted by (repo, path, cell, line, rule) without duplicates: {:?} then {:?} (scripts/corpus-eval --format-labels sorts it)",
            pair[0],
            pair[1]
        );
    }
}
