//! Random edit sequences through the document sync and the partial relint must end in the
//! findings a fresh lint of the final text gives. The edits are typed the way people
//! type (a character, a word, Enter with indentation, a bracket, a quote, a deletion,
//! a line copied elsewhere) at random places in every fixture and test case, from fixed
//! seeds so that a failure repeats.

use super::diagnostics::Snapshot;
use super::document::Document;
use super::position::Encoding;
use super::state::{State, Target};
use crate::diagnostic::Diagnostic;
use crate::engine::RuleSettings;
use std::path::{Path, PathBuf};
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent, Uri};

/// A small deterministic generator (xorshift64*), enough to pick edits.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

const TYPED: &[&str] = &[
    "x",
    "_",
    " ",
    "\n",
    "\n        ",
    "(",
    ")",
    ":",
    "\"",
    "'",
    "#",
    ".",
    ",",
    "loss",
    ".item()",
    ".detach()",
    "losses.append(loss)",
    "model(x)",
    "with torch.no_grad():\n    ",
    "return ",
    "def helper(x):\n    return x\n",
    "backward()",
    "retain_graph=True",
    "checkpoint(",
    "# oomlint: ignore[OOM001]",
    "evaluate",
    "train",
    // Words of facts gathered over the whole file.
    ".to(device)",
    "model.eval()",
    "torch.save(model, \"model.pt\")",
    "@torch.no_grad()\n",
];

/// One edit at a random place of `text`: (start, end, inserted), in bytes.
fn random_edit(text: &str, random: &mut Random) -> (usize, usize, String) {
    let boundary = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let start = boundary(random.below(text.len() + 1));
    match random.below(4) {
        0 => {
            let end = boundary((start + 1 + random.below(12)).min(text.len()));
            (start, end, String::new())
        }
        1 => {
            // A line of the file, copied elsewhere.
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            let line = lines.get(random.below(lines.len())).copied().unwrap_or("");
            let at = text[..start].rfind('\n').map_or(0, |i| i + 1);
            (at, at, line.to_string())
        }
        _ => (start, start, TYPED[random.below(TYPED.len())].to_string()),
    }
}

fn position(text: &str, offset: usize) -> Position {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position { line, character: text[line_start..offset].encode_utf16().count() as u32 }
}

/// Lint the document as the server does after changes (partially when it can), and keep
/// the findings as the server keeps them.
/// Returns the findings, the settings they were linted with, and whether only part of
/// the file was linted.
fn relint(state: &mut State, uri: &Uri) -> (Vec<Diagnostic>, RuleSettings, bool) {
    let target = Target::File(uri.clone());
    let (snapshot, _) = Snapshot::take(state, &target).expect("an open document");
    let partial = snapshot.is_partial();
    let version = snapshot.members[0].1;
    let settings = snapshot.settings.clone().expect("linting is enabled");
    let linted = snapshot.lint();
    let found = linted.found[0].clone();
    super::diagnostics::keep(state, uri, version, found.clone(), &linted.file_wide, linted.layout);
    (found, settings, partial)
}

fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["fixtures", "tests/cases"] {
        let walk = ignore::WalkBuilder::new(root.join(dir)).build();
        for entry in walk.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "py")) {
            let text = std::fs::read_to_string(entry.path()).expect("a readable test file");
            files.push((entry.path().to_path_buf(), text));
        }
    }
    files.sort();
    files
}

/// The rounds of random edits to run: `OOMLINT_EDIT_SEED=N` one round, `=A..B` rounds A
/// to B (a wider sweep), otherwise the first few and those that once went wrong (39: a
/// broken text whose module-level finding rested on a binding error recovery had moved).
fn rounds() -> Vec<u64> {
    let asked = std::env::var("OOMLINT_EDIT_SEED").unwrap_or_default();
    let number = |s: &str| s.trim().parse::<u64>().ok();
    match asked.split_once("..") {
        Some((from, to)) => (number(from).unwrap_or(0)..number(to).unwrap_or(0)).collect(),
        None => number(&asked).map_or(vec![0, 1, 39], |n| vec![n]),
    }
}

/// How one round went: the relints, and how many of them were partial.
struct Round {
    relints: usize,
    partial: usize,
    /// Files opened joined from pieces.
    joined: usize,
}

/// Random edits to every file, each followed by the server's relint and a fresh lint of
/// the same text; the first disagreement, described.
fn run_round(files: &[(PathBuf, String)], round: u64) -> Result<Round, String> {
    const EDITS: usize = 6;
    let mut counts = Round { relints: 0, partial: 0, joined: 0 };
    for (number, (path, text)) in files.iter().enumerate() {
        let seed = (number as u64 + 1).wrapping_mul(0x1000_0000_01b3) ^ round.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let mut random = Random(0x9e37_79b9_7f4a_7c15 ^ seed);
        let uri = Uri::from_file_path(path).expect("an absolute path");
        let mut state = State::default();
        state.settings.overrides.preview = Some(true);
        // Two files in three are opened as the server opens a large file, joined from two
        // pieces (where the text has a place to cut), and of those, half are reparsed
        // unchanged once their findings are out (`Document::cold_tree`).
        let pieces = (number % 3 != 0).then(|| crate::engine::pieces::parse_in(text, 2)).flatten();
        let warm = number % 3 == 2;
        counts.joined += usize::from(pieces.is_some());
        state.documents.insert(uri.clone(), Document::parsed(text.clone(), 1, pieces));
        relint(&mut state, &uri);
        if warm {
            let document = state.documents.get_mut(&uri).unwrap();
            if let Some(cold) = document.cold_tree() {
                let version = cold.version;
                document.warmed(version, cold.warm().expect("reparsed"));
            }
        }
        let mut typed = Vec::new();
        for version in 2..2 + EDITS as i32 {
            // Sometimes several changes reach one lint, as when typing fast.
            for _ in 0..1 + random.below(3) {
                let document = state.documents.get_mut(&uri).unwrap();
                let (start, end, inserted) = random_edit(&document.text, &mut random);
                let range = Range { start: position(&document.text, start), end: position(&document.text, end) };
                typed.push(format!("v{version} {start}..{end} {inserted:?}"));
                let change = TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: inserted };
                document.apply_all(&[change], Encoding::Utf16, version).expect("an edit inside the document");
            }
            let (found, settings, partial) = relint(&mut state, &uri);
            counts.relints += 1;
            counts.partial += usize::from(partial);
            let text = &state.documents[&uri].text;
            let fresh = crate::engine::Engine::get().lint(text, path, &settings).diagnostics;
            if found != fresh {
                let only = |a: &[Diagnostic], b: &[Diagnostic]| {
                    a.iter()
                        .filter(|d| !b.contains(d))
                        .map(|d| format!("  {} {}..{} {}", d.code, d.range.start, d.range.end, d.message))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let how = if partial { "partly relinted" } else { "relinted whole" };
                return Err(format!(
                    "round {round}, {} (file {number}, {how}) after the edits\n  {}\nkept or found by the server only:\n{}\n\
                     found by a fresh lint only:\n{}\nthe text:\n{text}",
                    path.display(),
                    typed.join("\n  "),
                    only(&found, &fresh),
                    only(&fresh, &found),
                ));
            }
        }
    }
    Ok(counts)
}

#[test]
fn random_edits_end_in_the_findings_of_a_fresh_lint() {
    let files = sources();
    assert!(files.len() > 50, "the fixtures and test cases are found");
    let (mut relints, mut partial, mut joined, mut failures) = (0, 0, 0, Vec::new());
    for round in rounds() {
        match run_round(&files, round) {
            Ok(counts) => {
                (relints, partial, joined) =
                    (relints + counts.relints, partial + counts.partial, joined + counts.joined)
            }
            Err(failure) => failures.push(failure),
        }
    }
    assert!(failures.is_empty(), "{} rounds disagree:\n\n{}", failures.len(), failures.join("\n\n"));
    // The partial relint is what is under test: enough random edits must take it (most
    // land in module-level code, in small files, on a line naming torch, or near a name
    // used elsewhere).
    assert!(partial * 40 > relints, "{partial} of {relints} relints were partial");
    assert!(joined >= 10, "{joined} files were opened joined from pieces");
}

/// Open `text`, lint it, replace `old` (its first occurrence) by `new` and relint as the
/// server does: the findings before and after, and whether the relint was partial; the
/// findings after must be a fresh lint's.
fn relint_after_edit(text: &str, old: &str, new: &str) -> (Vec<Diagnostic>, Vec<Diagnostic>, bool) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("train.py");
    let uri = Uri::from_file_path(&path).expect("an absolute path");
    let mut state = State::default();
    state.documents.insert(uri.clone(), Document::new(text.to_string(), 1));
    let (before, _, _) = relint(&mut state, &uri);
    let start = text.find(old).expect("the edited text");
    let range = Range { start: position(text, start), end: position(text, start + old.len()) };
    let change = TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: new.to_string() };
    state.documents.get_mut(&uri).unwrap().apply_all(&[change], Encoding::Utf16, 2).expect("an edit inside the text");
    let (after, settings, partial) = relint(&mut state, &uri);
    let fresh = crate::engine::Engine::get().lint(&state.documents[&uri].text, &path, &settings).diagnostics;
    assert_eq!(after, fresh, "the relint agrees with a fresh lint");
    (before, after, partial)
}

/// A `backward()` typed in one function is read by facts about module-level code (the
/// module holds every call of the file): the partial relint relints module-level code
/// too, and the module-level loop's kept loss is found.
#[test]
fn a_backward_pass_typed_in_a_function_is_relinted_with_module_level_code() {
    // Every rule that looks for `backward` in the text runs before the edit as after.
    let text = "import torch\n\nprint(\"gradients by hand, no autograd backward\")\nlosses = []\nfor x, y in data:\n    out = model(x)\n    loss = criterion(out, y)\n    \
                backprop(loss)\n    losses.append(loss)\n\n\ndef backprop(loss):\n    pass\n\n\n\
                def other(model, batch):\n    return model(batch) * 2\n";
    let typed = "model(batch).sum().backward()\n    return model(batch) * 2";
    let (before, after, partial) = relint_after_edit(text, "return model(batch) * 2", typed);
    assert!(partial, "only the edited function and module-level code are relinted");
    assert!(before.is_empty(), "gradients computed by hand: {before:?}");
    assert_eq!(after.iter().map(|d| d.code).collect::<Vec<_>>(), ["OOM001"], "{after:?}");
}

/// An evaluation helper whose OOM002 depends on whether its callers run it under
/// `torch.no_grad()`.
const EVALUATE: &str = "def evaluate(model, val_loader):\n    model.eval()\n    for x, y in val_loader:\n        out = model(x)\n        print(out.sum().item())\n";

/// The codes of `found`, in order.
fn codes(found: &[Diagnostic]) -> Vec<&'static str> {
    found.iter().map(|d| d.code).collect()
}

/// Taking a function's `with torch.no_grad():` out and putting it back, its lines
/// rewritten whole (indentation and line break included), as an editor's undo does:
/// what it decides reaches only that function's statements and what it calls, so only
/// the function is relinted, whether it is the file's last or not.
#[test]
fn a_grad_mode_edit_inside_a_function_relints_only_that_function() {
    let guarded = "    with torch.no_grad():\n        evaluate(model, val_loader)\n";
    let bare = "    evaluate(model, val_loader)\n";
    let train = "def train(model, loader, optimizer, criterion):\n    model.train()\n    losses = []\n    for x, y in loader:\n        optimizer.zero_grad()\n        loss = criterion(model(x), y)\n        optimizer.step()\n        losses.append(loss)\n";
    for after in ["", "\n\ndef other(model):\n    return model\n"] {
        let text = format!(
            "import torch\nfrom torch.utils.data import DataLoader\nfrom evaluation import evaluate\n\n\n{train}\n\ndef validate(model, val_loader):\n{guarded}{after}"
        );
        let (before, removed, partial) = relint_after_edit(&text, guarded, bare);
        assert!(partial, "only `validate` is relinted");
        assert_eq!(codes(&before), ["OOM001"]);
        assert_eq!(removed, before, "the helper is in another file");
        let text = text.replacen(guarded, bare, 1);
        let (_, restored, partial) = relint_after_edit(&text, bare, guarded);
        assert!(partial, "putting it back relints only `validate` too");
        assert_eq!(restored, before);
    }
}

/// Near misses: a grad-mode edit that reaches other statements. The helper it calls (and
/// what that calls in turn), a decorator of the file whose wrapper it changes, and a
/// module-level `torch.set_grad_enabled(False)` all change findings outside the edited
/// function, and a relint (partial or whole) finds them as a fresh lint does.
#[test]
fn a_grad_mode_edit_reaches_the_functions_it_decides_the_grad_mode_of() {
    // A helper of the file called under the `with`, directly or through another.
    let guarded = "    with torch.no_grad():\n        run_evaluation(model, val_loader)\n";
    let bare = "    run_evaluation(model, val_loader)\n";
    for through in ["", "def run_evaluation(model, val_loader):\n    evaluate(model, val_loader)\n\n\n"] {
        let helper = if through.is_empty() {
            EVALUATE.replace("def evaluate", "def run_evaluation")
        } else {
            EVALUATE.to_string()
        };
        let text = format!("import torch\n\n\n{helper}\n\n{through}def validate(model, val_loader):\n{guarded}");
        let (before, after, partial) = relint_after_edit(&text, guarded, bare);
        assert!(partial, "the edited function and the helpers it calls are relinted");
        assert!(before.is_empty(), "{before:?}");
        assert!(
            !after.is_empty() && after.iter().all(|d| d.code == "OOM002"),
            "the helper now runs with autograd on: {after:?}"
        );
    }
    // A method of another class, called on an object under the `with`.
    let method = EVALUATE.replace("def evaluate(", "def evaluate(self, ").replace('\n', "\n    ");
    let guarded = "    with torch.no_grad():\n        evaluator.evaluate(model, val_loader)\n";
    let text = format!(
        "import torch\n\n\nclass Evaluator:\n    {method}\n\ndef validate(evaluator, model, val_loader):\n{guarded}"
    );
    let (before, after, partial) = relint_after_edit(&text, guarded, "    evaluator.evaluate(model, val_loader)\n");
    assert!(partial, "the class defining the method is relinted with the function");
    assert!(before.is_empty(), "{before:?}");
    assert!(!after.is_empty() && after.iter().all(|d| d.code == "OOM002"), "{after:?}");
    // The wrapper of a decorator of the file: the functions it decorates change.
    let decorator = "def evaluation_mode(fn):\n    def wrapper(*args):\n        with torch.no_grad():\n            return fn(*args)\n    return wrapper\n";
    let decorated = EVALUATE.replace("def evaluate", "@evaluation_mode\ndef evaluate");
    let text = format!("import torch\n\n\n{decorator}\n\n{decorated}\n\nevaluate(model, val_loader)\n");
    let (before, after, partial) = relint_after_edit(&text, "with torch.no_grad():", "with torch.enable_grad():");
    assert!(partial, "the decorated function uses the decorator's name, so it is relinted");
    assert!(before.is_empty(), "{before:?}");
    assert!(!after.is_empty() && after.iter().all(|d| d.code == "OOM002"), "{after:?}");
    // Module level: `torch.set_grad_enabled(False)` before the call decides the grad mode
    // of every function called after it, and relints the whole file.
    let text = format!("import torch\n\n\n{EVALUATE}\n\nmodel = load()\nevaluate(model, val_loader)\n");
    let (before, after, partial) =
        relint_after_edit(&text, "model = load()\n", "model = load()\ntorch.set_grad_enabled(False)\n");
    assert!(!partial, "module-level code decides the grad mode of what it calls after");
    assert_eq!(codes(&before), ["OOM002"]);
    assert!(after.is_empty(), "{after:?}");
}

/// A module-level statement taken out of the blank space after a function, with an edit
/// of the function's last line: the edit ends in that blank space, but the statement
/// gone may be what module-level code read, so the whole file is relinted.
#[test]
fn a_module_level_statement_taken_out_after_a_body_relints_the_file() {
    let text = format!("import torch\n\n\n{EVALUATE}model = load()\nevaluate(model, val_loader)\n");
    let (before, after, partial) =
        relint_after_edit(&text, "        print(out.sum().item())\nmodel = load()\n", "        print(out.sum())\n");
    assert!(!partial, "a module-level statement was taken out");
    assert_eq!(codes(&before), ["OOM002"]);
    assert_eq!(codes(&after), ["OOM002"]);
}
