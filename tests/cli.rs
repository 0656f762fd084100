//! The `oomlint` binary end to end: output formats, exit codes, configuration,
//! suppression comments, file discovery and bad input.

mod common;

use common::oomlint;
use std::fs;
use std::path::Path;

const LEAKY: &str = "import torch\n\n\ndef collect(model, loader, criterion):\n    losses = []\n    for x, y in loader:\n        loss = criterion(model(x), y)\n        losses.append(loss)\n    return losses\n";
const AMP: &str = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n";
const CLEAN: &str = "import torch\n\nprint(torch.ones(2).sum().item())\n";

fn project(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    dir
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 stderr")
}

fn run(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let output = oomlint(args, cwd);
    (output.status.code().expect("exit code"), stdout(&output), stderr(&output))
}

#[test]
fn output_formats_match_snapshots() {
    let dir = project(&[("train.py", LEAKY.as_bytes()), ("amp.py", AMP.as_bytes()), ("clean.py", CLEAN.as_bytes())]);
    for format in ["full", "concise", "json", "github"] {
        let (code, out, _) = run(&["check", "--output-format", format], dir.path());
        assert_eq!(code, 1, "{format}");
        insta::assert_snapshot!(format!("format-{format}"), out);
    }
}

/// The SARIF log's findings and rule list (the full document is validated against the
/// SARIF 2.1.0 schema by tests/sarif_schema.py).
#[test]
fn sarif_output_matches_its_snapshot() {
    let dir = project(&[("train.py", LEAKY.as_bytes()), ("amp.py", AMP.as_bytes()), ("clean.py", CLEAN.as_bytes())]);
    let (code, out, _) = run(&["check", "--output-format", "sarif"], dir.path());
    assert_eq!(code, 1);
    let log: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    let root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"].as_str().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(root, format!("file://{}/", cwd.display()));
    let rules: Vec<_> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert!(r["help"]["markdown"].as_str().unwrap().contains("## Fix safety"));
            let cost = r["properties"]["measuredCost"].as_str().unwrap();
            // OOM006 and OOM009 need a GPU to be measured: until one is recorded, they say so.
            let gpu_only =
                ["OOM006", "OOM009"].iter().any(|c| r["id"] == *c) && cost.starts_with("not measured here yet");
            assert!(cost.contains("(measured: ") || r["id"] == "OOM100" || gpu_only, "{cost}");
            format!("{} {} {}", r["id"], r["name"], r["defaultConfiguration"]["level"])
        })
        .collect();
    insta::assert_snapshot!("format-sarif-rules", rules.join("\n"));
    insta::assert_json_snapshot!("format-sarif-results", run["results"]);
}

#[test]
fn json_output_follows_the_documented_schema() {
    let dir = project(&[("train.py", LEAKY.as_bytes())]);
    let (_, out, _) = run(&["check", "--output-format", "json"], dir.path());
    let findings: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let finding = &findings.as_array().expect("an array")[0];
    for key in ["code", "name", "severity", "message", "help", "filename", "location", "end_location", "fix"] {
        assert!(finding.get(key).is_some(), "missing {key}");
    }
    assert_eq!(finding["code"], "OOM001");
    assert_eq!(finding["location"]["row"], 8);
    assert_eq!(finding["fix"]["applicability"], "unsafe");
    assert_eq!(finding["fix"]["edits"][0]["content"], ".item()");
    assert_eq!(finding["fix"]["edits"][0]["location"]["column"], 27);
    let schema = fs::read_to_string(common::repo().join("docs/json-output.md")).unwrap();
    for key in finding.as_object().unwrap().keys() {
        assert!(schema.contains(&format!("`{key}`")), "docs/json-output.md does not document `{key}`");
    }
}

#[test]
fn exit_codes() {
    let dir = project(&[("train.py", LEAKY.as_bytes()), ("clean.py", CLEAN.as_bytes())]);
    assert_eq!(run(&["check", "clean.py"], dir.path()).0, 0);
    assert_eq!(run(&["check", "train.py"], dir.path()).0, 1);
    assert_eq!(run(&["check", "--exit-zero", "train.py"], dir.path()).0, 0);
    let (code, _, err) = run(&["check", "--select", "OOM999"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("unknown rule code `OOM999`"), "{err}");
    assert_eq!(run(&["check", "--output-format", "yaml"], dir.path()).0, 2);
    let (code, _, err) = run(&["check", "missing.py"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("missing.py: no such file or directory"), "{err}");
    let (code, out, _) = run(&["check"], dir.path());
    assert_eq!(code, 1, "the default path is the current directory");
    assert!(out.contains("train.py:8:9"), "{out}");
}

#[test]
fn select_and_ignore_on_the_command_line() {
    let dir = project(&[("train.py", LEAKY.as_bytes()), ("amp.py", AMP.as_bytes())]);
    let (_, out, _) = run(&["check", "--output-format", "concise", "--select", "OOM003"], dir.path());
    assert!(out.contains("OOM003") && !out.contains("OOM001"), "{out}");
    let (_, out, _) = run(&["check", "--output-format", "concise", "--ignore", "OOM003,OOM002"], dir.path());
    assert!(!out.contains("OOM003") && out.contains("OOM001"), "{out}");
    let (code, _, _) = run(&["check", "--select", "OOM00", "--ignore", "OOM"], dir.path());
    assert_eq!(code, 0, "prefixes select and ignore groups of rules");
}

#[test]
fn configuration_from_pyproject_and_oomlint_toml() {
    let pyproject = "[project]\nname = \"x\"\n\n[tool.oomlint]\nignore = [\"OOM003\"]\nseverity = { OOM001 = \"info\" }\nexclude = [\"legacy\"]\n\n[tool.oomlint.per-file-ignores]\n\"scripts/*.py\" = [\"OOM001\"]\n";
    let dir = project(&[
        ("pyproject.toml", pyproject.as_bytes()),
        ("train.py", LEAKY.as_bytes()),
        ("amp.py", AMP.as_bytes()),
        ("legacy/old.py", LEAKY.as_bytes()),
        ("scripts/run.py", LEAKY.as_bytes()),
        ("sub/oomlint.toml", b"select = [\"OOM003\"]\n"),
        ("sub/amp.py", AMP.as_bytes()),
        ("sub/train.py", LEAKY.as_bytes()),
    ]);
    let (code, out, err) = run(&["check", "--output-format", "concise"], dir.path());
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("train.py:8:9: info[OOM001]")), "severity override: {out}");
    assert!(!out.contains("OOM003 ") && !lines.iter().any(|l| l.starts_with("amp.py")), "ignore: {out}");
    assert!(!out.contains("legacy"), "exclude: {out}");
    assert!(!out.contains("scripts"), "per-file-ignores: {out}");
    assert!(out.contains("sub/amp.py:3:6: warning[OOM003]"), "nearest config wins: {out}");
    assert!(!out.contains("sub/train.py"), "nearest config selects only OOM003: {out}");
    let (_, out, _) = run(&["check", "--output-format", "concise", "legacy/old.py"], dir.path());
    assert!(out.contains("legacy/old.py"), "an explicitly named file is linted: {out}");
}

#[test]
fn broken_configuration_names_the_key_and_the_file() {
    let dir = project(&[("pyproject.toml", b"[tool.oomlint]\nselct = [\"OOM001\"]\n"), ("train.py", LEAKY.as_bytes())]);
    let (code, _, err) = run(&["check"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("pyproject.toml") && err.contains("selct"), "{err}");

    let dir = project(&[("oomlint.toml", b"ignore = [\"OOM042\"]\n"), ("train.py", LEAKY.as_bytes())]);
    let (code, _, err) = run(&["check"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("oomlint.toml") && err.contains("ignore") && err.contains("OOM042"), "{err}");

    let dir = project(&[("oomlint.toml", b"severity = { OOM001 = \"fatal\" }\n"), ("train.py", LEAKY.as_bytes())]);
    let (code, _, err) = run(&["check"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("severity.OOM001") && err.contains("fatal"), "{err}");

    let dir = project(&[("oomlint.toml", b"select = [\n"), ("train.py", LEAKY.as_bytes())]);
    let (code, _, err) = run(&["check"], dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("oomlint.toml"), "{err}");
}

#[test]
fn a_broken_configuration_does_not_stop_other_directories() {
    let dir = project(&[
        ("good/train.py", LEAKY.as_bytes()),
        ("bad/oomlint.toml", b"nonsense = 1\n"),
        ("bad/train.py", LEAKY.as_bytes()),
    ]);
    let (code, out, err) = run(&["check", "--output-format", "concise"], dir.path());
    assert_eq!(code, 2);
    assert!(out.contains("good/train.py:8:9"), "{out}");
    assert!(err.contains("bad/oomlint.toml") && err.contains("nonsense"), "{err}");
}

#[test]
fn suppression_comments() {
    let source = "import torch\n\n\ndef validate(model, val_loader, criterion):\n    a, b, c, d, e = [], [], [], [], []\n    for x, y in val_loader:\n        loss = criterion(model(x), y)  # oomlint: ignore[OOM002]\n        a.append(loss)  # oomlint: ignore[OOM001]\n        b.append(loss)  # oomlint: ignore\n        c.append(loss)  # noqa: OOM001\n        d.append(loss)  # oomlint: ignore[OOM003]\n        e.append(loss); s = \"# oomlint: ignore\"\n";
    let dir = project(&[
        ("train.py", source.as_bytes()),
        ("skipped.py", format!("# oomlint: ignore-file\n{LEAKY}").as_bytes()),
    ]);
    let (_, out, _) = run(&["check", "--output-format", "concise"], dir.path());
    let rows: Vec<(&str, &str)> = out
        .lines()
        .filter(|l| l.contains("[OOM"))
        .map(|l| (l.split(':').nth(1).unwrap(), &l[l.find("[OOM").unwrap() + 1..][..6]))
        .collect();
    assert_eq!(
        rows,
        [("11", "OOM001"), ("11", "OOM100"), ("12", "OOM001")],
        "only the wrong-code and the in-string suppressions fail, and the wrong code is unused: {out}"
    );
}

#[test]
fn unused_suppressions_of_rules_that_did_not_run_are_left_alone() {
    let source = "import torch\n\n\ndef f(values):\n    return sum(values)  # oomlint: ignore[OOM001, OOM999]\n";
    let dir = project(&[("train.py", source.as_bytes())]);
    let codes = |args: &[&str]| {
        let (_, out, _) = run(args, dir.path());
        out.lines()
            .filter(|l| l.contains("[OOM100]"))
            .map(|l| l.rsplit("] ").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let concise = ["check", "--output-format", "concise"];
    assert_eq!(codes(&concise), ["Unused suppression: OOM001 (nothing reported on this line), OOM999 (no such rule)"]);
    // With OOM001 off, whether its suppression is needed cannot be told.
    for only in [&["--select", "OOM100"][..], &["--ignore", "OOM001"][..]] {
        assert_eq!(codes(&[&concise[..], only].concat()), ["Unused suppression: OOM999 (no such rule)"], "{only:?}");
    }
    assert!(codes(&[&concise[..], &["--ignore", "OOM100"]].concat()).is_empty());
}

#[test]
fn standard_input() {
    let dir = project(&[("oomlint.toml", b"severity = { OOM003 = \"error\" }\n")]);
    for args in [
        &["check", "-", "--output-format", "concise"][..],
        &["check", "--stdin-filename", "nb/amp.py", "--output-format", "concise"],
    ] {
        let output = common::oomlint_with_stdin(args, dir.path(), AMP.as_bytes());
        let out = stdout(&output);
        assert_eq!(output.status.code(), Some(1));
        let name = if args[1] == "-" { "-" } else { "nb/amp.py" };
        assert!(out.contains(&format!("{name}:3:6: error[OOM003]")), "{out}");
    }
}

#[test]
fn bad_input_is_reported_and_the_rest_is_linted() {
    let mut latin1 = b"# caf\xe9\n".to_vec();
    latin1.extend_from_slice(LEAKY.as_bytes());
    let broken = format!("def broken(:\n    pass\n\n{LEAKY}");
    let dir = project(&[
        ("latin1.py", &latin1),
        ("binary.py", b"\x00\x01\x02torch"),
        ("broken.py", broken.as_bytes()),
        ("train.py", LEAKY.as_bytes()),
        ("bom.py", format!("\u{feff}{AMP}").as_bytes()),
        ("crlf.py", AMP.replace('\n', "\r\n").as_bytes()),
    ]);
    std::os::unix::fs::symlink("loop.py", dir.path().join("loop.py")).unwrap();
    let (code, out, err) = run(&["check", "--output-format", "concise", ".", "loop.py"], dir.path());
    assert_eq!(code, 2, "I/O problems give exit 2");
    assert!(err.contains("latin1.py: not valid UTF-8"), "{err}");
    assert!(err.contains("binary.py: binary file"), "{err}");
    assert!(err.contains("loop.py: cannot read"), "{err}");
    assert!(err.contains("broken.py:1:"), "syntax errors are located: {err}");
    assert!(out.contains("train.py:8:9"), "{out}");
    assert!(out.contains("broken.py:11:9"), "code after a syntax error is still linted: {out}");
    assert!(out.contains("bom.py:3:6:"), "a BOM does not shift columns: {out}");
    assert!(out.contains("crlf.py:3:6:"), "CRLF line endings: {out}");
}

#[test]
fn columns_count_characters_on_non_ascii_lines() {
    let source = "from torch.cuda.amp import autocast\n\nwith autocast():  # é\n    x = 'ünïcödé'; y = autocast()\n";
    let dir = project(&[("u.py", source.as_bytes())]);
    let (_, out, _) = run(&["check", "--output-format", "concise"], dir.path());
    assert!(out.contains("u.py:4:24:"), "{out}");
}

#[test]
fn gitignore_and_hidden_directories_are_respected() {
    let dir = project(&[
        (".gitignore", b"generated/\n"),
        ("generated/train.py", LEAKY.as_bytes()),
        (".venv/lib/train.py", LEAKY.as_bytes()),
        ("venv/lib/train.py", LEAKY.as_bytes()),
        ("src/train.py", LEAKY.as_bytes()),
    ]);
    let (_, out, _) = run(&["check", "--output-format", "concise"], dir.path());
    let files: Vec<&str> = out.lines().filter(|l| l.contains("[OOM")).map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(files, ["src/train.py"], "{out}");
}

/// The files `check` lints in `dir` with `home` as the home directory and `xdg` (if any) as
/// `XDG_CONFIG_HOME`: git's global excludes file is found from there.
fn files_linted_with_home(dir: &Path, home: &Path, xdg: Option<&Path>) -> Vec<String> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_oomlint"));
    command
        .args(["check", "--preview", "--output-format", "concise"])
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("GIT_CONFIG_GLOBAL")
        .env_remove("XDG_CONFIG_HOME")
        // The host's own system configuration stays out of it.
        .env("GIT_CONFIG_SYSTEM", home.join("no-system-config"));
    if let Some(xdg) = xdg {
        command.env("XDG_CONFIG_HOME", xdg);
    }
    let out = stdout(&command.output().expect("run oomlint"));
    let mut files: Vec<String> =
        out.lines().filter(|l| l.contains("[OOM")).map(|l| l.split(':').next().unwrap().to_string()).collect();
    files.dedup();
    files
}

#[test]
fn gits_global_excludes_file_is_respected() {
    let dir = project(&[("scratch_1.py", LEAKY.as_bytes()), ("train.py", LEAKY.as_bytes())]);
    // `core.excludesFile`, in any case, with a path from the home directory.
    let home = project(&[
        (".gitconfig", b"[user]\n\tname = someone\n[core]\n\texcludesFile = ~/ignored-everywhere\n"),
        ("ignored-everywhere", b"scratch_*.py\n"),
    ]);
    assert_eq!(files_linted_with_home(dir.path(), home.path(), None), ["train.py"]);
    // No setting: git's default place under XDG_CONFIG_HOME.
    let home = project(&[(".gitconfig", b"[user]\n\tname = someone\n"), ("xdg/git/ignore", b"scratch_*.py\n")]);
    assert_eq!(files_linted_with_home(dir.path(), home.path(), Some(&home.path().join("xdg"))), ["train.py"]);
    // ... or under ~/.config when XDG_CONFIG_HOME is unset.
    let home = project(&[(".config/git/ignore", b"scratch_*.py\n")]);
    assert_eq!(files_linted_with_home(dir.path(), home.path(), None), ["train.py"]);
    // A setting that names a file elsewhere replaces the default one.
    let home = project(&[
        (".gitconfig", b"[core]\nexcludesfile = \"ignores/global\"\n"),
        (".config/git/ignore", b"scratch_*.py\n"),
    ]);
    let elsewhere = home.path().join("ignores/global");
    fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    fs::write(home.path().join(".gitconfig"), format!("[core]\nexcludesfile = \"{}\"\n", elsewhere.display())).unwrap();
    fs::write(&elsewhere, "train.py\n").unwrap();
    assert_eq!(files_linted_with_home(dir.path(), home.path(), None), ["scratch_1.py"]);
    // Neither: both are linted.
    let home = project(&[(".gitconfig", b"[user]\n\tname = someone\n")]);
    assert_eq!(files_linted_with_home(dir.path(), home.path(), None), ["scratch_1.py", "train.py"]);
}

/// A large file checked alone is parsed in pieces and linted in parts on all the cores;
/// checked beside another, on one core: the findings are the same.
#[test]
fn a_large_file_checked_alone_has_the_findings_it_has_beside_others() {
    let mut large = String::from("#!/usr/bin/env python\n# Copyright the authors.\n\nimport torch\n");
    let mut function = 0;
    while large.len() < 160 * 1024 {
        large.push_str(
            &LEAKY.replacen("import torch\n", "", 1).replace("def collect(", &format!("def collect_{function}(")),
        );
        function += 1;
    }
    let dir = project(&[("large.py", large.as_bytes()), ("small.py", LEAKY.as_bytes())]);
    let findings = |paths: &[&str]| {
        let mut args = vec!["check", "--output-format", "concise"];
        args.extend(paths);
        let (_, out, _) = run(&args, dir.path());
        out.lines().filter(|l| l.starts_with("large.py:")).map(str::to_string).collect::<Vec<_>>()
    };
    let alone = findings(&["large.py"]);
    assert_eq!(alone.len(), function, "one finding per function");
    assert_eq!(alone, findings(&["large.py", "small.py"]));
}

#[test]
fn colour_follows_the_terminal_and_no_color() {
    let dir = project(&[("train.py", LEAKY.as_bytes())]);
    let (_, plain, _) = run(&["check"], dir.path());
    assert!(!plain.contains('\x1b'), "piped output is plain");
    let (_, coloured, _) = run(&["check", "--color", "always"], dir.path());
    assert!(coloured.contains("\x1b[1;31m"), "{coloured}");
}

#[test]
fn rules_and_rule_docs() {
    let dir = project(&[]);
    let (code, out, _) = run(&["rules"], dir.path());
    assert_eq!(code, 0);
    insta::assert_snapshot!("rules-list", out);
    let (_, out, _) = run(&["rules", "--output-format", "json"], dir.path());
    let rules: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rules.as_array().unwrap().len(), oomlint::rules::RULES.len());
    let (code, out, _) = run(&["rule", "OOM004"], dir.path());
    assert_eq!(code, 0);
    assert!(out.starts_with("# OOM004 checkpoint-late-binding") && out.contains("## Why is this bad?"), "{out}");
    assert_eq!(run(&["rule", "loss-tensor-kept"], dir.path()).0, 0);
    assert_eq!(run(&["rule", "OOM999"], dir.path()).0, 2);
}

/// Each rule's bad fixture, linted as a user would: preview rules only with preview on (the
/// flag, `preview = true` in oomlint.toml or pyproject.toml), and naming one in `--select`
/// is not enough without it (as in ruff), which a warning says; default rules always.
#[test]
fn preview_rules_run_only_with_preview_on() {
    use common::oomlint_as_installed;
    for rule in oomlint::rules::RULES.iter().filter(|r| r.has_fixtures()) {
        let bad = fs::read(common::repo().join("fixtures").join(common::rule_dir(rule)).join("bad.py")).unwrap();
        let plain = project(&[("bad.py", &bad)]);
        let with_toml = project(&[("bad.py", &bad), ("oomlint.toml", b"preview = true\n")]);
        let with_pyproject = project(&[("bad.py", &bad), ("pyproject.toml", b"[tool.oomlint]\npreview = true\n")]);
        let codes = |args: &[&str], dir: &Path| {
            let mut all = vec!["check", "--output-format", "json", "--exit-zero"];
            all.extend_from_slice(args);
            let output = oomlint_as_installed(&all, dir, b"");
            let found: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
            let hit = found.as_array().unwrap().iter().any(|f| f["code"] == rule.code);
            (hit, stderr(&output))
        };
        let select = ["--select", rule.code];
        let on_by_default = !rule.preview;
        assert_eq!(codes(&[], plain.path()).0, on_by_default, "{}: preview is {}", rule.code, rule.preview);
        assert!(codes(&["--preview"], plain.path()).0, "{} with --preview", rule.code);
        assert!(codes(&[], with_toml.path()).0, "{} with preview = true in oomlint.toml", rule.code);
        assert!(codes(&[], with_pyproject.path()).0, "{} with preview = true in pyproject.toml", rule.code);
        assert_eq!(codes(&["--no-preview"], with_toml.path()).0, on_by_default, "{}: --no-preview wins", rule.code);
        let (hit, err) = codes(&select, plain.path());
        assert_eq!(hit, on_by_default, "{}: selected by its code", rule.code);
        assert_eq!(err.contains(&format!("`--select {}` has no effect", rule.code)), rule.preview, "{err}");
        let (hit, err) = codes(&select, with_toml.path());
        assert!(hit && !err.contains("has no effect"), "{}: selected with preview on: {err}", rule.code);
        assert!(codes(&["--preview", "--select", rule.code], plain.path()).0);
        let config = format!("select = [\"{}\"]\n", rule.code);
        let selected_in_toml = project(&[("bad.py", &bad), ("oomlint.toml", config.as_bytes())]);
        let (hit, err) = codes(&[], selected_in_toml.path());
        assert_eq!(hit, on_by_default, "{}: selected in oomlint.toml", rule.code);
        assert_eq!(err.contains(&format!("names {}, which has no effect", rule.code)), rule.preview, "{err}");
    }
}

#[test]
fn rules_say_which_are_preview() {
    let dir = project(&[]);
    let (_, out, _) = run(&["rules", "--output-format", "json"], dir.path());
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (_, text, _) = run(&["rules"], dir.path());
    let readme = fs::read_to_string(common::repo().join("README.md")).unwrap();
    for (rule, entry) in oomlint::rules::RULES.iter().zip(listed.as_array().unwrap()) {
        assert_eq!(entry["preview"], rule.preview, "{}", rule.code);
        let line = text.lines().find(|l| l.starts_with(rule.code)).unwrap();
        assert_eq!(line.contains(" preview "), rule.preview, "{line}");
        let row = readme.lines().find(|l| l.starts_with(&format!("| [{}]", rule.code))).expect("a README row");
        assert_eq!(row.contains("| preview"), rule.preview, "README rules table: {row}");
        let (_, doc, _) = run(&["rule", rule.code], dir.path());
        assert_eq!(doc.contains("Preview rule"), rule.preview, "{}", rule.code);
    }
}
