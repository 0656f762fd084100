//! Helpers shared by the integration tests.

#![allow(dead_code)]

use oomlint::diagnostic::Diagnostic;
use oomlint::engine::{Engine, RuleSettings};
use oomlint::rules::{RULES, Rule};
use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Lint `path`'s text with only `rule` enabled; a rule about suppression comments
/// (OOM100) needs the others' findings, so for it all run and only its own are kept.
pub fn lint_with_only(rule: &Rule, path: &Path) -> (String, Vec<Diagnostic>) {
    let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let settings = RuleSettings {
        enabled: RULES.iter().map(|r| r.code == rule.code || rule.reads_suppressions()).collect(),
        ..RuleSettings::default()
    };
    let mut diagnostics = Engine::get().lint(&source, path, &settings).diagnostics;
    diagnostics.retain(|d| d.code == rule.code);
    (source, diagnostics)
}

/// Lint text with every rule enabled.
pub fn lint_all(source: &str, path: &str) -> Vec<Diagnostic> {
    Engine::get().lint(source, Path::new(path), &RuleSettings::default()).diagnostics
}

/// The `.py` files directly in `dir`, sorted.
pub fn python_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

pub fn rule_dir(rule: &Rule) -> String {
    format!("{}-{}", rule.code, rule.slug)
}

/// Run the built `oomlint` binary. `check` runs the preview rules too (the tests are about
/// every rule, whichever the corpus keeps in preview) unless the arguments say
/// `--no-preview`; `oomlint_as_installed` runs it with exactly the arguments given.
pub fn oomlint(args: &[&str], cwd: &Path) -> std::process::Output {
    oomlint_with_stdin(args, cwd, b"")
}

/// Run the built `oomlint` binary with `input` on its standard input (preview as `oomlint`).
pub fn oomlint_with_stdin(args: &[&str], cwd: &Path, input: &[u8]) -> std::process::Output {
    let mut args = args.to_vec();
    if args.first() == Some(&"check") && !args.iter().any(|a| a.ends_with("preview")) {
        args.insert(1, "--preview");
    }
    oomlint_as_installed(&args, cwd, input)
}

/// Run the built `oomlint` binary with exactly these arguments.
pub fn oomlint_as_installed(args: &[&str], cwd: &Path, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_oomlint"))
        .args(args)
        .current_dir(cwd)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run oomlint");
    child.stdin.take().expect("piped stdin").write_all(input).expect("write stdin");
    child.wait_with_output().expect("oomlint finishes")
}
