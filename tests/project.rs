//! Facts across files through `oomlint check`: an evaluation function's grad mode
//! decided by its callers and decorators in other files of the project, a callee's
//! return value in another file, and the deciding place named on the finding.

mod common;

use common::oomlint;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// An evaluation function that runs the model with autograd on, unless its callers or
/// its decorator turn autograd off.
const EVALUATION: &str = "\
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
";

fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, content) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    dir
}

/// The findings of `check --output-format json` run in `cwd` on `args`.
fn findings(cwd: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["check", "--preview", "--output-format", "json", "--exit-zero"];
    all.extend_from_slice(args);
    let output = oomlint(&all, cwd);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("JSON findings")
}

fn codes_in<'v>(findings: &'v [Value], file: &str) -> Vec<&'v str> {
    findings.iter().filter(|f| f["filename"] == file).map(|f| f["code"].as_str().unwrap()).collect()
}

fn train(call: &str) -> String {
    format!(
        "import torch\nfrom evaluation import evaluate\n\n\ndef main(model, loader, val_loader, optimizer):\n    for x, y in loader:\n        model(x).sum().backward()\n        optimizer.step()\n{call}\n"
    )
}

const UNDER_NO_GRAD: &str = "    with torch.no_grad():\n        print(evaluate(model, val_loader))";
const WITH_GRAD: &str = "    print(evaluate(model, val_loader))";

#[test]
fn a_caller_under_no_grad_in_another_file_silences_oom002() {
    let dir = project(&[("evaluation.py", EVALUATION), ("train.py", &train(UNDER_NO_GRAD))]);
    let found = findings(dir.path(), &["."]);
    assert_eq!(codes_in(&found, "evaluation.py"), Vec::<&str>::new(), "{found:#?}");
}

#[test]
fn the_caller_losing_its_no_grad_brings_oom002_back_with_the_caller_named() {
    let dir = project(&[("evaluation.py", EVALUATION), ("train.py", &train(WITH_GRAD))]);
    let found = findings(dir.path(), &["."]);
    let finding = found.iter().find(|f| f["filename"] == "evaluation.py").expect("OOM002 in evaluation.py");
    assert_eq!(finding["code"], "OOM002");
    let related = &finding["related"][0];
    assert_eq!(related["filename"], "train.py");
    assert_eq!(related["row"], 9);
    assert_eq!(related["message"], "`evaluate()` is called here with autograd on");
    // The full output names the place too.
    let output = oomlint(&["check", "--preview", "--exit-zero", "."], dir.path());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("= note: train.py:9: `evaluate()` is called here with autograd on"), "{text}");
}

#[test]
fn one_caller_with_autograd_on_among_several_keeps_the_finding() {
    let report = "import torch\nfrom evaluation import evaluate\n\n\ndef report(model, val_loader):\n    return evaluate(model, val_loader)\n";
    let dir = project(&[("evaluation.py", EVALUATION), ("train.py", &train(UNDER_NO_GRAD)), ("report.py", report)]);
    let found = findings(dir.path(), &["."]);
    assert_eq!(codes_in(&found, "evaluation.py"), vec!["OOM002"]);
}

#[test]
fn callers_of_callers_decide_through_several_files() {
    // `run_eval` calls `evaluate` with autograd on in its own body, but is itself only
    // called under `torch.inference_mode()`.
    let wrapper = "from evaluation import evaluate\n\n\ndef run_eval(model, val_loader):\n    return evaluate(model, val_loader)\n";
    let main = "import torch\nfrom steps import run_eval\n\n\ndef main(model, val_loader):\n    with torch.inference_mode():\n        run_eval(model, val_loader)\n";
    let dir = project(&[("evaluation.py", EVALUATION), ("steps.py", wrapper), ("main.py", main)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), Vec::<&str>::new());
    // The same chain with the outer `with` gone reports it.
    let main =
        "import torch\nfrom steps import run_eval\n\n\ndef main(model, val_loader):\n    run_eval(model, val_loader)\n";
    fs::write(dir.path().join("main.py"), main).unwrap();
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), vec!["OOM002"]);
}

#[test]
fn a_function_passed_around_as_a_value_may_run_anywhere() {
    let hooks = "import torch\nfrom evaluation import evaluate\n\nHOOKS = [evaluate]\n\n\ndef main(model, val_loader):\n    with torch.no_grad():\n        evaluate(model, val_loader)\n";
    let dir = project(&[("evaluation.py", EVALUATION), ("hooks.py", hooks)]);
    let found = findings(dir.path(), &["."]);
    let finding = found.iter().find(|f| f["filename"] == "evaluation.py").expect("still reported");
    assert_eq!(
        finding["related"][0]["message"],
        "`evaluate` is passed here as a value, so it may run with autograd on"
    );
}

const DECORATED: &str = "\
import torch
from helpers.modes import inference_only


@inference_only
def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
";

#[test]
fn a_decorator_from_another_module_entering_inference_mode_silences_oom002() {
    let modes = "import functools\nimport torch\n\n\ndef inference_only(fn):\n    @functools.wraps(fn)\n    def wrapper(*args, **kwargs):\n        with torch.inference_mode():\n            return fn(*args, **kwargs)\n\n    return wrapper\n";
    let dir = project(&[("evaluation.py", DECORATED), ("helpers/__init__.py", ""), ("helpers/modes.py", modes)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), Vec::<&str>::new());
}

#[test]
fn decorator_factories_and_applied_contexts_count_too() {
    let factory = "import torch\n\n\ndef inference_only(enabled=True):\n    def decorate(fn):\n        def wrapper(*args):\n            with torch.no_grad():\n                return fn(*args)\n        return wrapper\n    return decorate\n";
    let decorated = DECORATED.replace("@inference_only\n", "@inference_only()\n");
    let dir = project(&[("evaluation.py", &decorated), ("helpers/modes.py", factory)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), Vec::<&str>::new());

    let applied = "import torch\n\n\ndef inference_only(fn):\n    return torch.inference_mode()(fn)\n";
    let dir = project(&[("evaluation.py", DECORATED), ("helpers/modes.py", applied)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), Vec::<&str>::new());
}

#[test]
fn a_decorator_that_leaves_autograd_on_does_not_silence() {
    // The wrapper disables autograd for its own bookkeeping, not around the call.
    let timing = "import torch\nimport time\n\n\ndef inference_only(fn):\n    def wrapper(*args):\n        with torch.no_grad():\n            start = time.time()\n        result = fn(*args)\n        print(time.time() - start)\n        return result\n    return wrapper\n";
    let dir = project(&[("evaluation.py", DECORATED), ("helpers/modes.py", timing)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "evaluation.py"), vec!["OOM002"]);
}

#[test]
fn imports_resolve_through_packages_relative_imports_and_re_exports() {
    let package_init = "from .evaluation import evaluate\n";
    let train = "import torch\nimport project as p\n\n\ndef main(model, val_loader):\n    with torch.no_grad():\n        p.evaluate(model, val_loader)\n";
    let dir = project(&[
        ("project/__init__.py", package_init),
        ("project/evaluation.py", EVALUATION),
        ("scripts/train.py", train),
    ]);
    // `scripts/train.py` imports `project` from the root: the root is on the path.
    fs::create_dir_all(dir.path().join(".git")).unwrap();
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "project/evaluation.py"), Vec::<&str>::new());

    let train = "import torch\nfrom ..project import evaluation as ev\n\n\ndef main(model, val_loader):\n    ev.evaluate(model, val_loader)\n";
    fs::write(dir.path().join("scripts/train.py"), train).unwrap();
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "project/evaluation.py"), vec!["OOM002"]);
}

/// A caller that names neither the function's module nor a package that re-exports it
/// (`from . import evaluate` in the package itself) is still found: `check` parses a file
/// for the index only when its text may reach the function's module, and a relative
/// import of the package counts.
#[test]
fn a_relative_import_of_the_package_itself_reaches_its_re_exports() {
    let run = "import torch\nfrom . import evaluate\n\n\ndef main(model, val_loader):\n    with torch.no_grad():\n        evaluate(model, val_loader)\n";
    let dir = project(&[
        ("project/__init__.py", "from .evaluation import evaluate\n"),
        ("project/evaluation.py", EVALUATION),
        ("project/run.py", run),
    ]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "project/evaluation.py"), Vec::<&str>::new());
    fs::write(
        dir.path().join("project/run.py"),
        run.replace("    with torch.no_grad():\n        evaluate", "    evaluate"),
    )
    .unwrap();
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "project/evaluation.py"), vec!["OOM002"]);
}

#[test]
fn a_method_called_on_an_unknown_receiver_in_another_file_counts_as_called() {
    let trainer = "import torch\n\n\nclass Trainer:\n    def evaluate(self, val_loader):\n        self.model.eval()\n        for x, y in val_loader:\n            out = self.model(x)\n            print(out.sum().item())\n";
    let main = "import torch\nfrom trainer import Trainer\n\n\ndef main(val_loader):\n    trainer = Trainer()\n    with torch.no_grad():\n        trainer.evaluate(val_loader)\n";
    let dir = project(&[("trainer.py", trainer), ("main.py", main)]);
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "trainer.py"), Vec::<&str>::new());
    let main = main.replace("    with torch.no_grad():\n        trainer", "    trainer");
    fs::write(dir.path().join("main.py"), main).unwrap();
    assert_eq!(codes_in(&findings(dir.path(), &["."]), "trainer.py"), vec!["OOM002"]);
}

#[test]
fn checking_one_file_still_sees_the_callers_of_its_project() {
    let dir =
        project(&[("src/evaluation.py", EVALUATION), ("src/train.py", &train(UNDER_NO_GRAD)), ("pyproject.toml", "")]);
    assert_eq!(codes_in(&findings(dir.path(), &["src/evaluation.py"]), "src/evaluation.py"), Vec::<&str>::new());
}

#[test]
fn what_a_callee_in_another_file_returns_decides_oom001() {
    // Neither name says "loss" the way the in-file heuristics read it; the callees'
    // own `return`s decide.
    let scoring = "import torch.nn.functional as F\n\n\ndef score_batch(out, y):\n    return F.cross_entropy(out, y)\n\n\ndef batch_loss_value(out, y):\n    return F.cross_entropy(out, y).item()\n";
    let validate = "from scoring import score_batch, batch_loss_value\n\n\ndef validate(model, val_loader):\n    history = []\n    for x, y in val_loader:\n        out = model(x)\n        history.append(score_batch(out, y))\n    return history\n";
    let dir = project(&[("scoring.py", scoring), ("validate.py", validate)]);
    let found = findings(dir.path(), &["."]);
    let kept: Vec<&Value> = found.iter().filter(|f| f["code"] == "OOM001").collect();
    assert_eq!(kept.len(), 1, "{found:#?}");
    assert_eq!(kept[0]["filename"], "validate.py");
    assert_eq!(kept[0]["related"][0]["filename"], "scoring.py");
    assert_eq!(kept[0]["related"][0]["row"], 4);
    assert_eq!(kept[0]["related"][0]["message"], "`score_batch()` returns a tensor attached to its autograd graph");

    // The same callee reached through a package, absolute or relative: the project's
    // answer is still asked for (the package's name is a directory of the project).
    for import in ["from metrics.scoring import", "from .metrics.scoring import"] {
        let dir = project(&[
            ("metrics/__init__.py", ""),
            ("metrics/scoring.py", scoring),
            ("validate.py", &validate.replace("from scoring import", import)),
        ]);
        let found = findings(dir.path(), &["."]);
        let kept: Vec<&Value> = found.iter().filter(|f| f["code"] == "OOM001").collect();
        assert_eq!(kept.len(), 1, "{import}: {found:#?}");
        assert_eq!(kept[0]["related"][0]["filename"], "metrics/scoring.py", "{import}");
    }

    // A loss-named callee that returns a Python number keeps nothing alive.
    fs::write(dir.path().join("validate.py"), validate.replace("score_batch(out", "batch_loss_value(out")).unwrap();
    let found = findings(dir.path(), &["."]);
    assert!(found.iter().all(|f| f["code"] != "OOM001"), "{found:#?}");
}

/// A file no rule that reads the project could find anything in (a hook checking the one
/// file a commit changed) is checked without indexing the project: no other file is read.
#[test]
fn a_file_no_project_rule_could_match_is_checked_without_reading_the_project() {
    let dir =
        project(&[("evaluation.py", EVALUATION), ("train.py", &train(UNDER_NO_GRAD)), ("setup_env.py", "x = 1\n")]);
    fs::write(dir.path().join("broken.py"), b"x = '\xff'\n").unwrap();
    let output = oomlint(&["check", "--preview", "--output-format", "json", "setup_env.py"], dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("not indexed"), "the project was read: {stderr}");
    assert!(output.status.success(), "{stderr}");
    // A file the project's rules could match still reads the rest of it.
    let output =
        oomlint(&["check", "--preview", "--output-format", "json", "setup_env.py", "evaluation.py"], dir.path());
    assert!(String::from_utf8_lossy(&output.stderr).contains("broken.py: not indexed"));
}

#[test]
fn unreadable_project_files_are_reported_and_skipped() {
    let dir = project(&[("evaluation.py", EVALUATION), ("train.py", &train(UNDER_NO_GRAD))]);
    fs::write(dir.path().join("broken.py"), b"x = '\xff'\n").unwrap();
    let output = oomlint(&["check", "--preview", "--output-format", "json", "evaluation.py"], dir.path());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.py: not indexed: not valid UTF-8"), "{stderr}");
    // The rest of the project still decides.
    let found: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert!(found.is_empty(), "{found:#?}");
}
