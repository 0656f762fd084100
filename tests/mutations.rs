//! Random mutations of the fixtures and rule cases, checked through the command line:
//! lines inserted, deleted, duplicated and re-indented, line endings swapped (`\r\n`, a
//! lone `\r`, `\r\r\n`, mixed), non-ASCII text inserted, files truncated. For every
//! mutated file:
//! - no panic, and no refusal of a file that is valid UTF-8 text;
//! - the JSON output is valid, and every location in it lies inside the text;
//! - when Python's `ast` parses the input, it parses what `--fix` writes;
//! - `--fix` ends added lines the way the file already ends its lines, and a second
//!   `--fix` changes nothing;
//! - `--diff` applies with `patch` and gives exactly what `--fix` writes.
//!
//! Every fifth mutated file is also cut into the code cells of a notebook, with shell
//! lines (one continued with a backslash) and line magics among them; the same checks
//! hold for it, but for `ast`, which cannot read IPython syntax, and with the fixed
//! notebook valid JSON with as many cells.
//!
//! Each round mutates every source file once and checks them all with one run of each
//! command. `OOMLINT_MUTATION_SEED=N` starts from another seed and
//! `OOMLINT_MUTATION_ROUNDS=N` runs more rounds, for longer runs than the test suite's.

mod common;

use common::oomlint;
use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const DEFAULT_ROUNDS: u64 = 2;

/// xorshift64*: small, seeded, the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A line and its ending (`""` for a last line without one).
#[derive(Clone)]
struct Line {
    text: String,
    ending: &'static str,
}

/// Endings a mutation gives lines (`\r\r\n` reads as two, the first empty).
const ENDINGS: [&str; 4] = ["\n", "\r\n", "\r", "\r\r\n"];

/// Splits at `\r\n`, `\r` and `\n`, as Python does (`\r\r\n` ends two lines).
fn split_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let Some(at) = rest.find(['\r', '\n']) else {
            lines.push(Line { text: rest.to_string(), ending: "" });
            break;
        };
        let ending = if rest[at..].starts_with("\r\n") {
            "\r\n"
        } else if rest[at..].starts_with('\r') {
            "\r"
        } else {
            "\n"
        };
        lines.push(Line { text: rest[..at].to_string(), ending });
        rest = &rest[at + ending.len()..];
    }
    lines
}

fn join(lines: &[Line]) -> String {
    lines.iter().flat_map(|l| [l.text.as_str(), l.ending]).collect()
}

/// Lines worth inserting: statements the rules look at, suppressions, blocks that open
/// and close, and text outside ASCII.
const SNIPPETS: [&str; 16] = [
    "import torch",
    "from torch.cuda.amp import autocast, GradScaler",
    "scaler = torch.cuda.amp.GradScaler()",
    "state = torch.load('model.pt')",
    "total_loss += loss",
    "    losses.append(loss)",
    "model.eval()",
    "x = 1  # oomlint: ignore[OOM001]",
    "# noqa: OOM002",
    "for batch in loader:",
    "with torch.no_grad():",
    "def helper(x):",
    "    return x, *(rest)",
    "émission = 'données 🎉'  # ünïcode",
    "\t",
    "",
];

const INSERTED_TEXT: [&str; 8] = ["é", "🎉", "日本語", "\u{200b}", "\u{feff}", "ß", "(", "'"];

fn mutate(text: &str, rng: &mut Rng, donors: &[String]) -> String {
    let mut lines = split_lines(text);
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(lines.len() + 1);
        let ending = lines.first().map_or("\n", |l| if l.ending.is_empty() { "\n" } else { l.ending });
        match rng.below(9) {
            0 => {
                let text = rng.pick(&SNIPPETS).to_string();
                lines.insert(at, Line { text, ending });
            }
            1 => {
                // A line of another file, with its indentation.
                let donor = split_lines(&donors[rng.below(donors.len())]);
                if let Some(line) = donor.get(rng.below(donor.len())) {
                    lines.insert(at, Line { text: line.text.clone(), ending });
                }
            }
            2 if at < lines.len() => {
                lines.remove(at);
            }
            3 if at < lines.len() => {
                let copy = lines[at].clone();
                lines.insert(at, copy);
            }
            4 => {
                let all = *rng.pick(&ENDINGS);
                lines.iter_mut().filter(|l| !l.ending.is_empty()).for_each(|l| l.ending = all);
            }
            5 => {
                for line in lines.iter_mut().filter(|l| !l.ending.is_empty()) {
                    line.ending = ENDINGS[rng.below(ENDINGS.len())];
                }
            }
            6 if at < lines.len() => {
                let line = &mut lines[at].text;
                let boundaries: Vec<usize> = line.char_indices().map(|(i, _)| i).chain([line.len()]).collect();
                let cut = *rng.pick(&boundaries);
                let inserted = *rng.pick(&INSERTED_TEXT);
                line.insert_str(cut, inserted);
            }
            7 => {
                // Truncate at a character boundary, possibly inside a line.
                let joined = join(&lines);
                let boundaries: Vec<usize> = joined.char_indices().map(|(i, _)| i).collect();
                let cut = boundaries.get(rng.below(boundaries.len())).copied().unwrap_or(0);
                lines = split_lines(&joined[..cut]);
            }
            _ => {
                // Indent or dedent a run of lines.
                let end = (at + 1 + rng.below(6)).min(lines.len());
                let indent = *rng.pick(&["    ", "  ", "\t"]);
                let dedent = rng.below(2) == 0;
                for line in lines.iter_mut().take(end).skip(at) {
                    if dedent {
                        line.text = line.text.strip_prefix(indent).unwrap_or(&line.text).to_string();
                    } else {
                        line.text.insert_str(0, indent);
                    }
                }
            }
        }
    }
    join(&lines)
}

/// The `.py` files under `fixtures/` and `tests/cases/`, sorted.
fn sources() -> Vec<String> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "py") {
                found.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(&common::repo().join("fixtures"), &mut paths);
    walk(&common::repo().join("tests/cases"), &mut paths);
    paths.sort();
    assert!(paths.len() > 100, "the fixtures and cases are found");
    paths.into_iter().map(|p| fs::read_to_string(p).unwrap()).collect()
}

/// Which of `files` Python's `ast` parses: one Python process for all of them.
fn python_parses(files: &[PathBuf]) -> Vec<bool> {
    const SCRIPT: &str = "import ast, sys, warnings\n\
        warnings.simplefilter('ignore')\n\
        for path in sys.stdin.read().splitlines():\n\
        \x20   try:\n\
        \x20       ast.parse(open(path, 'rb').read())\n\
        \x20       print(1)\n\
        \x20   except (SyntaxError, ValueError, RecursionError, MemoryError):\n\
        \x20       print(0)\n";
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let list: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    child.stdin.take().unwrap().write_all(list.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python3 checks the files");
    let parsed: Vec<bool> = String::from_utf8(output.stdout).unwrap().lines().map(|l| l == "1").collect();
    assert_eq!(parsed.len(), files.len());
    parsed
}

/// Runs `oomlint` on `dir`; fails on a panic or a refused input.
fn check(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["check"];
    all.extend(args);
    all.push(".");
    let output = oomlint(&all, dir);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(0 | 1)) && !err.contains("panicked"),
        "oomlint {all:?} in {} exits {:?}:\n{err}",
        dir.display(),
        output.status.code()
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn named(i: usize) -> String {
    format!("m{i:04}.py")
}

fn notebook_named(i: usize) -> String {
    format!("n{i:04}.ipynb")
}

/// `text`'s lines cut into code cells (ending with `\n`), with IPython lines here and there.
fn cells(text: &str, rng: &mut Rng) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cell = String::new();
    for line in split_lines(text) {
        match rng.below(40) {
            0 => cell.push_str("!pip install torch \\\n    torchvision\n"),
            1 => cell.push_str("%matplotlib inline\n"),
            _ => {}
        }
        // Cells end their lines with `\n`, as Jupyter writes them.
        cell.push_str(&line.text);
        cell.push_str(if line.ending.is_empty() { "" } else { "\n" });
        if rng.below(8) == 0 {
            cells.push(std::mem::take(&mut cell));
        }
    }
    cells.push(cell);
    cells
}

/// A notebook of code cells, its sources split after each `\n` as Jupyter writes them.
fn notebook(cells: &[String]) -> String {
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .map(|source| {
            let lines: Vec<&str> = source.split_inclusive('\n').collect();
            serde_json::json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": lines})
        })
        .collect();
    let notebook = serde_json::json!({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
    serde_json::to_string_pretty(&notebook).unwrap() + "\n"
}

/// The code cells' sources of a notebook written by `--fix`.
fn cell_sources(notebook: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(notebook).unwrap_or_else(|e| panic!("{e}: {notebook}"));
    let cells = value["cells"].as_array().expect("cells");
    cells
        .iter()
        .map(|cell| match &cell["source"] {
            serde_json::Value::String(source) => source.clone(),
            lines => lines.as_array().expect("source lines").iter().map(|l| l.as_str().unwrap()).collect(),
        })
        .collect()
}

/// Every location of the JSON output lies inside its file: a row of the file (or just
/// past the last line ending) and a column at most one past the row's last character.
fn assert_locations_inside(json: &str, texts: &[String], notebooks: &[Vec<String>]) {
    let findings: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{json}"));
    for finding in findings.as_array().expect("a JSON array") {
        let filename = finding["filename"].as_str().expect("a filename");
        let name = filename.trim_start_matches("./");
        let index: usize = name[1..5].parse().unwrap();
        let mut places = vec![(&finding["location"], &finding["end_location"])];
        if let Some(edits) = finding["fix"]["edits"].as_array() {
            places.extend(edits.iter().map(|e| (&e["location"], &e["end_location"])));
        }
        for (start, end) in places {
            let position = |place: &serde_json::Value| {
                let row = place["row"].as_u64().expect("a row") as usize;
                let column = place["column"].as_u64().expect("a column") as usize;
                let lines = match place["cell"].as_u64() {
                    Some(cell) => split_lines(&notebooks[index][cell as usize - 1]),
                    None => split_lines(&texts[index]),
                };
                let width = match lines.get(row.wrapping_sub(1)) {
                    Some(line) => line.text.chars().count(),
                    None if row == lines.len() + 1 => 0,
                    None => panic!("{filename}: row {row} of {} lines in {finding}", lines.len()),
                };
                assert!(
                    (1..=width + 1).contains(&column),
                    "{filename}: column {column} of {width} in {finding}\n{:?}",
                    notebooks.get(index)
                );
                (place["cell"].as_u64(), row, column)
            };
            assert!(position(start) <= position(end), "{filename}: ends before it starts: {finding}");
        }
    }
}

/// The endings a fix may use: those the file has, or `\n` in a file without any.
fn endings(text: &str) -> BTreeSet<&'static str> {
    split_lines(text).iter().map(|l| l.ending).filter(|e| !e.is_empty()).collect()
}

fn patch(dir: &Path, diff: &str) {
    let mut child = Command::new("patch")
        .args(["-p1", "--binary", "--quiet", "--no-backup-if-mismatch"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("patch runs");
    child.stdin.take().unwrap().write_all(diff.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "patch rejects the diff:\n{}{}\n{diff}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn round(seed: u64, sources: &[String]) {
    let mut rng = Rng::new(seed);
    let mutated: Vec<String> = sources.iter().map(|s| mutate(s, &mut rng, sources)).collect();
    let unsafe_fixes = seed % 2 == 1;
    let fix_args: &[&str] = if unsafe_fixes { &["--fix", "--unsafe-fixes"] } else { &["--fix"] };
    let diff_args: &[&str] = if unsafe_fixes { &["--diff", "--unsafe-fixes"] } else { &["--diff"] };
    let context = format!("seed {seed} (OOMLINT_MUTATION_SEED={seed} OOMLINT_MUTATION_ROUNDS=1 reruns it)");

    let fixed_dir = tempfile::tempdir().unwrap();
    let patched_dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..mutated.len()).map(|i| fixed_dir.path().join(named(i))).collect();
    for (i, text) in mutated.iter().enumerate() {
        fs::write(&paths[i], text).unwrap();
        fs::write(patched_dir.path().join(named(i)), text).unwrap();
    }
    let parsed_before = python_parses(&paths);
    let notebooks: Vec<Vec<String>> = mutated.iter().step_by(5).map(|text| cells(text, &mut rng)).collect();
    let notebook_paths: Vec<PathBuf> = (0..notebooks.len()).map(|i| fixed_dir.path().join(notebook_named(i))).collect();
    for (i, cells) in notebooks.iter().enumerate() {
        fs::write(&notebook_paths[i], notebook(cells)).unwrap();
        fs::write(patched_dir.path().join(notebook_named(i)), notebook(cells)).unwrap();
    }

    let json = check(fixed_dir.path(), &["--output-format", "json"]);
    assert_locations_inside(&json, &mutated, &notebooks);

    let diff = check(patched_dir.path(), diff_args);
    // The mutations leave many files parsing and with fixes: the checks below see
    // real fixes, not only files left alone.
    let parsing = parsed_before.iter().filter(|p| **p).count();
    assert!(parsing * 3 > mutated.len(), "{context}: only {parsing} of {} mutated files parse", mutated.len());
    let diffed = diff.matches("\n+++ b/").count();
    assert!(diffed * 20 > mutated.len(), "{context}: only {diffed} of {} files get a diff", mutated.len());
    patch(patched_dir.path(), &diff);

    check(fixed_dir.path(), fix_args);
    let fixed: Vec<String> = paths.iter().map(|p| fs::read_to_string(p).unwrap()).collect();
    let parsed_after = python_parses(&paths);
    for (i, (before, after)) in mutated.iter().zip(&fixed).enumerate() {
        let name = named(i);
        assert!(
            !parsed_before[i] || parsed_after[i],
            "{context}: {name} parsed before --fix, not after:\n{before:?}\n{after:?}"
        );
        let allowed = match endings(before) {
            e if e.is_empty() => BTreeSet::from(["\n"]),
            e => e,
        };
        assert!(endings(after).is_subset(&allowed), "{context}: {name} gets new line endings:\n{before:?}\n{after:?}");
        let patched = fs::read_to_string(patched_dir.path().join(&name)).unwrap();
        assert!(
            patched == *after,
            "{context}: {name}: the --diff applied is not what --fix writes:\n{patched:?}\n{after:?}"
        );
    }

    let fixed_notebooks: Vec<String> = notebook_paths.iter().map(|p| fs::read_to_string(p).unwrap()).collect();
    for (i, (before, after)) in notebooks.iter().zip(&fixed_notebooks).enumerate() {
        let name = notebook_named(i);
        let cells = cell_sources(after);
        assert_eq!(cells.len(), before.len(), "{context}: {name} keeps its cells");
        let allowed = match endings(&before.concat()) {
            e if e.is_empty() => BTreeSet::from(["\n"]),
            e => e,
        };
        assert!(endings(&cells.concat()).is_subset(&allowed), "{context}: {name} gets new line endings:\n{after}");
        let patched = fs::read_to_string(patched_dir.path().join(&name)).unwrap();
        assert!(
            patched == *after,
            "{context}: {name}: the --diff applied is not what --fix writes:\n{patched}\n{after}"
        );
    }

    check(fixed_dir.path(), fix_args);
    let all_paths = paths.iter().chain(&notebook_paths);
    for (path, once) in all_paths.zip(fixed.iter().chain(&fixed_notebooks)) {
        let twice = fs::read_to_string(path).unwrap();
        assert!(twice == *once, "{context}: a second --fix changes {}:\n{once:?}\n{twice:?}", path.display());
    }
}

#[test]
fn mutated_sources_are_checked_fixed_and_diffed_without_loss() {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let first = env("OOMLINT_MUTATION_SEED").unwrap_or(1);
    let rounds = env("OOMLINT_MUTATION_ROUNDS").unwrap_or(DEFAULT_ROUNDS);
    let sources = sources();
    for seed in first..first + rounds {
        round(seed, &sources);
    }
}

#[test]
fn lines_split_and_join_as_python_reads_them() {
    let text = "a\r\nb\rc\r\r\nd\n\ne";
    let lines = split_lines(text);
    let endings: Vec<&str> = lines.iter().map(|l| l.ending).collect();
    assert_eq!(endings, ["\r\n", "\r", "\r", "\r\n", "\n", "\n", ""]);
    assert_eq!(join(&lines), text);
}
