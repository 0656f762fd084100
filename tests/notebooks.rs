//! Jupyter notebooks through the binary: findings by cell across cells, IPython lines
//! left alone, `--fix` rewriting only the changed cells, and bad notebooks reported.

mod common;

use common::{oomlint, repo};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

fn training() -> String {
    fs::read_to_string(repo().join("tests/cases/notebooks/training.ipynb")).unwrap()
}

fn run(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let output = oomlint(args, cwd);
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).unwrap();
    (output.status.code().unwrap(), text(&output.stdout), text(&output.stderr))
}

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        let path: PathBuf = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    dir
}

#[test]
fn findings_are_reported_by_cell_with_definitions_carried_across_cells() {
    let dir = project(&[("training.ipynb", &training())]);
    let (code, out, err) = run(&["check", "--output-format", "concise"], dir.path());
    assert_eq!(code, 1, "{err}");
    let places: Vec<&str> = out.lines().filter(|l| l.contains("[OOM")).map(|l| l.split(": ").next().unwrap()).collect();
    // The loop in cell 5 uses the model and criterion of cell 3; the `autocast` of
    // cell 7 was imported in cell 2. IPython lines (`%matplotlib`, `!pip`, `model?`,
    // `%%time`, `files = !ls`) are neither errors nor findings.
    assert_eq!(
        places,
        ["training.ipynb:cell 5:4:22", "training.ipynb:cell 5:5:5", "training.ipynb:cell 7:1:6"],
        "{out}"
    );
    assert!(!err.contains("cannot parse"), "{err}");

    let (_, json, _) = run(&["check", "--output-format", "json"], dir.path());
    let findings: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(findings[2]["code"], "OOM003");
    assert_eq!(findings[2]["location"], serde_json::json!({"cell": 7, "row": 1, "column": 6}));

    // CI formats have no cells: no line of the JSON text is named, the message names the cell.
    let (_, github, _) = run(&["check", "--output-format", "github"], dir.path());
    let last = github.lines().last().unwrap();
    assert!(
        last.starts_with("::warning title=oomlint (OOM003),file=training.ipynb::training.ipynb:cell 7:1:6: OOM003"),
        "{last}"
    );
    let (_, sarif, _) = run(&["check", "--output-format", "sarif"], dir.path());
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    let result = &sarif["runs"][0]["results"][2];
    assert!(result["locations"][0]["physicalLocation"].get("region").is_none(), "{result}");
    assert_eq!(result["properties"]["notebookCell"], 7);
    assert!(result["message"]["text"].as_str().unwrap().starts_with("cell 7, line 1: "), "{result}");
}

#[test]
fn fixing_rewrites_only_the_changed_cells() {
    let original = training();
    let dir = project(&[("training.ipynb", &original)]);
    let (code, out, err) = run(&["check", "--fix", "--unsafe-fixes", "--output-format", "concise"], dir.path());
    assert_eq!(code, 0, "{out}{err}");
    let fixed = fs::read_to_string(dir.path().join("training.ipynb")).unwrap();
    insta::assert_snapshot!("fixed-notebook", fixed);

    let (before, after): (Value, Value) =
        (serde_json::from_str(&original).unwrap(), serde_json::from_str(&fixed).unwrap());
    let cells = |v: &Value| v["cells"].as_array().unwrap().clone();
    assert_eq!(cells(&before).len(), cells(&after).len());
    assert_eq!(before["metadata"], after["metadata"]);
    for (number, (old, new)) in cells(&before).iter().zip(cells(&after)).enumerate() {
        let rest = |cell: &Value| {
            let mut cell = cell.clone();
            cell.as_object_mut().unwrap().remove("source");
            cell
        };
        assert_eq!(rest(old), rest(&new), "cell {}: only the source may change", number + 1);
        // Cells 2, 5 and 7 had findings; markdown, cell 3 and the `%%bash` cell did not.
        if ![1, 4, 6].contains(&number) {
            assert_eq!(old["source"], new["source"], "cell {} changed", number + 1);
        }
    }
    // Every line outside the changed sources is byte for byte what it was.
    let unchanged: Vec<&str> = original.lines().filter(|l| !l.starts_with("    \"")).collect();
    let kept: Vec<&str> = fixed.lines().filter(|l| !l.starts_with("    \"")).collect();
    assert_eq!(unchanged, kept);
    for ipython in
        ["%matplotlib inline\\n", "!pip install -q timm\\n", "model?", "%%time\\n", "files = !ls checkpoints"]
    {
        assert!(fixed.contains(ipython), "{ipython} lost");
    }

    // Fixing again changes nothing.
    let (code, out, _) = run(&["check", "--fix", "--unsafe-fixes"], dir.path());
    assert_eq!((code, out.trim()), (0, "All checks passed."));
    assert_eq!(fs::read_to_string(dir.path().join("training.ipynb")).unwrap(), fixed);
}

#[test]
fn a_notebook_on_standard_input_is_fixed_to_standard_output() {
    let original = training();
    let dir = tempfile::tempdir().unwrap();
    let output = common::oomlint_with_stdin(
        &["check", "--stdin-filename", "training.ipynb", "--fix"],
        dir.path(),
        original.as_bytes(),
    );
    let fixed = String::from_utf8(output.stdout).unwrap();
    // The safe fix (OOM003's `torch.amp` spelling) only, in the notebook's own layout.
    assert_eq!(
        fixed,
        original
            .replace("from torch.cuda.amp import autocast", "from torch.amp import autocast")
            .replace("\"with autocast():\\n\"", "\"with autocast(\\\"cuda\\\"):\\n\"")
    );
    let report = String::from_utf8(output.stderr).unwrap();
    assert!(report.contains("training.ipynb:cell 5:"), "{report}");
}

#[test]
fn suppressions_and_syntax_errors_are_per_line_in_cells() {
    let notebook = |cells: &[&str]| {
        let cells: Vec<Value> = cells
            .iter()
            .map(|source| serde_json::json!({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null, "source": source}))
            .collect();
        serde_json::to_string_pretty(
            &serde_json::json!({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
        )
        .unwrap()
    };
    let text = notebook(&[
        "import torch\nlosses = []",
        "def f(:\n    pass",
        "for x, y in val_loader:\n    loss = criterion(model(x), y)  # oomlint: ignore[OOM002]\n    losses.append(loss)  # noqa: OOM001",
    ]);
    let dir = project(&[("n.ipynb", &text)]);
    let (code, out, err) = run(&["check", "--output-format", "concise"], dir.path());
    assert_eq!((code, out.trim()), (0, "All checks passed."), "{err}");
    assert!(err.contains("n.ipynb:cell 2:1:"), "{err}");
}

#[test]
fn bad_notebooks_are_reported_and_left_alone() {
    let truncated = &training()[..500];
    let r_kernel = training().replace("\"language\": \"python\"", "\"language\": \"R\"");
    let dir = project(&[
        ("broken.ipynb", truncated),
        ("old.ipynb", r#"{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}"#),
        ("r.ipynb", &r_kernel),
        (
            "train.py",
            "import torch\n\n\ndef f(model, loader):\n    out = []\n    for x in loader:\n        out.append(model(x).sum())\n    return out\n",
        ),
        (".ipynb_checkpoints/training-checkpoint.ipynb", &training()),
    ]);
    let (code, out, err) = run(&["check", "--fix", "--output-format", "concise"], dir.path());
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("broken.ipynb: not a valid notebook"), "{err}");
    assert!(err.contains("old.ipynb: nbformat 3 notebooks are not supported"), "{err}");
    assert!(err.contains("r.ipynb: not linted: the notebook's kernel runs R"), "{err}");
    assert!(out.contains("train.py:"), "the Python file is still linted: {out}");
    assert!(!out.contains("checkpoint"), "{out}");
    assert_eq!(fs::read_to_string(dir.path().join("broken.ipynb")).unwrap(), truncated);
    assert_eq!(fs::read_to_string(dir.path().join("r.ipynb")).unwrap(), r_kernel);
}

#[test]
fn a_fix_that_would_land_between_cells_is_dropped_and_the_other_cells_are_fixed() {
    // The load's parentheses close two cells later: its fix (an argument added after
    // the last one) would land between cells in the joined text.
    let cell = |source: &str| serde_json::json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": source});
    let notebook = serde_json::json!({"cells": [
        cell("import torch\nfrom torch.cuda.amp import autocast\nstate = torch.load(\n"),
        cell("    'weights.pt',\n"),
        cell(")\nwith autocast():\n    pass\n"),
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5});
    let dir = project(&[("open.ipynb", &serde_json::to_string_pretty(&notebook).unwrap())]);
    let (code, out, err) = run(&["check", "--output-format", "json"], dir.path());
    assert_eq!(code, 1, "{err}");
    let findings: Value = serde_json::from_str(&out).unwrap();
    let load = findings.as_array().unwrap().iter().find(|f| f["code"] == "OOM008").expect("the load is found");
    assert_eq!(load["fix"], Value::Null, "{load}");
    let (code, out, err) = run(&["check", "--fix", "--unsafe-fixes"], dir.path());
    assert_eq!(code, 1, "{out}{err}");
    let fixed = fs::read_to_string(dir.path().join("open.ipynb")).unwrap();
    assert!(fixed.contains("with autocast('cuda')") && fixed.contains("torch.amp import autocast"), "{fixed}");
}
