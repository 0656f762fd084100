//! Fixes: the fixed text of every flagged case (snapshotted), convergence, syntax
//! safety, the fixed fixtures, and `--fix` / `--diff` / `--unsafe-fixes` on real files
//! (atomic writes that keep permissions, line endings, BOM and final newline).

mod common;

use common::{oomlint, python_files, repo, rule_dir};
use oomlint::diagnostic::Severity;
use oomlint::engine::checker::{Checker, Match};
use oomlint::engine::{Engine, RuleSettings, parse};
use oomlint::fix::apply::fix_source;
use oomlint::fix::{Applicability, Edit, Fix};
use oomlint::rules::{RULES, Rule};
use std::fs;
use std::path::Path;

/// Only `rule` enabled; OOM100 judges the other rules' findings, so with it all run.
fn only(rule: &Rule) -> RuleSettings {
    RuleSettings {
        enabled: RULES.iter().map(|r| r.code == rule.code || rule.reads_suppressions()).collect(),
        ..RuleSettings::default()
    }
}

fn fix_all(source: &str, path: &Path, settings: &RuleSettings) -> oomlint::fix::apply::FixResult {
    fix_source(Engine::get(), source, path, settings, Applicability::Unsafe)
}

#[test]
fn every_flagged_case_is_fixed_as_snapshotted_and_fixing_converges() {
    for rule in RULES {
        let dir = repo().join("tests/cases").join(rule_dir(rule)).join("flagged");
        for case in python_files(&dir) {
            let source = fs::read_to_string(&case).unwrap();
            let result = fix_all(&source, &case, &only(rule));
            let name = format!("fix-{}-{}", rule.code, case.file_stem().unwrap().to_string_lossy());
            insta::assert_snapshot!(name, result.text);
            assert!(result.dropped.is_empty(), "{}: fixes dropped", case.display());
            let tree = parse(&result.text).unwrap();
            assert!(!tree.root_node().has_error(), "{}: fixed text does not parse", case.display());
            let again = fix_all(&result.text, &case, &only(rule));
            assert_eq!(again.text, result.text, "{}: a second --fix changes more", case.display());
            assert_eq!(again.applied, 0);
            // What remains has no fix to offer (a reference that cannot take one).
            assert!(result.remaining.iter().all(|d| d.fix.is_none()), "{}: {:#?}", case.display(), result.remaining);
            if result.applied == 0 {
                assert!(!result.remaining.is_empty());
            }
        }
    }
}

#[test]
fn fixed_bad_fixtures_lint_clean_and_compile() {
    for rule in RULES.iter().filter(|r| r.has_fixtures()) {
        let bad = repo().join("fixtures").join(rule_dir(rule)).join("bad.py");
        let source = fs::read_to_string(&bad).unwrap();
        let result = fix_all(&source, &bad, &only(rule));
        // A rule whose docs say it has no automatic fix must offer none.
        if rule.docs.contains("No automatic fix") {
            assert_eq!(result.applied, 0, "{}", rule.code);
            assert!(result.remaining.iter().all(|d| d.fix.is_none()), "{}", rule.code);
            continue;
        }
        assert!(result.applied > 0, "{}: nothing fixed", rule.code);
        assert!(result.remaining.is_empty(), "{}: {:#?}", rule.code, result.remaining);
        let dir = tempfile::tempdir().unwrap();
        let fixed = dir.path().join("fixed.py");
        fs::write(&fixed, &result.text).unwrap();
        let compiled = std::process::Command::new("python3").args(["-m", "py_compile"]).arg(&fixed).output().unwrap();
        assert!(compiled.status.success(), "{}: {}", rule.code, String::from_utf8_lossy(&compiled.stderr));
    }
}

fn broken_fix(checker: &mut Checker, found: &Match) {
    if let Some(node) = found.get("x") {
        let fix = Fix::safe("Break it", vec![Edit::insert(node.end_byte(), "(")]);
        checker.report(node, Severity::Info, "x".into(), String::new()).fix = Some(fix);
    }
}

#[test]
fn a_fix_that_breaks_the_syntax_is_dropped() {
    static RULE: Rule = Rule {
        code: "TST002",
        slug: "breaks",
        default_severity: Severity::Info,
        preview: false,
        summary: "",
        cost: oomlint::rules::Cost::Evidence(oomlint::rules::Evidence::GradientDifference),
        fix_title: "",
        docs: "",
        query: "((identifier) @x (#eq? @x \"victim\"))",
        could_match: |_| true,
        reads_project: false,
        check: oomlint::rules::Check::Query(broken_fix),
    };
    let engine = Engine::compile(&[&RULE]).unwrap();
    let settings = RuleSettings { enabled: vec![true], ..RuleSettings::default() };
    let source = "victim = 1\nprint(victim)\n";
    let result = fix_source(&engine, source, Path::new("t.py"), &settings, Applicability::Safe);
    assert_eq!(result.text, source);
    assert_eq!(result.applied, 0);
    assert_eq!(result.dropped.len(), 2);
}

#[test]
fn unsafe_fixes_need_the_flag() {
    let dir = repo().join("tests/cases/OOM001-loss-tensor-kept/flagged/eval_loop_append.py");
    let source = fs::read_to_string(&dir).unwrap();
    let safe = fix_source(Engine::get(), &source, &dir, &RuleSettings::default(), Applicability::Safe);
    assert_eq!(safe.text, source, "OOM001's fix is unsafe");
    assert!(safe.remaining.iter().any(|d| d.fix.as_ref().is_some_and(|f| f.applicability == Applicability::Unsafe)));
}

const AMP: &str = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n";
const FIXED_AMP: &str = "from torch.amp import autocast\n\nwith autocast(\"cuda\"):\n    pass\n";

fn temp_with(name: &str, bytes: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(name), bytes).unwrap();
    dir
}

#[test]
fn fix_writes_the_file_and_reports_what_it_did() {
    let dir = temp_with("amp.py", AMP.as_bytes());
    let output = oomlint(&["check", "--fix", "amp.py"], dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(fs::read_to_string(dir.path().join("amp.py")).unwrap(), FIXED_AMP);
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(out.contains("Fixed 1 problem.") && out.contains("No problems remain."), "{out}");
    let leftovers: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left behind: {leftovers:?}");
}

#[test]
fn fix_keeps_crlf_bom_final_newline_and_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let crlf = format!("\u{feff}{}", AMP.replace('\n', "\r\n").trim_end());
    let dir = temp_with("amp.py", crlf.as_bytes());
    let path = dir.path().join("amp.py");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let status = oomlint(&["check", "--fix", "amp.py"], dir.path()).status;
    assert_eq!(status.code(), Some(0));
    let expected = format!("\u{feff}{}", FIXED_AMP.replace('\n', "\r\n").trim_end());
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
}

#[test]
fn a_read_only_file_is_reported_and_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_with("amp.py", AMP.as_bytes());
    let path = dir.path().join("amp.py");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let output = oomlint(&["check", "--fix", "amp.py"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8(output.stderr).unwrap();
    assert!(err.contains("amp.py: cannot write the fixes") && err.contains("read-only"), "{err}");
    assert_eq!(fs::read_to_string(&path).unwrap(), AMP);
}

#[test]
fn diff_prints_and_writes_nothing() {
    let dir = temp_with("amp.py", AMP.as_bytes());
    let output = oomlint(&["check", "--diff", "amp.py"], dir.path());
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout).unwrap();
    insta::assert_snapshot!("diff-amp", out);
    assert_eq!(fs::read_to_string(dir.path().join("amp.py")).unwrap(), AMP);
    let clean = temp_with("ok.py", b"import torch\n");
    assert_eq!(oomlint(&["check", "--diff", "ok.py"], clean.path()).status.code(), Some(0));
}

#[test]
fn fix_on_standard_input_prints_the_fixed_text() {
    let dir = tempfile::tempdir().unwrap();
    let output = common::oomlint_with_stdin(&["check", "--fix", "-"], dir.path(), AMP.as_bytes());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), FIXED_AMP);
    assert!(String::from_utf8(output.stderr).unwrap().contains("Fixed 1 problem."));
}

#[test]
fn unsafe_fixes_are_reported_and_applied_only_on_request() {
    let leaky = "import torch\n\n\ndef collect(model, loader, criterion):\n\tlosses = []\n\tfor x, y in loader:\n\t\tloss = criterion(model(x), y)  # é\n\t\tlosses.append(loss)\n\treturn losses\n";
    let dir = temp_with("train.py", leaky.as_bytes());
    let output = oomlint(&["check", "--fix", "train.py"], dir.path());
    assert_eq!(output.status.code(), Some(1));
    let out = String::from_utf8(output.stdout).unwrap();
    assert!(out.contains("1 problem has an unsafe fix (OOM001)"), "{out}");
    assert_eq!(fs::read_to_string(dir.path().join("train.py")).unwrap(), leaky);
    let output = oomlint(&["check", "--fix", "--unsafe-fixes", "train.py"], dir.path());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        fs::read_to_string(dir.path().join("train.py")).unwrap(),
        leaky.replace("append(loss)", "append(loss.item())")
    );
}

#[test]
fn wrapping_a_loop_keeps_multiline_strings_and_tab_indentation() {
    let source = "import torch\n\nmodel.eval()\nfor x in val_loader:\n\tprint(model(x), '''a\nb''')\n\n\tdone = 1\n";
    let path = Path::new("t.py");
    let result = fix_all(source, path, &RuleSettings::default());
    assert_eq!(
        result.text,
        "import torch\n\nmodel.eval()\nwith torch.no_grad():\n\tfor x in val_loader:\n\t\tprint(model(x), '''a\nb''')\n\n\t\tdone = 1\n"
    );
}

#[test]
fn an_import_is_added_once_for_all_fixes() {
    let source = "\"\"\"Doc.\"\"\"\nfrom torch.cuda import amp\n\nwith amp.autocast():\n    s = amp.GradScaler()\n";
    let result = fix_all(source, Path::new("t.py"), &RuleSettings::default());
    assert_eq!(
        result.text,
        "\"\"\"Doc.\"\"\"\nfrom torch.cuda import amp\nimport torch\n\nwith torch.amp.autocast(\"cuda\"):\n    s = torch.amp.GradScaler(\"cuda\")\n"
    );
}

#[test]
fn fixes_follow_quotes_and_survive_non_ascii_and_syntax_errors_elsewhere() {
    let source = "from torch.cuda.amp import GradScaler\nnom = 'x'\nmesure_données = GradScaler(init_scale=2.0)  # échelle\n\ndef broken(:\n    pass\n";
    let result = fix_all(source, Path::new("t.py"), &RuleSettings::default());
    assert_eq!(
        result.text,
        "from torch.amp import GradScaler\nnom = 'x'\nmesure_données = GradScaler('cuda', init_scale=2.0)  # échelle\n\ndef broken(:\n    pass\n"
    );
    assert_eq!(result.applied, 1);
    assert!(result.dropped.is_empty());
}
