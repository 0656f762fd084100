//! OOM006 empty-cache-in-loop: `torch.cuda.empty_cache()` on every iteration of a
//! training or evaluation loop, directly or through a helper the loop calls.

use crate::engine::field;
use super::{Check, Cost, DeviceMeasure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::Facts;
use crate::engine::facts::heuristics::{is_forward_method_name, words};
use crate::engine::facts::out_of_memory::catches_out_of_memory;
use crate::engine::tree::{self, KindName};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM006-empty-cache-in-loop");

pub static RULE: Rule = Rule {
    code: "OOM006",
    slug: "empty-cache-in-loop",
    default_severity: Severity::Warning,
    preview: false,
    summary: "`torch.cuda.empty_cache()` on every step of a training or evaluation loop",
    cost: Cost::Device {
        measure: DeviceMeasure::StepTime {
            bad: "with `torch.cuda.empty_cache()` after every step",
            good: "without it",
        },
        documented: "`empty_cache()` frees no tensor: it hands the caching allocator's unused blocks back to the \
                     driver, which the next step must get again through `cudaMalloc` (the cache exists so that \
                     allocations need neither `cudaMalloc` nor a device synchronization), and it does not increase \
                     the memory available to PyTorch",
        source: "PyTorch docs, CUDA semantics, \"Memory management\" \
                 (https://pytorch.org/docs/stable/notes/cuda.html#cuda-memory-management)",
    },
    fix_title: "Call `empty_cache()` once, outside the loop",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| text_test::contains(source, "empty_cache"),
    reads_project: false,
    check: Check::Query(check),
};

/// The allocators whose cache `empty_cache()` releases.
const APIS: [&str; 4] =
    ["torch.cuda.empty_cache", "torch.xpu.empty_cache", "torch.mps.empty_cache", "torch.accelerator.empty_cache"];

/// How many helper calls deep a call is followed to the loop that makes it.
const MAX_HELPER_DEPTH: usize = 2;

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee)) = (found.get("call"), found.get("callee")) else { return };
    let facts = checker.facts;
    if facts.resolves_to(callee, &APIS).is_none() {
        return;
    }
    let Some(path) = per_step(facts, call, 0) else { return };
    let spelled = checker.text(call);
    let line = path.step_loop.start_position().row + 1;
    let message = match (path.hook, path.helper) {
        (Some(hook), None) => format!(
            "`{spelled}` runs every time the training framework calls `{hook}()`, once per step: it frees no tensor, \
             it hands the allocator's cached blocks back to the driver, so the next step must `cudaMalloc` them again"
        ),
        (Some(hook), Some(helper)) => format!(
            "`{spelled}` in `{helper}()` runs once per step: `{hook}()` calls it, and the training framework calls \
             `{hook}()` for every batch; it frees no tensor, it hands the allocator's cached blocks back to the \
             driver, so the next step must `cudaMalloc` them again"
        ),
        (None, None) => format!(
            "`{spelled}` runs on every iteration of the loop at line {line}, once per step: it frees no tensor, it \
             hands the allocator's cached blocks back to the driver, so the next step must `cudaMalloc` them again"
        ),
        (None, Some(helper)) => format!(
            "`{spelled}` in `{helper}()` runs once per step of the loop at line {line} that calls it: it frees no \
             tensor, it hands the allocator's cached blocks back to the driver, so the next step must `cudaMalloc` \
             them again"
        ),
    };
    let help = "call it once outside the loop (after training, between experiments, in an out-of-memory handler); \
                against fragmentation set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` instead"
        .to_string();
    checker.report(call, Severity::Warning, message, help);
}

/// Where a call runs once per step: the step loop (or the per-step method a framework
/// calls, `hook`), and the helper it was reached through.
struct StepPath<'t> {
    step_loop: Node<'t>,
    helper: Option<&'t str>,
    hook: Option<&'t str>,
}

/// Methods a training framework calls once per batch from a loop of its own: a
/// `Trainer`'s `compute_loss` / `training_step` / `prediction_step`, Lightning's
/// `*_step` and batch hooks, a `TrainerCallback`'s `on_step_*`.
const PER_STEP_HOOKS: [&str; 11] = [
    "compute_loss",
    "training_step",
    "prediction_step",
    "validation_step",
    "test_step",
    "predict_step",
    "on_step_begin",
    "on_step_end",
    "on_train_batch_start",
    "on_train_batch_end",
    "on_validation_batch_end",
];

/// Whether `function` is a method of a class (`def` in a class body, decorated or not).
fn is_method(function: Node) -> bool {
    let mut node = function;
    if node.parent().is_some_and(|p| p.kind_name() == "decorated_definition") {
        node = node.parent().unwrap_or(node);
    }
    node.parent().and_then(|body| body.parent()).is_some_and(|p| p.kind_name() == "class_definition")
}

/// Code in a per-step method that does not run on every call: any branch, handler or
/// `finally` (`if control.should_evaluate:`), since the condition usually picks steps.
fn runs_conditionally(site: Node) -> bool {
    tree::ancestors_in_function(site).any(|a| {
        matches!(
            a.kind_name(),
            "if_statement"
                | "elif_clause"
                | "else_clause"
                | "except_clause"
                | "except_group_clause"
                | "finally_clause"
                | "match_statement"
                | "conditional_expression"
        )
    })
}

/// The step loop `site` runs in on every iteration, directly or through the callers of
/// the function it is in.
fn per_step<'t>(facts: &Facts<'t>, site: Node<'t>, depth: usize) -> Option<StepPath<'t>> {
    let source = facts.source;
    let function = tree::enclosing_function(site);
    let function_name = function
        .filter(|f| f.kind_name() == "function_definition")
        .and_then(|f| f.child_by_field_id(field::NAME))
        .map(|n| tree::text(n, source));
    // Inside a network's own forward pass a loop runs over frames or chunks of one
    // input, deliberately offloaded: not a training or evaluation step.
    if function_name.is_some_and(is_forward_method_name) {
        return None;
    }
    if let Some(step_loop) = tree::enclosing_loop(site) {
        let counters = loop_targets(step_loop, source);
        let guarded = tree::ancestors_in_function(site)
            .take_while(|a| a.id() != step_loop.id())
            .any(|a| runs_only_sometimes(facts, a, site, &counters))
            || exits_early_on_some_steps(step_loop, site, source, &counters);
        return (!guarded && is_step_loop(facts, step_loop)).then_some(StepPath {
            step_loop,
            helper: None,
            hook: None,
        });
    }
    let (function, name) = (function?, function_name?);
    // Not in a loop here: the unconditional body of a method the framework calls per step.
    if PER_STEP_HOOKS.contains(&name) && is_method(function) {
        let every_step = !runs_conditionally(site) && !exits_early_on_some_steps(function, site, source, &[]);
        return every_step.then_some(StepPath { step_loop: function, helper: None, hook: Some(name) });
    }
    // Or a helper whose every call is once per step.
    if depth >= MAX_HELPER_DEPTH || has_step_loop(facts, function) {
        return None;
    }
    let callers = facts.calls_named(&[name], facts.root);
    callers.into_iter().filter(|c| !tree::contains(function, *c) && calls_function(*c, source)).find_map(|caller| {
        per_step(facts, caller, depth + 1).map(|found| StepPath { helper: Some(found.helper.unwrap_or(name)), ..found })
    })
}

/// `helper(...)`, `self.helper(...)`: a call of a function or method, not of a method on
/// some other object that happens to share its name.
fn calls_function(call: Node, source: &str) -> bool {
    let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
    match function.kind_name() {
        "identifier" => true,
        "attribute" => function.child_by_field_id(field::OBJECT).is_some_and(|o| tree::text(o, source) == "self"),
        _ => false,
    }
}

/// Code between a loop and the call that does not run on every iteration: an `except`
/// (recovery, only after a failure), the `finally` of a `try` that handles running out
/// of memory, a branch taken on some steps only (`if step % 100 == 0`, `if i in
/// eval_iters`), or a branch behind a switch the user sets for memory (`if clear_cache:`,
/// `if args.low_memory:`).
fn runs_only_sometimes<'t>(facts: &Facts<'t>, node: Node<'t>, site: Node<'t>, counters: &[&str]) -> bool {
    let source = facts.source;
    match node.kind_name() {
        "except_clause" | "except_group_clause" => true,
        "finally_clause" => node.parent().is_some_and(|statement| {
            let mut cursor = statement.walk();
            statement
                .named_children(&mut cursor)
                .any(|c| c.kind_name() == "except_clause" && catches_out_of_memory(facts, c))
        }),
        // Only the branch the condition selects: an `else` runs on the other steps.
        "if_statement" | "elif_clause"
            if node.child_by_field_id(field::CONSEQUENCE).is_some_and(|branch| tree::contains(branch, site)) =>
        {
            node.child_by_field_id(field::CONDITION).is_some_and(|condition| picks_steps(condition, source, counters))
        }
        _ => false,
    }
}

/// A condition true on some steps only: a step count modulo something, a step counter,
/// or a switch the user sets for memory.
fn picks_steps(condition: Node, source: &str, counters: &[&str]) -> bool {
    tree::descendants(condition).any(|n| {
        n.kind_name() == "%"
            || (n.kind_name() == "identifier" && counters.contains(&tree::text(n, source)))
            || (n.kind_name() == "identifier"
                && words(tree::text(n, source)).iter().any(|w| MEMORY_WORDS.contains(&w.as_str())))
    })
}

/// Whether the block of `owner` (a function or a loop) leaves early on most steps before
/// it reaches `site`: `if (step - 1) % every != 0: return` (or `continue`) at its top,
/// so that what follows runs on the chosen steps only, as under `if step % every == 0:`.
fn exits_early_on_some_steps(owner: Node, site: Node, source: &str, counters: &[&str]) -> bool {
    let Some(body) = owner.child_by_field_id(field::BODY) else { return false };
    let mut cursor = body.walk();
    let before: Vec<Node> = body
        .named_children(&mut cursor)
        .take_while(|statement| statement.end_byte() <= site.start_byte())
        .collect();
    before.into_iter().filter(|statement| statement.kind_name() == "if_statement").any(|statement| {
        let exits = statement.child_by_field_id(field::CONSEQUENCE).is_some_and(|branch| {
            let mut cursor = branch.walk();
            branch.named_children(&mut cursor).any(|s| matches!(s.kind_name(), "return_statement" | "continue_statement"))
        });
        exits && statement.child_by_field_id(field::CONDITION).is_some_and(|c| picks_steps(c, source, counters))
    })
}

/// Words of a switch that turns memory saving on (`clear_cache`, `low_mem`, `offload`).
const MEMORY_WORDS: [&str; 6] = ["cache", "memory", "mem", "offload", "empty", "oom"];

/// The step counters a `for` loop binds: its target over `range(...)`, or the index of
/// `enumerate(...)` (`i`, `step`); conditions on them pick some steps.
fn loop_targets<'t>(step_loop: Node<'t>, source: &'t str) -> Vec<&'t str> {
    let (Some(left), Some(right)) = (step_loop.child_by_field_id(field::LEFT), step_loop.child_by_field_id(field::RIGHT))
    else {
        return Vec::new();
    };
    let names = crate::engine::facts::index::target_names(left);
    match (right.kind_name(), tree::callee_name(right, source)) {
        ("call", Some("range")) => names.into_iter().map(|n| tree::text(n, source)).collect(),
        ("call", Some("enumerate")) => {
            let first = tree::unparenthesize(left);
            let first =
                if matches!(first.kind_name(), "pattern_list" | "tuple_pattern") { first.named_child(0) } else { None };
            first.filter(|n| n.kind_name() == "identifier").map(|n| vec![tree::text(n, source)]).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// A loop whose every iteration is one step: it draws batches from a data loader, or its
/// own body (not an inner loop) runs the network, a backward pass, an optimizer step or
/// generation. An epoch loop (`for epoch in ...`), a loop whose steps all run in an inner
/// loop or a called function, and a serving loop that waits for the next request
/// (`input()`, a queue's `get()`) and trains nothing are not.
fn is_step_loop<'t>(facts: &Facts<'t>, step_loop: Node<'t>) -> bool {
    // Asked for the loop around every cache release in it, and for every loop of a
    // function asked whether it has one: each loop reads its whole body, once.
    *facts.memo("OOM006 a step loop", Some(step_loop), || step_loop_read(facts, step_loop))
}

/// `is_step_loop`, worked out.
fn step_loop_read<'t>(facts: &Facts<'t>, step_loop: Node<'t>) -> bool {
    let source = facts.source;
    let header_words =
        |field: u16| step_loop.child_by_field_id(field).map(|n| words(tree::text(n, source))).unwrap_or_default();
    let (target, iterable) = (header_words(field::LEFT), header_words(field::RIGHT));
    if target.iter().chain(&iterable).any(|w| w == "epoch" || w == "epochs") {
        return false;
    }
    let Some(body) = step_loop.child_by_field_id(field::BODY) else { return false };
    // The calls of the loop's own body: not those of a loop or function nested in it.
    let own_code = |node: Node| !tree::is_loop(node.kind_name()) && !tree::is_function(node.kind_name());
    let own_calls: Vec<Node<'t>> =
        tree::descendants_entering(body, own_code).filter(|n| n.kind_name() == "call").collect();
    // A serving loop: each iteration waits for the next request and handles it whole.
    // Releasing the cache between requests hands memory back while the process idles.
    let trains = own_calls.iter().any(|c| trains_a_step(facts, *c));
    if !trains && own_calls.iter().any(|c| waits_for_request(*c, source)) {
        return false;
    }
    // A job loop: each iteration runs a pipeline of models (a video window: its
    // preprocessors, then the whole diffusion run) and unloads them before the next one;
    // a cache release there sits between phases, where the call belongs.
    if !trains && own_calls.iter().any(|c| unloads_models(*c, source)) {
        return false;
    }
    let draws_batches = iterable.iter().any(|w| matches!(w.as_str(), "loader" | "dataloader" | "batches" | "dl"));
    draws_batches || trains || own_calls.iter().any(|c| runs_a_step(facts, *c))
}

/// `input()`, a socket's `recv`/`accept`, or `get()` on a queue of requests or jobs
/// (`in_q.get()`, `self.request_queue.get()`): a call that blocks until work arrives.
fn waits_for_request(call: Node, source: &str) -> bool {
    match tree::callee_name(call, source) {
        Some("input" | "accept" | "recv" | "recv_pyobj" | "recv_json" | "recv_multipart") => true,
        Some("get") => tree::method_receiver(call).is_some_and(|receiver| {
            words(tree::text(receiver, source)).iter().any(|w| QUEUE_WORDS.contains(&w.as_str()))
        }),
        _ => false,
    }
}

/// `offloadobj.unload_all()`, `pipe.unload_lora_weights()`, `offload_models(...)`: a call
/// that takes models off the device.
fn unloads_models(call: Node, source: &str) -> bool {
    tree::callee_name(call, source).is_some_and(|name| words(name).iter().any(|w| w == "unload" || w == "offload"))
}

/// Words of a receiver that hands out requests or jobs one at a time.
const QUEUE_WORDS: [&str; 8] = ["q", "queue", "inbox", "request", "requests", "jobs", "tasks", "mailbox"];

/// `backward()` or an optimizer's `step()`: a training step, whatever feeds it.
fn trains_a_step<'t>(facts: &Facts<'t>, call: Node<'t>) -> bool {
    let source = facts.source;
    match tree::callee_name(call, source) {
        Some("backward") => true,
        Some("step") => tree::method_receiver(call).is_some_and(|receiver| {
            words(tree::text(receiver, source)).iter().any(|w| w.starts_with("optim") || w == "opt" || w == "scaler")
        }),
        _ => false,
    }
}

/// A forward pass, a loss, or `generate()` (a training call is `trains_a_step`).
fn runs_a_step<'t>(facts: &Facts<'t>, call: Node<'t>) -> bool {
    let source = facts.source;
    match tree::callee_name(call, source) {
        Some("backward" | "step") => trains_a_step(facts, call),
        Some("generate") => true,
        // `self._init_train_model(...)`, `build_model(...)`: set-up named after a model.
        Some(name) if words(name).iter().any(|w| SETUP_WORDS.contains(&w.as_str())) => false,
        _ => facts.is_forward_call(call) || (facts.is_loss_call(call) && !compares_given_tensors(facts, call)),
    }
}

/// `F.mse_loss(a.float(), b.float())`: a loss function of `torch.nn.functional` with no
/// network call among its arguments measures the distance between tensors the loop
/// already holds (weights of two checkpoints matched key by key, one sample's outputs
/// scored after the step); by itself it runs no step. A criterion object or a loss
/// method (`self.compute_loss(batch)`) may run the network, and still counts.
fn compares_given_tensors<'t>(facts: &Facts<'t>, call: Node<'t>) -> bool {
    let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
    let functional = facts.qualified_name(function).is_some_and(|q| q.starts_with("torch.nn.functional."))
        || function
            .child_by_field_id(field::OBJECT)
            .is_some_and(|o| matches!(facts.text(o), "F" | "functional" | "nn.functional" | "torch.nn.functional"));
    let runs_network = || {
        call.child_by_field_id(field::ARGUMENTS)
            .is_some_and(|args| tree::descendants(args).any(|n| n.kind_name() == "call" && facts.is_forward_call(n)))
    };
    functional && !runs_network()
}

/// Words that make a call set-up work, not a step, whatever model it names.
const SETUP_WORDS: [&str; 14] = [
    "init", "build", "create", "load", "save", "prepare", "setup", "wrap", "get", "set", "make", "compile", "copy",
    "export",
];

/// Whether `function` has a step loop of its own (a per-epoch or whole-run function).
fn has_step_loop<'t>(facts: &Facts<'t>, function: Node<'t>) -> bool {
    // Asked for each helper on the way from every cache release to its step loop: a
    // training script's `main()` holds tens of thousands of nodes, read once.
    // The loops of a function nested in it are that function's.
    *facts.memo("OOM006 has a step loop", Some(function), || {
        facts
            .index()
            .loops_in(function)
            .into_iter()
            .filter(|l| tree::enclosing_function(*l).is_some_and(|f| f.id() == function.id()))
            .any(|l| is_step_loop(facts, l))
    })
}
