//! Every rule, case by case: each true positive in `tests/cases/<rule>/flagged` is
//! reported (and its report matches the snapshot), each near miss in `silent` is not,
//! and each rule's fixtures are flagged (bad) and clean (good).

mod common;

use common::{lint_with_only, python_files, repo, rule_dir};
use oomlint::engine::Engine;
use oomlint::render::{self, LintedFile, OutputFormat};
use oomlint::rules::RULES;

/// A rule is its files under its `<code>-<slug>` name plus one registry line: each file
/// exists under that name (the query and docs compiled into the rule are those files),
/// and no file in those folders is left over from a rule that is not registered.
#[test]
fn every_rule_is_complete() {
    let stems: Vec<String> = RULES.iter().map(|r| rule_dir(r)).collect();
    for rule in RULES {
        let stem = rule_dir(rule);
        Engine::compile(&[*rule]).unwrap_or_else(|e| panic!("{e}"));
        let read = |path: std::path::PathBuf| {
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {}: {e}", rule.code, path.display()))
        };
        assert_eq!(rule.query, read(repo().join("queries").join(format!("{stem}.scm"))), "{}: query", rule.code);
        assert_eq!(rule.docs, read(repo().join("docs/rules").join(format!("{stem}.md"))), "{}: docs", rule.code);
        let module = format!("src/rules/{}_{}.rs", rule.code.to_lowercase(), rule.slug.replace('-', "_"));
        assert!(repo().join(&module).is_file(), "{}: no {module}", rule.code);
        for section in [
            "## What it does",
            "## Why is this bad?",
            "## Measured cost",
            "## Example",
            "## How to fix",
            "## Fix safety",
        ] {
            assert!(rule.docs.contains(section), "{}: docs lack `{section}`", rule.code);
        }
        assert!(rule.docs.starts_with(&format!("# {} {}", rule.code, rule.slug)), "{}: docs title", rule.code);
        assert!(!rule.summary.is_empty() && !rule.fix_title.is_empty(), "{}", rule.code);
        let fixtures = repo().join("fixtures").join(&stem);
        for script in ["bad.py", "good.py"].into_iter().filter(|_| rule.has_fixtures()) {
            assert!(fixtures.join(script).is_file(), "{}: missing fixtures/{stem}/{script}", rule.code);
        }
        assert_eq!(fixtures.is_dir(), rule.has_fixtures(), "{}: fixtures/{stem} and its cost disagree", rule.code);
        let cases = repo().join("tests/cases").join(&stem);
        let flagged = python_files(&cases.join("flagged"));
        assert!(flagged.len() >= 4, "{}: too few flagged cases in tests/cases/{stem}", rule.code);
        assert!(python_files(&cases.join("silent")).len() >= 4, "{}: too few near misses", rule.code);
        for case in flagged {
            let snapshot =
                repo().join("tests/snapshots").join(format!("rules__{}.snap", snapshot_name(rule.code, &case)));
            assert!(snapshot.is_file(), "{}: no snapshot {}", rule.code, snapshot.display());
        }
    }
    // Nothing named like a rule that is not one (a rule renamed or removed in part).
    for (folder, suffix) in [("queries", ".scm"), ("docs/rules", ".md"), ("fixtures", ""), ("tests/cases", "")] {
        for entry in std::fs::read_dir(repo().join(folder)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(suffix).filter(|stem| stem.starts_with("OOM")) else { continue };
            assert!(stems.iter().any(|s| s == stem), "{folder}/{name} belongs to no registered rule");
        }
    }
    let codes: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    let mut unique = codes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(codes, unique, "rule codes are unique and in order");
}

/// Rules declare their cost; `measure` runs and quotes it: `rules` never reaches into
/// `measure`, and nothing outside `rules` calls a single rule's module.
#[test]
fn rules_do_not_depend_on_measure_and_no_one_calls_a_rule_module() {
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if entry.is_dir() {
                sources(&entry, out);
            } else if entry.extension().is_some_and(|e| e == "rs") {
                out.push(entry);
            }
        }
    }
    let mut files = Vec::new();
    sources(&repo().join("src"), &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(repo()).unwrap().display().to_string();
        if relative.starts_with("src/rules/") {
            assert!(!text.contains("crate::measure"), "{relative} uses `measure`: a rule declares its cost only");
        } else {
            assert!(!text.contains("rules::oom"), "{relative} calls a rule's module: go through `Rule`");
        }
    }
}

/// The README's table of rules is the one the registry derives; with
/// `OOMLINT_WRITE_README=1` the test writes it there instead.
#[test]
fn the_readme_lists_every_rule_as_the_registry_says() {
    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let table = oomlint::rules::markdown_table();
    if std::env::var_os("OOMLINT_WRITE_README").is_some() {
        let start = readme.find("| code | name |").expect("README.md has a table of rules");
        let end = readme[start..].find("\n\n").map_or(readme.len(), |at| start + at + 1);
        std::fs::write(&path, format!("{}{table}{}", &readme[..start], &readme[end..])).unwrap();
        return;
    }
    assert!(
        readme.contains(&table),
        "README.md's table of rules is not the registry's (OOMLINT_WRITE_README=1 writes it); it should read:\n\n{table}"
    );
}

fn snapshot_name(code: &str, case: &std::path::Path) -> String {
    format!("{code}-{}", case.file_stem().unwrap().to_string_lossy())
}

/// Every rule quotes a cost measured by running its fixtures (a memory figure, or the
/// behaviour that is its cost), and its docs quote the same figures.
#[test]
fn every_rule_has_measured_evidence_quoted_in_its_docs() {
    use oomlint::measure::cost::{COMPILED, best_pair, cost_section, quote};
    use oomlint::rules::Cost;
    for rule in RULES {
        let quoted = quote(rule, &COMPILED).unwrap_or_else(|why| panic!("{}: {why}", rule.code));
        if let Cost::Housekeeping { why } = rule.cost {
            assert!(!rule.has_fixtures() && quoted.contains(why), "{}: {quoted}", rule.code);
        } else if let Cost::Device { documented, source, .. } = rule.cost {
            // Only a GPU run measures these; until one is recorded, the documented
            // behaviour and its source are quoted, and say so.
            let measured = quoted.contains("(measured: ");
            let documented_only =
                quoted.starts_with("not measured here yet") && quoted.contains(documented) && quoted.contains(source);
            assert!(measured || documented_only, "{}: {quoted}", rule.code);
        } else {
            assert!(quoted.contains("(measured: "), "{}: {quoted}", rule.code);
        }
        if let Some((figure, _, _)) = rule.cost.memory() {
            let (bad, good) = best_pair(rule.code, &COMPILED).unwrap();
            // The anti-pattern must cost something real: a quarter more than the fixed
            // figure, and at least 1 MiB.
            let (bad, good) = (figure.bytes(&bad.figures), figure.bytes(&good.figures));
            assert!(bad > 1.25 * good && bad - good >= 1024.0 * 1024.0, "{}: {bad} vs {good}", rule.code);
        }
        let section = cost_section(rule.docs).unwrap_or_default();
        assert_eq!(
            section,
            quoted,
            "{}: docs/rules/{}.md quotes other figures than fixtures/measurements.json; run `oomlint measure --write`",
            rule.code,
            rule_dir(rule)
        );
    }
}

#[test]
fn flagged_cases_are_reported_as_snapshotted() {
    for rule in RULES {
        let dir = repo().join("tests/cases").join(rule_dir(rule)).join("flagged");
        for case in python_files(&dir) {
            let (source, diagnostics) = lint_with_only(rule, &case);
            assert!(!diagnostics.is_empty(), "{}: not flagged: {}", rule.code, case.display());
            assert!(diagnostics.iter().all(|d| d.code == rule.code));
            let shown = format!("flagged/{}", case.file_name().unwrap().to_string_lossy());
            let mut out = Vec::new();
            render::render(
                OutputFormat::Full,
                &[LintedFile::new(shown, source, diagnostics)],
                false,
                &Default::default(),
                &mut out,
            )
            .unwrap();
            insta::assert_snapshot!(snapshot_name(rule.code, &case), String::from_utf8(out).unwrap());
        }
    }
}

#[test]
fn near_misses_stay_silent() {
    for rule in RULES {
        let dir = repo().join("tests/cases").join(rule_dir(rule)).join("silent");
        for case in python_files(&dir) {
            let (_, diagnostics) = lint_with_only(rule, &case);
            assert!(diagnostics.is_empty(), "{}: false positive in {}: {diagnostics:#?}", rule.code, case.display());
        }
    }
}

#[test]
fn bad_fixtures_are_flagged_and_good_ones_are_clean() {
    for rule in RULES.iter().filter(|r| r.has_fixtures()) {
        let dir = repo().join("fixtures").join(rule_dir(rule));
        let (_, bad) = lint_with_only(rule, &dir.join("bad.py"));
        assert!(!bad.is_empty(), "{}: bad.py is not flagged", rule.code);
        let good = std::fs::read_to_string(dir.join("good.py")).unwrap();
        let findings = common::lint_all(&good, "good.py");
        assert!(findings.is_empty(), "{}: good.py is flagged: {findings:#?}", rule.code);
    }
}
