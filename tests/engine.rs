//! The engine's shared machinery: host predicates in queries, name resolution through
//! imports, grad-mode and graph-attachment facts.

use oomlint::diagnostic::Severity;
use oomlint::engine::checker::{Checker, Match};
use oomlint::engine::facts::Facts;
use oomlint::engine::facts::tensors::TensorValue;
use oomlint::engine::tree::KindName;
use oomlint::engine::{Engine, RuleSettings, parse, tree};
use oomlint::rules::Rule;
use std::path::Path;

fn report_capture(checker: &mut Checker, found: &Match) {
    if let Some(node) = found.get("x") {
        checker.report(node, Severity::Info, checker.text(node).to_string(), String::new());
    }
}

fn test_rule(query: &'static str) -> &'static Rule {
    Box::leak(Box::new(Rule {
        code: "TST001",
        slug: "test",
        default_severity: Severity::Info,
        preview: false,
        summary: "",
        cost: oomlint::rules::Cost::Evidence(oomlint::rules::Evidence::GradientDifference),
        fix_title: "",
        docs: "",
        query,
        could_match: |_| true,
        reads_project: false,
        check: oomlint::rules::Check::Query(report_capture),
    }))
}

fn matched(query: &'static str, source: &str) -> Vec<String> {
    let engine = Engine::compile(&[test_rule(query)]).unwrap_or_else(|e| panic!("{e}"));
    let settings = RuleSettings { enabled: vec![true], ..RuleSettings::default() };
    engine.lint(source, Path::new("t.py"), &settings).diagnostics.into_iter().map(|d| d.message).collect()
}

const LOOPS: &str = "\
for a in val_loader:
    f(a)
    def inner():
        f(b)
while True:
    f(c)
f(d)
";

#[test]
fn has_ancestor_stops_at_the_enclosing_function() {
    let query =
        r#"((call arguments: (argument_list (identifier) @x)) (#has-ancestor? @x "for_statement" "while_statement"))"#;
    assert_eq!(matched(query, LOOPS), ["a", "c"]);
    let query = r#"((call arguments: (argument_list (identifier) @x)) (#not-has-ancestor? @x "for_statement" "while_statement"))"#;
    assert_eq!(matched(query, LOOPS), ["b", "d"]);
}

#[test]
fn has_ancestor_matching_reads_the_ancestor_header() {
    let query =
        r#"((call arguments: (argument_list (identifier) @x)) (#has-ancestor-matching? @x "for_statement" "in val_"))"#;
    assert_eq!(matched(query, LOOPS), ["a"]);
}

#[test]
fn malformed_queries_and_predicates_name_the_rule() {
    for query in [
        "(call @x",
        r#"((identifier) @x (#has-ancestor? @x))"#,
        r#"((identifier) @x (#frobnicate? @x "a"))"#,
        r#"((identifier) @x (#has-ancestor-matching? @x "for_statement" "("))"#,
    ] {
        let error = Engine::compile(&[test_rule(query)]).err().expect("compile error");
        assert!(error.starts_with("TST001: query:"), "{error}");
    }
}

/// Every identifier named `probe` in `source`, with the facts of its file.
fn with_probes(source: &str, check: impl for<'t> Fn(&Facts<'t>, Vec<tree_sitter::Node<'t>>)) {
    let tree = parse(source).expect("parse");
    let facts = Facts::new(source, tree.root_node(), Path::new("t.py"));
    let probes: Vec<_> = facts.index().occurrences("probe").to_vec();
    assert!(!probes.is_empty(), "no probe in {source}");
    check(&facts, probes);
}

#[test]
fn qualified_names_follow_every_import_spelling() {
    let cases = [
        ("import torch\nprobe = torch.cuda.amp.autocast\nprobe", "torch.cuda.amp.autocast"),
        ("import torch as T\nT.cuda.amp.probe", "torch.cuda.amp.probe"),
        ("import torch.cuda.amp as amp\namp.probe", "torch.cuda.amp.probe"),
        ("from torch.cuda import amp\namp.probe", "torch.cuda.amp.probe"),
        ("from torch.cuda.amp import autocast as probe\nprobe", "torch.cuda.amp.autocast"),
        ("import torch.utils.checkpoint\ntorch.utils.checkpoint.probe", "torch.utils.checkpoint.probe"),
        ("def f():\n    from torch.utils import checkpoint\n    checkpoint.probe", "torch.utils.checkpoint.probe"),
    ];
    for (source, expected) in cases {
        with_probes(source, |facts, probes| {
            let last = *probes.last().unwrap();
            let node =
                if last.parent().is_some_and(|p| p.kind_name() == "attribute") { last.parent().unwrap() } else { last };
            assert_eq!(facts.qualified_name(node).as_deref(), Some(expected), "{source}");
        });
    }
    for source in [
        "from torch.cuda.amp import probe\ndef f(probe):\n    probe",
        "from torch.cuda.amp import probe\nprobe = 3\nprobe",
        "probe",
    ] {
        with_probes(source, |facts, probes| {
            assert_eq!(facts.qualified_name(*probes.last().unwrap()), None, "{source}");
        });
    }
}

#[test]
fn a_long_attribute_chain_resolves_without_recursing_per_link() {
    // Generated code: one link per line, far more links than stack frames fit.
    let links: String = (0..20_000).map(|i| format!("    .link{i}\n")).collect();
    let source = format!("import torch.cuda.amp as amp\ny = (amp\n{links}    .probe)\n");
    with_probes(&source, |facts, probes| {
        let chain = probes[0].parent().unwrap();
        let name = facts.qualified_name(chain).unwrap();
        assert!(
            name.starts_with("torch.cuda.amp.link0.link1.") && name.ends_with(".link19999.probe"),
            "{}",
            &name[..40]
        );
        assert_eq!(name.matches('.').count(), 20_003);
    });
}

#[test]
fn grad_mode_by_every_route() {
    let disabled = [
        "import torch\nwith torch.no_grad():\n    probe()",
        "import torch\nwith torch.inference_mode(), open('f'):\n    probe()",
        "import torch\nwith torch.set_grad_enabled(False):\n    probe()",
        "import torch\n@torch.no_grad()\ndef f():\n    probe()",
        "import torch\n@torch.inference_mode\ndef f():\n    def g():\n        probe()\n    g()",
        "import torch\ntorch.set_grad_enabled(False)\nfor x in y:\n    probe()",
        "def helper():\n    probe()\ndef main():\n    with torch.no_grad():\n        helper()\n    with torch.inference_mode():\n        helper()",
        "class M:\n    def validation_step(self, batch):\n        probe()",
        "class T:\n    def run(self):\n        probe()\n    @torch.no_grad()\n    def evaluate(self):\n        self.run()",
    ];
    for source in disabled {
        with_probes(source, |facts, probes| assert!(facts.grad_disabled(probes[0]), "{source}"));
    }
    let enabled = [
        "probe()",
        "import torch\nwith torch.no_grad():\n    with torch.enable_grad():\n        probe()",
        "import torch\nwith torch.inference_mode(False):\n    probe()",
        "import torch\nwith torch.no_grad():\n    def f():\n        probe()\nf()",
        "def helper():\n    probe()\ndef main():\n    with torch.no_grad():\n        helper()\n    helper()",
        "def helper():\n    probe()\ncallbacks = [helper]",
        "def helper():\n    probe()",
        "def rec():\n    probe()\n    rec()",
        "import torch\nfor x in y:\n    probe()\ntorch.set_grad_enabled(False)",
        "import torch\ntorch.set_grad_enabled(False)\ntorch.set_grad_enabled(True)\nprobe()",
        "class M:\n    def training_step(self, batch):\n        probe()",
    ];
    for source in enabled {
        with_probes(source, |facts, probes| assert!(!facts.grad_disabled(probes[0]), "{source}"));
    }
}

#[test]
fn graph_attachment_of_values() {
    use TensorValue::*;
    let cases = [
        ("loss = criterion(out, y)\nprobe(loss)", Attached),
        ("import torch.nn.functional as F\nloss = F.cross_entropy(out, y)\nprobe(loss)", Attached),
        ("ce = nn.CrossEntropyLoss()\nl = ce(out, y)\nprobe(l)", Attached),
        ("out = model(x)\nprobe(out)", Attached),
        ("out = self.net(x)\nprobe(out.logits)", Attached),
        ("outputs = model(**batch)\nprobe(outputs.loss)", Attached),
        ("logits, loss = model(x)\nprobe(loss)", Attached),
        ("loss = loss_fn(a, b) / 4 + 0.1 * reg\nprobe(loss)", Attached),
        ("probe(model(x).mean().cpu())", Attached),
        ("loss = criterion(out, y)\nprobe(loss.item())", Detached),
        ("loss = criterion(out, y)\nprobe(loss.detach())", Detached),
        ("probe(float(criterion(out, y)))", Detached),
        ("probe(model(x).argmax(1))", Detached),
        ("probe(model(x).data)", Detached),
        ("probe(model(x).tolist())", Detached),
        ("with torch.no_grad():\n    out = model(x)\nprobe(out)", Detached),
        ("loss = criterion(out, y)\nloss = loss.item()\nprobe(loss)", Detached),
        ("probe(batch)", Unknown),
        ("probe(ResNet(x))", Unknown),
        ("from torch import Generator as make_model\nprobe(make_model())", Unknown),
        ("probe(torch.stack(xs))", Unknown),
    ];
    for (source, expected) in cases {
        with_probes(source, |facts, probes| {
            let call = probes[0].parent().expect("probe(...)");
            let argument = tree::positional_args(call)[0];
            assert_eq!(facts.tensor_value(argument), expected, "{source}");
        });
    }
}

#[test]
fn a_parenthesized_starred_item_in_an_expression_list_is_parsed_around() {
    // Valid since Python 3.8; tree-sitter-python reports a syntax error for each.
    for line in
        ["return a, *(rest)", "x = *(rest), a", "yield a, *(b for b in rest)", "for y in a, *(rest):\n        pass"]
    {
        let source = format!(
            "from torch.cuda.amp import autocast\n\ndef f(a, rest):\n    {line}\n    with autocast():\n        pass\n"
        );
        let report = Engine::get().lint(&source, std::path::Path::new("t.py"), &RuleSettings::default());
        assert_eq!(report.syntax_errors, Vec::new(), "{line}");
        // The code after it in the same function is linted.
        let line_of = |offset: usize| source[..offset].matches('\n').count() + 1;
        let lines: Vec<usize> = report.diagnostics.iter().map(|d| line_of(d.range.start)).collect();
        let with_line = line_of(source.rfind("autocast()").unwrap());
        assert!(lines.contains(&with_line), "{line}: {lines:?}");
    }
    // Multiplication and stars elsewhere are left alone.
    let source = "x = a *(b)\ny = f(*(c))\n";
    assert!(!oomlint::engine::parse(source).unwrap().root_node().has_error());
}

#[test]
fn a_bracket_left_open_before_a_definition_breaks_only_its_own_line() {
    // A call typed as far as its bracket: error recovery had read the function after it
    // as broken too, its decorator apart from it, and reported OOM002 there.
    let source = "import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n        \
                  loss = model(x).sum()\n        loss.backward()\n        scaled = loss.item(\n        \
                  optimizer.step()\n    return 1\n\n\n@torch.no_grad()\ndef evaluate(model, loader):\n    \
                  model.eval()\n    for x, y in loader:\n        out = model(x)\n        print(out.sum().item())\n";
    let tree = parse(source).unwrap();
    assert!(!tree.root_node().has_error());
    let mut cursor = tree.root_node().walk();
    let kinds: Vec<&str> = tree.root_node().named_children(&mut cursor).map(|n| n.kind_name()).collect();
    assert_eq!(kinds, ["import_statement", "function_definition", "decorated_definition"]);
    let report = Engine::get().lint(source, Path::new("t.py"), &RuleSettings::default());
    assert_eq!(report.diagnostics, Vec::new());
    let bracket = source.find("item(").unwrap() + "item".len();
    let errors: Vec<(usize, &str)> = report.syntax_errors.iter().map(|e| (e.offset, e.message.as_str())).collect();
    assert_eq!(errors, [(bracket, "cannot parse: `(` was never closed")]);
}

#[test]
fn code_nested_too_deeply_is_reported_and_the_rest_is_linted() {
    // Each level nests a call, its arguments and a lambda: 30,000 levels of the syntax
    // tree, where the query matcher once took minutes and then dropped findings.
    const LEVELS: usize = 10_000;
    let mut source = String::from(
        "import torch\nfrom torch.utils.checkpoint import checkpoint\nbefore = torch.load('a.pt')\n\
         for block in blocks:\n    y = (\n",
    );
    (0..LEVELS).for_each(|i| source.push_str(&format!("        checkpoint(lambda x{i}:\n")));
    source.push_str(&format!("        block(x0){}\n    )\nafter = torch.load('b.pt')\n", ")".repeat(LEVELS)));
    let started = std::time::Instant::now();
    let report = Engine::get().lint(&source, Path::new("t.py"), &RuleSettings::default());
    let line_of = |offset: usize| source[..offset].matches('\n').count() + 1;
    let [error] = report.syntax_errors.as_slice() else { panic!("{:?}", report.syntax_errors) };
    assert!(error.message.starts_with("too deeply nested to analyse"), "{}", error.message);
    let deep_from = line_of(error.offset);
    assert!((6..6 + LEVELS).contains(&deep_from), "{deep_from}");
    let lines = |code: &str| {
        report.diagnostics.iter().filter(|d| d.code == code).map(|d| line_of(d.range.start)).collect::<Vec<_>>()
    };
    // The code around the deep expression is linted, and so is every level above the
    // place reported: each lambda there is reported as recomputed by `checkpoint`.
    assert_eq!(lines("OOM008"), [3, LEVELS + 8]);
    assert_eq!(lines("OOM004"), [6]);
    assert!(lines("OOM005") == (6..=deep_from).collect::<Vec<_>>(), "reported down to line {deep_from}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
}

#[test]
fn the_parent_index_agrees_with_the_tree() {
    // Statements of every size, nested scopes, an error, and a zero-width missing node.
    let source = "import torch\n@dec\ndef f(x):\n    return [lambda y: (y + x) for _ in x]\nclass C:\n    def g(self):\n        \
                  return 1\nx = (1 +\ny = 2\ndef h(:\n    pass\n\nz = torch.load(x)\n";
    let tree = parse(source).unwrap();
    let root = tree.root_node();
    assert!(tree::descendants(root).any(|n| n.is_missing()), "the text has missing nodes");
    let _index = tree::index_parents(root);
    let nodes: Vec<_> = tree::descendants(root).collect();
    // Asked in reverse as well as in order: the index is built as questions come.
    for node in nodes.iter().rev().chain(&nodes) {
        assert_eq!(tree::parent(*node).map(|p| p.id()), node.parent().map(|p| p.id()), "{node:?}");
    }
}
