//! OOM002 eval-without-no-grad: a forward pass in evaluation code with autograd on.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::heuristics;
use crate::engine::facts::tensors::GRAPH_KEEPING_METHODS;
use crate::engine::tree::{self, KindName};
use crate::fix::{Applicability, Edit, Fix, edits};
use std::cell::RefCell;
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM002-eval-without-no-grad");

pub static RULE: Rule = Rule {
    code: "OOM002",
    slug: "eval-without-no-grad",
    default_severity: Severity::Warning,
    preview: false,
    summary: "A forward pass in evaluation code runs without `torch.no_grad()`",
    cost: Cost::Memory {
        figure: Figure::Peak,
        bad: "peak for one evaluation batch of 64 with autograd on",
        good: "under `torch.no_grad()`",
    },
    fix_title: "Run the evaluation under `with torch.no_grad():` or `@torch.no_grad()`",
    docs: FILES.1,
    query: FILES.0,
    // A network of any name counts once it is put in eval mode (`G_AB.eval()`).
    could_match: |source| {
        (heuristics::mentions_forward_call(source) || text_test::contains(source, ".eval()"))
            && heuristics::mentions_evaluation(source)
            && may_give_a_reason(source)
    },
    reads_project: true,
    check: Check::Query(check),
};

/// Whether the text may hold what `evaluation_reason` needs for any call: a name of an
/// evaluation function or of evaluation data (`heuristics::names_evaluation`), or a mode
/// call that may put a network in eval mode (`eval(`, or `train(` in a text that says
/// `False`). Helpers that only say "value" or "interval" are not parsed for this rule (2
/// files of pytorch/examples' `fx/`).
fn may_give_a_reason(source: &str) -> bool {
    let calls = |name: &str| text_test::some_call(source, |before| text_test::last_word(before) == name);
    heuristics::names_evaluation(source) || calls("eval") || (text_test::contains(source, "False") && calls("train"))
}

/// Calls that mark code as training, not evaluation.
const TRAINING_CALLS: &[&str] = &["backward", "manual_backward", "step", "zero_grad"];

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let Some(call) = found.get("forward") else { return };
    // Most calls lie outside every place evaluation code can be: said once per file.
    if !may_be_evaluation(checker, call) {
        return;
    }
    // `model(x)` is named like a network and called with arguments: two patterns find it,
    // and what the check decides depends on the call alone.
    if !first_check_of(checker, call) {
        return;
    }
    let facts = checker.facts;
    let place = Place::of(call, facts.root);
    // File-local questions first: most calls are not in evaluation code, and whether a
    // call runs a network may ask the rest of the project about a helper's callers.
    let Some(reason) = evaluation_reason(checker, call, &place) else { return };
    // The region one `no_grad` would cover: the loop around the call, else the function.
    let region = place.loop_.unwrap_or(place.body);
    let validates_after_step =
        place.function.is_some_and(|f| region.id() == f.id() && validates_after_training(checker, f, call));
    if trains(checker, region) && !validates_after_step {
        return;
    }
    // A method of this class (`self._destroy_policy(policy)`) runs a network only if its
    // body does: a name that sounds like one says nothing.
    let own_method = call.child_by_field_id(field::FUNCTION).is_some_and(|f| f.kind_name() == "attribute")
        && facts.local_definition(call).is_some();
    let forward = if own_method {
        runs_network_through_helper(checker, call)
    } else {
        facts.is_forward_call(call)
            || runs_network_through_helper(checker, call)
            || called_after_own_eval(checker, call, place.body)
    };
    if !forward
        || facts.is_frozen_module(call)
        || network_on_cpu(checker, call)
        || shape_check(checker, call, &place)
    {
        return;
    }
    if facts.grad_disabled(call) || callers_decide(checker, call, &place) {
        return;
    }
    let callee = call.child_by_field_id(field::FUNCTION).map(|f| checker.text(f)).unwrap_or("model");
    let message = format!(
        "`{callee}(...)` runs {reason} with autograd on: every activation is kept for a backward pass that never comes"
    );
    let function = place.function.filter(|f| f.kind_name() == "function_definition");
    let loop_ = place.loop_;
    // An evaluation function is decorated as a whole; otherwise the loop is wrapped.
    let decorate = function.filter(|_| loop_.is_none() || reason.starts_with("in evaluation function"));
    let (help, fix) = match (decorate, loop_) {
        // The same function trains: only its validation part may go under `no_grad`.
        _ if validates_after_step => (
            "run the validation after the training step under `with torch.no_grad():`; `.eval()` alone does not \
             disable autograd"
                .to_string(),
            None,
        ),
        (Some(function), _) => {
            let name = function.child_by_field_id(field::NAME).map_or("", |n| checker.text(n));
            let help = format!("decorate `{name}` with `@torch.no_grad()`; `.eval()` alone does not disable autograd");
            (help, decorate_fix(checker, function))
        }
        (None, Some(loop_)) => (
            "wrap the evaluation loop in `with torch.no_grad():`; `.eval()` alone does not disable autograd"
                .to_string(),
            wrap_fix(checker, loop_),
        ),
        (None, None) => {
            ("run it under `with torch.no_grad():`; `.eval()` alone does not disable autograd".to_string(), None)
        }
    };
    // A function that runs with autograd on because a caller in another file runs it so:
    // that caller is the explanation.
    let reason = place.function.and_then(|f| facts.cross_file_reason(f));
    if let Some(diagnostic) = checker.report_once(region.id(), call, Severity::Warning, message, help) {
        diagnostic.fix = fix;
        diagnostic.related.extend(reason);
    }
}

/// Where a call runs, found by one climb from it: the check asks for its loop, its
/// function and its body several times over, for every call a network could make.
struct Place<'t> {
    /// The innermost `for` or `while` loop around the call in its function.
    loop_: Option<Node<'t>>,
    /// The `for` loops around the call in its function, innermost first.
    for_loops: Vec<Node<'t>>,
    /// The innermost function or lambda around the call.
    function: Option<Node<'t>>,
    /// That function, else the module (`tree::enclosing_body`).
    body: Node<'t>,
}

impl<'t> Place<'t> {
    fn of(call: Node<'t>, root: Node<'t>) -> Place<'t> {
        let mut place = Place { loop_: None, for_loops: Vec::new(), function: None, body: root };
        for ancestor in tree::ancestors(call) {
            let kind = ancestor.kind_name();
            if tree::is_function(kind) {
                place.function = Some(ancestor);
                place.body = ancestor;
                break;
            }
            if tree::is_loop(kind) {
                place.loop_ = place.loop_.or(Some(ancestor));
            }
            if kind == "for_statement" {
                place.for_loops.push(ancestor);
            }
        }
        place
    }
}

/// Whether this is the first match of the file's lint to hand `call` to the check.
fn first_check_of(checker: &Checker, call: Node) -> bool {
    let checked = checker.facts.memo("OOM002 calls checked", None, || RefCell::new(foldhash::HashSet::<usize>::default()));
    checked.borrow_mut().insert(call.id())
}

/// `greedy_decode(model, src)`, `self._run_batch(batch)`: a call of a function of this file
/// that runs a network it is handed (or `self`'s): the forward pass happens there, with the
/// grad mode of this call site.
fn runs_network_through_helper<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> bool {
    let facts = checker.facts;
    let Some(helper) = facts.local_definition(call) else { return false };
    let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
    let is_method = function.kind_name() == "attribute";
    let source = checker.source();
    let handed_network = tree::positional_args(call).into_iter().any(|a| {
        a.kind_name() == "identifier" && heuristics::is_model_name(tree::text(a, source))
            || a.kind_name() == "attribute" && tree::last_name(a, source).is_some_and(heuristics::is_model_name)
    });
    // Answered once per helper: a helper is called from many places.
    (handed_network || is_method)
        && *facts.memo("OOM002 helper runs a network with autograd on", Some(helper), || {
            tree::descendants(helper).any(|n| {
                n.kind_name() == "call"
                    && tree::enclosing_function(n).is_some_and(|f| f.id() == helper.id())
                    && facts.is_forward_call(n)
                    && !facts.grad_disabled(n)
            })
        })
}

/// `model.train() ... loss.backward(); optimizer.step()` then `model.eval(); model(x)`: a
/// function without a loop (full-batch training) that validates after its training step.
fn validates_after_training<'t>(checker: &Checker<'_, 't>, function: Node<'t>, call: Node<'t>) -> bool {
    let Some(eval_call) = last_eval_call(checker, call, function) else { return false };
    let source = checker.source();
    checker.facts.calls_named(TRAINING_CALLS, function).into_iter().all(|c| {
        c.end_byte() <= eval_call.start_byte()
            || tree::method_receiver(c).is_none_or(|r| tree::text(r, source).contains("env"))
    })
}

/// A network the file keeps on the CPU: bound from a load that maps it there
/// (`Net.load_from_checkpoint(path, map_location="cpu")`) or moved there (`.cpu()`,
/// `.to("cpu")`), through rebindings such as `model = model.eval()`, and never moved to an
/// accelerator in this file. Its activations take host memory, which is not what this rule
/// is about.
fn network_on_cpu<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> bool {
    let source = checker.source();
    let Some(mut network) = call.child_by_field_id(field::FUNCTION).map(|f| match tree::last_name(f, source) {
        Some("forward") => f.child_by_field_id(field::OBJECT).unwrap_or(f),
        _ => f,
    }) else {
        return false;
    };
    if network.kind_name() != "identifier" {
        return false;
    }
    let name = checker.text(network);
    if moved_to_accelerator(checker).contains(name) {
        return false;
    }
    // Follow `name = <value>` back through `model = model.eval()` rebindings.
    for _ in 0..8 {
        let Some(binding) = checker.facts.index().lookup(name, network) else { return false };
        let crate::engine::facts::index::BindingKind::Value(mut value) = binding.kind else { return false };
        // The outermost move decides: `load(..., map_location="cpu").cuda()` is on the GPU.
        while value.kind_name() == "call" {
            let Some(receiver) = tree::method_receiver(value) else { break };
            match tree::callee_name(value, source) {
                Some("cpu") => return true,
                Some("to") if to_cpu(value, source) => return true,
                Some("to" | "cuda") => return false,
                Some("eval" | "train" | "half" | "float" | "requires_grad_") => value = receiver,
                _ => break,
            }
        }
        if value.kind_name() == "identifier" && checker.text(value) == name {
            network = value;
            continue;
        }
        return value.kind_name() == "call"
            && tree::keyword_arg(value, "map_location", source).is_some_and(|m| is_cpu_text(tree::text(m, source)));
    }
    false
}

/// Read over the whole file (`crate::rules::file_wide_words`): the moves to an accelerator.
pub(super) const FILE_WIDE_WORDS: &[&str] = &["cuda", "to"];

/// The receivers the file moves to an accelerator anywhere (`model.cuda()`,
/// `model.to(device)`), as spelled: worked out once per file (and kept for an editor's
/// partial relints, which `FILE_WIDE_WORDS` guard), asked per forward call.
fn moved_to_accelerator(checker: &Checker) -> std::sync::Arc<std::collections::HashSet<String>> {
    checker.facts.file_wide("OOM002 moved to an accelerator", || {
        let source = checker.source();
        checker
            .facts
            .calls_named(&["cuda", "to"], checker.facts.root)
            .into_iter()
            .filter(|&mv| !(tree::callee_name(mv, source) == Some("to") && to_cpu(mv, source)))
            .filter_map(|mv| tree::method_receiver(mv).map(|r| tree::text(r, source)))
            // Spelled alike by most moves (`x.to(device)` in every step): copied once each.
            .collect::<std::collections::HashSet<&str>>()
            .into_iter()
            .map(str::to_owned)
            .collect()
    })
}

/// `.to("cpu")`, `.to(torch.device("cpu"))`: a move to the host.
fn to_cpu(mv: Node, source: &str) -> bool {
    tree::positional_args(mv).first().is_some_and(|a| is_cpu_text(tree::text(*a, source)))
}

/// `y = net(torch.randn(2, 3, 32, 32)); print(y.size())`: one forward pass, outside any
/// loop, on an input made up on the spot. A shape check at the bottom of a model file, not
/// evaluation: nothing repeats, and the input is a sample or two.
fn shape_check<'t>(checker: &Checker<'_, 't>, call: Node<'t>, place: &Place<'t>) -> bool {
    const SYNTHETIC: &[&str] = &["randn", "rand", "randint", "zeros", "ones", "empty"];
    let source = checker.source();
    let made_up = |arg: Node<'t>| {
        let arg = tree::unparenthesize(arg);
        let value = match arg.kind_name() {
            "identifier" => match checker.facts.index().lookup(tree::text(arg, source), arg).map(|b| b.kind) {
                Some(crate::engine::facts::index::BindingKind::Value(value)) => value,
                _ => return false,
            },
            _ => arg,
        };
        value.kind_name() == "call"
            && tree::callee_name(value, source).is_some_and(|c| SYNTHETIC.contains(&c))
            && checker.facts.qualified_name(value.child_by_field_id(field::FUNCTION).unwrap_or(value)).is_some_and(|q| q.starts_with("torch."))
    };
    place.loop_.is_none() && !tree::positional_args(call).is_empty() && tree::positional_args(call).into_iter().all(made_up)
}

/// `"cpu"`, `torch.device("cpu")`, `{"cuda:0": "cpu"}`: a place on the host.
fn is_cpu_text(text: &str) -> bool {
    text.contains("\"cpu\"") || text.contains("'cpu'")
}

/// Where the graph goes is up to the callers: the function hands the forward's output back
/// (`return model(x, t)`, a sampler's noise prediction that guidance differentiates), or it
/// is a callback passed to code elsewhere and never called here.
fn callers_decide<'t>(checker: &Checker<'_, 't>, call: Node<'t>, place: &Place<'t>) -> bool {
    let Some(function) = place.function.filter(|f| f.kind_name() == "function_definition") else {
        return false;
    };
    let returned = place.loop_.is_none()
        && tree::ancestors_in_function(call).find(|a| a.kind_name() == "return_statement").is_some_and(|r| {
            let mut value = call;
            // `return model(x).float()`, `return model(x), state`
            for parent in tree::ancestors_in_function(call) {
                if parent.id() == r.id() {
                    return true;
                }
                match parent.kind_name() {
                    "expression_list" | "tuple" | "parenthesized_expression" => {}
                    "attribute" if parent.child_by_field_id(field::OBJECT).is_some_and(|o| o.id() == value.id()) => {}
                    "call"
                        if parent.child_by_field_id(field::FUNCTION).is_some_and(|f| {
                            tree::last_name(f, checker.source()).is_some_and(|m| GRAPH_KEEPING_METHODS.contains(&m))
                        }) => {}
                    _ => return false,
                }
                value = parent;
            }
            false
        });
    returned || returns_graph(checker, place, function) || only_passed_as_callback(checker, function)
}

/// A function without a loop around `call` that returns a graph-attached value (`return
/// values, log_prob, entropy` of a policy's `evaluate_actions`): its callers backpropagate
/// or not.
fn returns_graph<'t>(checker: &Checker<'_, 't>, place: &Place<'t>, function: Node<'t>) -> bool {
    place.loop_.is_none()
        && tree::descendants(function)
            .filter(|n| n.kind_name() == "return_statement")
            .filter(|r| tree::enclosing_function(*r).is_some_and(|f| f.id() == function.id()))
            .filter_map(|r| r.named_child(0))
            .flat_map(|v| match v.kind_name() {
                "expression_list" | "tuple" => v.named_children(&mut v.walk()).collect(),
                _ => vec![v],
            })
            .any(|v| checker.facts.tensor_value(v) == crate::engine::facts::tensors::TensorValue::Attached)
}

/// A function whose name is never called in this file, only handed to other code.
fn only_passed_as_callback<'t>(checker: &Checker<'_, 't>, function: Node<'t>) -> bool {
    let Some(name) = function.child_by_field_id(field::NAME) else { return false };
    let uses: Vec<Node> = checker
        .facts
        .index()
        .occurrences(checker.text(name))
        .iter()
        .copied()
        .filter(|n| n.id() != name.id() && tree::is_name_reference(*n))
        .collect();
    // Passed as an argument (`run(eval_fn)`, `hook=eval_fn`) or returned by a factory.
    !uses.is_empty()
        && uses.iter().all(|u| {
            tree::parent(*u)
                .is_some_and(|p| matches!(p.kind_name(), "argument_list" | "keyword_argument" | "return_statement"))
        })
}

/// `@torch.no_grad()` above the function (and its other decorators). Unsafe: code in it
/// that needs gradients would break.
fn decorate_fix(checker: &Checker, function: Node) -> Option<Fix> {
    let source = checker.source();
    let (torch, import) = edits::torch_module(checker.facts);
    let top = tree::parent(function).filter(|p| p.kind_name() == "decorated_definition").unwrap_or(function);
    let indent = edits::line_indent(source, top.start_byte());
    let decorator = Edit::insert(top.start_byte(), format!("@{torch}.no_grad()\n{indent}"));
    // The import first: both go at the file's start when the function opens the file.
    let edits = import.into_iter().chain([decorator]).collect();
    Some(Fix::new(Applicability::Unsafe, format!("Decorate with `@{torch}.no_grad()`"), edits))
}

/// `with torch.no_grad():` around the loop, the loop indented one level. Unsafe: code in
/// the loop that needs gradients would break.
fn wrap_fix(checker: &Checker, loop_: Node) -> Option<Fix> {
    let source = checker.source();
    let (torch, import) = edits::torch_module(checker.facts);
    let indent = edits::line_indent(source, loop_.start_byte());
    if indent.len() != loop_.start_position().column {
        return None; // the loop does not start its line (`x = 1; for ...`)
    }
    let unit = edits::indent_unit(source, loop_);
    let opening = Edit::insert(loop_.start_byte(), format!("with {torch}.no_grad():\n{indent}{unit}"));
    // The import first: both go at the file's start when the loop opens the file.
    let mut all: Vec<Edit> = import.into_iter().collect();
    all.push(opening);
    all.extend(edits::indent_lines(checker.facts, loop_, &unit));
    Some(Fix::new(Applicability::Unsafe, format!("Wrap the loop in `with {torch}.no_grad():`"), all))
}

/// Why this call is evaluation code, in words for the message; `None` when it is not.
fn evaluation_reason<'t>(checker: &Checker<'_, 't>, call: Node<'t>, place: &Place<'t>) -> Option<String> {
    if let Some(function) = place.function.filter(|f| f.kind_name() == "function_definition") {
        match &*what_the_name_says(checker, function) {
            NameSays::NotEvaluation => return None,
            NameSays::Evaluation(reason) => return Some(reason.clone()),
            NameSays::Nothing => {}
        }
    }
    for &loop_ in &place.for_loops {
        if let Some(data) = &*evaluation_data(checker, loop_) {
            return Some(format!("in a loop over `{data}`"));
        }
    }
    after_eval_call(checker, call, place.body).map(|receiver| format!("after `{receiver}.eval()`"))
}

/// Whether `call` lies where `evaluation_reason` could find a reason: in a function
/// named for evaluation, in a `for` loop over evaluation data, or after a mode call that
/// puts a network in eval mode, in that call's function (or module). Each reason's places
/// are found once per file from the identifiers that spell them, not climbed to from each
/// of the thousands of calls the patterns find; without the file's identifiers (a
/// partial relint), every call may be.
fn may_be_evaluation(checker: &Checker, call: Node) -> bool {
    #[cfg(test)]
    if tests::EVERY_CALL_MAY_BE_EVALUATION.get() {
        return true;
    }
    let regions = checker.facts.memo("OOM002 where evaluation may be", None, || evaluation_regions(checker));
    regions.as_ref().as_ref().is_none_or(|regions| {
        let at = call.start_byte();
        let after = regions.partition_point(|region| region.start <= at);
        after > 0 && at < regions[after - 1].end
    })
}

/// The byte ranges of `may_be_evaluation`, sorted and disjoint, or `None` when the
/// file's identifiers are not known.
fn evaluation_regions(checker: &Checker) -> Option<Vec<std::ops::Range<usize>>> {
    let facts = checker.facts;
    let index = facts.index();
    let pytest = heuristics::is_pytest_file(facts.path);
    let mut regions = Vec::new();
    let source = checker.source();
    for (spelled, names) in index.identifiers_spelled(heuristics::may_name_evaluation)? {
        // A function named for evaluation (what `what_the_name_says` may call evaluation).
        let names_function = heuristics::is_eval_function_name(spelled, pytest);
        // A loop over evaluation data (what `evaluation_data` looks for in an iterable).
        let names_data = heuristics::is_eval_data_name(spelled);
        for &name in names {
            if names_function
                && let Some(function) = tree::parent(name).filter(|f| f.kind_name() == "function_definition")
                && function.child_by_field_id(field::NAME).is_some_and(|n| n.id() == name.id())
            {
                regions.push(function.byte_range());
            }
            // The loop whose iterable holds the name is the first `for` above it: no block
            // lies between (an expression holds none), and the iterable of a `for` further
            // out cannot hold a statement. So the climb stops at the first block or `for`,
            // a few levels up, not at the module (each level is a parent lookup).
            if names_data
                && let Some(loop_) = tree::ancestors(name)
                    .find(|a| matches!(a.kind_name(), "for_statement" | "block" | "module"))
                    .filter(|a| a.kind_name() == "for_statement")
                && loop_.child_by_field_id(field::RIGHT).is_some_and(|r| r.byte_range().contains(&name.start_byte()))
            {
                regions.push(loop_.byte_range());
            }
        }
    }
    // After a mode call into eval mode, to the end of its body (`first_evaluating_mode_call`).
    for mode_call in facts.calls_named(&["eval", "train"], facts.root) {
        if evaluates_its_receiver(mode_call, source) {
            regions.push(mode_call.start_byte()..tree::enclosing_body(mode_call).end_byte());
        }
    }
    regions.sort_by_key(|region| region.start);
    let mut merged: Vec<std::ops::Range<usize>> = Vec::with_capacity(regions.len());
    for region in regions {
        match merged.last_mut() {
            Some(last) if region.start <= last.end => last.end = last.end.max(region.end),
            _ => merged.push(region),
        }
    }
    Some(merged)
}

/// What the name of a function says of the calls in it.
enum NameSays {
    /// A hook that runs under `no_grad` already, a training step, a test case.
    NotEvaluation,
    /// An evaluation function: the reason, in words for the message.
    Evaluation(String),
    Nothing,
}

/// What `function`'s name says, worked out once per function: every call in it asks.
fn what_the_name_says(checker: &Checker, function: Node) -> std::rc::Rc<NameSays> {
    checker.facts.memo("OOM002 what a function's name says", Some(function), || {
        let Some(name) = function.child_by_field_id(field::NAME).map(|n| checker.text(n)) else {
            return NameSays::Nothing;
        };
        if heuristics::is_framework_no_grad_hook(name) || name == "training_step" || is_test_case(checker, function) {
            NameSays::NotEvaluation
        } else if heuristics::is_eval_function_name(name, heuristics::is_pytest_file(checker.facts.path)) {
            NameSays::Evaluation(format!("in evaluation function `{name}`"))
        } else {
            NameSays::Nothing
        }
    })
}

/// The first name in a `for` loop's iterable that names evaluation data (`val_loader`),
/// worked out once per loop: every call in it asks.
fn evaluation_data(checker: &Checker, loop_: Node) -> std::rc::Rc<Option<String>> {
    checker.facts.memo("OOM002 a loop's evaluation data", Some(loop_), || {
        let iterable = loop_.child_by_field_id(field::RIGHT)?;
        tree::descendants(iterable)
            .filter(|n| n.kind_name() == "identifier")
            .map(|n| checker.text(n))
            .find(|n| heuristics::is_eval_data_name(n))
            .map(str::to_owned)
    })
}

/// A pytest test function or a unittest test method: memory there is not worth a finding.
fn is_test_case(checker: &Checker, function: Node) -> bool {
    let name = function.child_by_field_id(field::NAME).map(|n| checker.text(n)).unwrap_or("");
    if !name.starts_with("test") {
        return false;
    }
    let class = tree::ancestors(function).find(|a| a.kind_name() == "class_definition");
    let class_name = class.and_then(|c| c.child_by_field_id(field::NAME)).map(|n| checker.text(n)).unwrap_or("");
    heuristics::is_pytest_file(checker.facts.path) || class_name.contains("Test")
}

/// The network a forward call runs: `model` for `model(x)`, `self.model(x)` and
/// `model.forward(x)`.
fn network_name<'t>(checker: &Checker<'_, 't>, call: Node<'t>, body: Node<'t>) -> Option<&'t str> {
    let function = call.child_by_field_id(field::FUNCTION)?;
    let source = checker.source();
    match tree::last_name(function, source)? {
        "forward" => tree::last_name(function.child_by_field_id(field::OBJECT)?, source),
        name if heuristics::is_model_name(name) || put_in_eval_mode_before(checker, call, body, name) => Some(name),
        // A helper handed the network: `greedy_decode(model, src)`.
        _ => tree::positional_args(call)
            .into_iter()
            .filter_map(|a| tree::last_name(a, source))
            .find(|a| heuristics::is_model_name(a)),
    }
}

/// `G_AB.eval()` then `G_AB(x)`: whatever its name, an object put in eval mode and then
/// called in the same body is a network, and that call a forward pass.
fn called_after_own_eval<'t>(checker: &Checker<'_, 't>, call: Node<'t>, body: Node<'t>) -> bool {
    let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
    matches!(function.kind_name(), "identifier" | "attribute")
        && tree::last_name(function, checker.source())
            .is_some_and(|name| put_in_eval_mode_before(checker, call, body, name))
}

/// Whether `name.eval()` is called before `call` in `body`, the body `call` runs in.
fn put_in_eval_mode_before<'t>(checker: &Checker<'_, 't>, call: Node<'t>, body: Node<'t>, name: &str) -> bool {
    let source = checker.source();
    mode_calls(checker, body).iter().any(|&mode_call| {
        mode_call.start_byte() < call.start_byte()
            && tree::callee_name(mode_call, source) == Some("eval")
            && tree::positional_args(mode_call).is_empty()
            && tree::method_receiver(mode_call).is_some_and(|r| tree::last_name(r, source) == Some(name))
    })
}

/// The `.eval()` and `.train(...)` calls made in `body` itself (not in functions nested in
/// it), in order. Asked for every network call of the body, which in a training script's
/// `main()` is hundreds of times: worked out once per body.
fn mode_calls<'t>(checker: &Checker<'_, 't>, body: Node<'t>) -> std::rc::Rc<[Node<'t>]> {
    checker.facts.memo_nodes("OOM002 mode calls", body, || {
        let mut calls = checker.facts.calls_named(&["eval", "train"], body);
        calls.retain(|&mode_call| tree::enclosing_body(mode_call).id() == body.id());
        calls
    })
}

/// The receiver of a `network.eval()` (or `network.train(False)`) made before `call` in
/// `body` (the function or module `call` runs in, `tree::enclosing_body`) on the network
/// `call` runs, and not undone by `network.train()`.
fn after_eval_call<'t>(checker: &Checker<'_, 't>, call: Node<'t>, body: Node<'t>) -> Option<&'t str> {
    last_eval_call(checker, call, body).and_then(tree::method_receiver).map(|r| checker.text(r))
}

/// The `network.eval()` call that `after_eval_call` describes.
fn last_eval_call<'t>(checker: &Checker<'_, 't>, call: Node<'t>, body: Node<'t>) -> Option<Node<'t>> {
    // Most bodies put no network in eval mode before a call (a training function's
    // `model.train()` does not): then which network it runs does not matter.
    if first_evaluating_mode_call(checker, body).is_none_or(|first| first >= call.start_byte()) {
        return None;
    }
    // A method helper (`self._run_batch(batch)`) runs whichever network `self` holds.
    let network = network_name(checker, call, body);
    let source = checker.source();
    let mut evaluated = None;
    for &mode_call in mode_calls(checker, body).iter() {
        if mode_call.start_byte() >= call.start_byte() {
            break;
        }
        let Some(receiver) = tree::method_receiver(mode_call) else { continue };
        if network.is_some_and(|n| tree::last_name(receiver, source) != Some(n)) {
            continue;
        }
        evaluated = evaluates(mode_call, source).then_some(mode_call);
    }
    evaluated
}

/// Where the first mode call of `body` that puts its receiver in eval mode starts: no
/// call before it runs after an `.eval()`. Asked for every call of the body.
fn first_evaluating_mode_call<'t>(checker: &Checker<'_, 't>, body: Node<'t>) -> Option<usize> {
    let source = checker.source();
    *checker.facts.memo("OOM002 first evaluating mode call", Some(body), || {
        mode_calls(checker, body)
            .iter()
            .find(|&&mode_call| evaluates_its_receiver(mode_call, source))
            .map(|mode_call| mode_call.start_byte())
    })
}

/// A mode call on a receiver (`net.eval()`, not a bare `eval()`) that puts it in eval
/// mode: what starts the places after an eval-mode call.
fn evaluates_its_receiver(mode_call: Node, source: &str) -> bool {
    tree::method_receiver(mode_call).is_some() && evaluates(mode_call, source)
}

/// Whether a mode call puts its receiver in eval mode: `.eval()`, `.train(False)`.
fn evaluates(mode_call: Node, source: &str) -> bool {
    let args = tree::positional_args(mode_call);
    match tree::callee_name(mode_call, source) {
        Some("eval") => args.is_empty(),
        _ => args.first().is_some_and(|a| tree::text(*a, source) == "False"),
    }
}

/// Whether `region` runs a training step: `loss.backward()`, `optimizer.step()`. An
/// environment's `env.step(action)` in an RL loop is not one.
fn trains<'t>(checker: &Checker<'_, 't>, region: Node<'t>) -> bool {
    let source = checker.source();
    checker.facts.calls_named(TRAINING_CALLS, region).into_iter().any(|c| {
        let Some(receiver) = tree::method_receiver(c) else { return false };
        let environment = tree::last_name(receiver, source).is_some_and(|name| {
            heuristics::words(name).iter().any(|w| matches!(w.as_str(), "env" | "envs" | "environment"))
        });
        tree::contains(region, c) && !(environment && tree::callee_name(c, source) == Some("step"))
    })
}

#[cfg(test)]
mod tests {
    use crate::engine::facts::heuristics;
    use crate::engine::{Engine, RuleSettings};
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        /// Makes `may_be_evaluation` let every call through, as the check did before it.
        pub(super) static EVERY_CALL_MAY_BE_EVALUATION: Cell<bool> = const { Cell::new(false) };
    }

    /// Over every fixture and test case and the script below, linted as a training script
    /// and as a pytest file: wherever the rule reports a call, its text test passes.
    #[test]
    fn the_text_test_passes_wherever_the_rule_reports() {
        let every_file = Box::leak(Box::new(crate::rules::Rule { could_match: |_| true, ..super::RULE }));
        let engine = Engine::compile(&[every_file]).expect("compiles");
        let settings = RuleSettings { enabled: vec![true], ..RuleSettings::default() };
        let mut sources = crate::engine::fixture_and_test_sources();
        sources.push(REASONS.to_string());
        let mut reported = 0;
        for source in &sources {
            for path in ["train.py", "test_eval.py"] {
                let found = engine.lint(source, Path::new(path), &settings).diagnostics.len();
                assert!(found == 0 || (super::RULE.could_match)(source), "{path}: {source}");
                reported += found;
            }
        }
        assert!(reported > 20, "the sources hold OOM002 findings ({reported})");
        // A comment that says "value" is no reason.
        let helper = "# the value of an input\nimport torch\nout = model(x)\n";
        assert!(heuristics::mentions_evaluation(helper) && !(super::RULE.could_match)(helper));
        // Each kind of reason passes alone (`interval` passes `mentions_evaluation`, nothing
        // else), and so does a name past ASCII, which the tree decides.
        let reasons = [
            "def run_validation(model):\n",
            "for x in train_val_loader:\n",
            "def évaluer(model):\n",
            "net.eval ()  # interval\n",
            "net.train(False)  # interval\n",
        ];
        for reason in reasons {
            assert!((super::RULE.could_match)(&format!("import torch\n{reason}    out = model(x)\n")), "{reason}");
        }
    }

    /// A script with a reason of each kind.
    const REASONS: &str = "def log_validation(unet):\n    return unet(x)\n\nfor batch in val_loader:\n    y = model(batch)\n\n\
             def run(net):\n    net.train(False)\n    def inner():\n        pass\n    net(x)\n\nmodel.eval()\nout = model(x)\n";

    /// The places `may_be_evaluation` keeps take in every call the whole check reports:
    /// over every fixture and test case, and a script with a reason of each kind, linted
    /// as a training script and as a pytest file, the findings with it are those without
    /// it. Leaving out any one kind of place fails this test.
    #[test]
    fn the_places_evaluation_may_be_hold_every_call_the_check_reports() {
        let mut sources = crate::engine::fixture_and_test_sources();
        sources.push(REASONS.to_string());
        let engine = Engine::get();
        let settings = RuleSettings::default();
        let mut reported = 0;
        for source in &sources {
            for path in ["train.py", "test_eval.py"] {
                let lint = |every: bool| {
                    EVERY_CALL_MAY_BE_EVALUATION.set(every);
                    let report = engine.lint(source, Path::new(path), &settings);
                    EVERY_CALL_MAY_BE_EVALUATION.set(false);
                    report.diagnostics.into_iter().filter(|d| d.code == "OOM002").map(|d| (d.range, d.message)).collect::<Vec<_>>()
                };
                let (kept, every) = (lint(false), lint(true));
                assert_eq!(kept, every, "{path}: {source}");
                reported += kept.len();
            }
        }
        assert!(reported > 20, "the sources hold OOM002 findings ({reported})");
    }
}
