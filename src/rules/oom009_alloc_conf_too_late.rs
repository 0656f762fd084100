//! OOM009 alloc-conf-too-late: `PYTORCH_CUDA_ALLOC_CONF` set from Python after the code
//! has already used CUDA (the allocator read its settings then, and never reads them
//! again), or holding an option the allocator does not know (the first CUDA allocation
//! fails).

use crate::engine::field;
use super::{Check, Cost, DeviceMeasure, Rule, rule_files};
use crate::diagnostic::{Severity, TextRange};
use crate::engine::text_test;
use crate::engine::checker::{Checker, Match};
use crate::engine::facts::Facts;
use crate::engine::facts::index::BindingKind;
use crate::engine::tree::{self, KindName};
use crate::fix::{Edit, Fix};
use std::borrow::Cow;
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM009-alloc-conf-too-late");

pub static RULE: Rule = Rule {
    code: "OOM009",
    slug: "alloc-conf-too-late",
    default_severity: Severity::Warning,
    preview: true, // no finding on the real-code corpus yet: no evidence that real code can trust it
    summary: "`PYTORCH_CUDA_ALLOC_CONF` set after CUDA was first used, or naming an option the allocator does not know",
    cost: Cost::Device {
        measure: DeviceMeasure::AllocatorSettings,
        documented: "the caching allocator reads `PYTORCH_CUDA_ALLOC_CONF` once, when CUDA is first used, and never \
                     again: set later, the setting does nothing; an option name it does not know makes that first \
                     use fail with `Unrecognized key`",
        source: "PyTorch docs, CUDA semantics, \"Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF\" \
                 (https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
    },
    fix_title: "Move the assignment above the first CUDA use",
    docs: FILES.1,
    query: FILES.0,
    could_match: |source| text_test::contains(source, "_ALLOC_CONF"),
    reads_project: false,
    check: Check::Query(check),
};

/// The variables the allocator reads (`PYTORCH_ALLOC_CONF` is the device-neutral name).
const VARIABLES: [&str; 3] = ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"];

/// Every option name some PyTorch release accepts (a name only newer releases know is
/// not reported: the code may target them).
const OPTIONS: [&str; 22] = [
    "backend",
    "max_split_size_mb",
    "max_non_split_rounding_mb",
    "garbage_collection_threshold",
    "roundup_power2_divisions",
    "expandable_segments",
    "expandable_segments_reserve",
    "expandable_segments_reserve_by_class",
    "expandable_segments_handle_type",
    "large_segment_size_mb",
    "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc",
    "pinned_use_cuda_host_register",
    "pinned_use_hip_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "pinned_max_round_threshold",
    "pinned_reserve_segment_size_mb",
    "pinned_free_catch_all",
    "graph_capture_record_stream_reuse",
    "per_process_memory_fraction",
    "throw_on_cudamalloc_oom",
];

/// Options whose value the allocator accepts only as `True` or `False`.
const STRICT_BOOLEANS: [&str; 2] = ["expandable_segments", "pinned_use_background_threads"];

/// `torch.cuda` functions that initialize CUDA, and with it the allocator. The memory
/// statistics resets and `memory_summary` count: without a device they ask for the
/// current one, which initializes CUDA. `empty_cache()`, `memory_allocated()` and
/// `manual_seed()` do not (they do nothing, read nothing or queue the seed until then).
const INITIALIZING: [&str; 16] = [
    "torch.cuda.init",
    "torch.cuda.set_device",
    "torch.cuda.current_device",
    "torch.cuda.synchronize",
    "torch.cuda.get_device_name",
    "torch.cuda.get_device_properties",
    "torch.cuda.get_device_capability",
    "torch.cuda.mem_get_info",
    "torch.cuda.Stream",
    "torch.cuda.set_per_process_memory_fraction",
    "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.reset_max_memory_allocated",
    "torch.cuda.reset_max_memory_cached",
    "torch.cuda.reset_accumulated_memory_stats",
    "torch.cuda.memory_summary",
    "torch.cuda.ipc_collect",
];

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(set), Some(environ), Some(name), Some(value)) =
        (found.get("set"), found.get("environ"), found.get("name"), found.get("value"))
    else {
        return;
    };
    let facts = checker.facts;
    let Some(variable) = string_value(name, facts.source).filter(|n| VARIABLES.contains(n)) else { return };
    let method = set.child_by_field_id(field::FUNCTION).and_then(|f| tree::last_name(f, facts.source));
    let expected: &[&'static str] = if method == Some("putenv") { &["os"] } else { &["os.environ"] };
    if facts.resolves_to(environ, expected).is_none() {
        return;
    }
    let unknown = report_bad_options(checker, value, variable);
    if applies_at_run_time(facts, set) {
        return;
    }
    let Some(first_use) = first_cuda_use(facts, set) else { return };
    let line = first_use.start_position().row + 1;
    let used: String = checker.text(first_use).chars().take(40).collect();
    let message = format!(
        "`{variable}` is set after CUDA was first used (line {line}: `{used}`): the allocator read its settings \
         then and never reads them again, so this setting does nothing"
    );
    let help = format!(
        "set `{variable}` before the first CUDA use: at the top of the script, or in the shell \
         (`{variable}=... python train.py`)"
    );
    let fix = if unknown { None } else { move_above(facts, set, environ, value, first_use) };
    checker.report(set, Severity::Warning, message, help).fix = fix;
}

/// Reports each option the value names that the allocator rejects, at its first
/// use; `true` when there was one.
fn report_bad_options<'t>(checker: &mut Checker<'_, 't>, value: Node<'t>, variable: &str) -> bool {
    let Some(text) = literal_value(value, checker.source()) else { return false };
    let mut reported = false;
    for option in options(&text) {
        let (key, setting) = match option.split_once(':') {
            Some((key, setting)) => (key.trim(), Some(setting.trim())),
            None => (option.trim(), None),
        };
        if key.is_empty() {
            continue;
        }
        let (message, help) = if !OPTIONS.contains(&key) {
            let hint = suggestion(key).map(|o| format!(" (did you mean `{o}`?)")).unwrap_or_default();
            (
                format!(
                    "`{key}` is not an option of `{variable}`{hint}: the first CUDA allocation fails with \
                     `Unrecognized key '{key}'`"
                ),
                "use the option names of PyTorch's CUDA semantics notes, written `option:value`".to_string(),
            )
        } else if STRICT_BOOLEANS.contains(&key)
            && let Some(setting) = setting.filter(|s| *s != "True" && *s != "False")
        {
            (
                format!(
                    "`{key}:{setting}`: the allocator accepts only `True` or `False` here, so the first CUDA \
                     allocation fails with `Expected 'True' or 'False'`"
                ),
                format!("write `{key}:True` or `{key}:False`"),
            )
        } else {
            continue;
        };
        let at = part_naming(value, key, checker.source()).unwrap_or(value);
        checker.report(at, Severity::Warning, message, help);
        reported = true;
    }
    reported
}

/// The comma-separated `option:value` items of a configuration string; commas inside
/// `[...]` (`roundup_power2_divisions:[256:1,>:8]`) do not separate.
fn options(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

/// What `key` was probably meant to be: `option:value` for `option=value` (the value
/// is separated by a colon), else the known option it misspells or cuts short.
fn suggestion(key: &str) -> Option<String> {
    if let Some((name, value)) = key.split_once('=')
        && let Some(option) = closest_option(name.trim())
    {
        return Some(format!("{option}:{}", value.trim()));
    }
    closest_option(key).map(str::to_string)
}

/// A known option within three edits of `key` (`expandable_segment`, `max_split_size`),
/// or one that `key` begins (`roundup_power2` for `roundup_power2_divisions`).
fn closest_option(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let near = OPTIONS.iter().copied().map(|o| (edit_distance(&lower, o), o)).filter(|(d, _)| *d <= 3).min();
    near.map(|(_, o)| o).or_else(|| {
        (lower.len() >= 8).then(|| OPTIONS.iter().copied().find(|o| o.starts_with(lower.as_str()))).flatten()
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// The text of a literal value: a plain string, or plain strings written side by side (a
/// long value split over lines, with a comment on each option), also in parentheses.
fn literal_value<'t>(node: Node<'t>, source: &'t str) -> Option<Cow<'t, str>> {
    let node = tree::unparenthesize(node);
    if node.kind_name() != "concatenated_string" {
        return string_value(node, source).map(Cow::Borrowed);
    }
    let mut cursor = node.walk();
    let parts: Option<Vec<&str>> = node
        .named_children(&mut cursor)
        .filter(|part| part.kind_name() != "comment")
        .map(|part| string_value(part, source))
        .collect();
    parts.map(|parts| Cow::Owned(parts.concat()))
}

/// The string, of a value written as adjacent strings, that names `key`.
fn part_naming<'t>(value: Node<'t>, key: &str, source: &str) -> Option<Node<'t>> {
    let value = tree::unparenthesize(value);
    let mut cursor = value.walk();
    (value.kind_name() == "concatenated_string")
        .then(|| {
            value.named_children(&mut cursor).find(|part| {
                string_value(*part, source)
                    .is_some_and(|text| options(text).iter().any(|o| o.split(':').next().map(str::trim) == Some(key)))
            })
        })
        .flatten()
}

/// The text of a plain string literal (no f-string interpolation, no concatenation).
fn string_value<'t>(node: Node<'t>, source: &'t str) -> Option<&'t str> {
    if node.kind_name() != "string" {
        return None;
    }
    let mut cursor = node.walk();
    let parts: Vec<Node> = node.named_children(&mut cursor).collect();
    if parts.iter().any(|p| p.kind_name() == "interpolation") {
        return None;
    }
    match parts.iter().find(|p| p.kind_name() == "string_content") {
        Some(content) => Some(tree::text(*content, source)),
        None => Some(""),
    }
}

/// The first code before `set`, in the same function (or module), that uses CUDA: a
/// `.cuda()`, a `.to(...)` or `device=` naming a CUDA device, or a `torch.cuda` call
/// that initializes it. Code in functions defined there does not run there and is not
/// counted.
fn first_cuda_use<'t>(facts: &Facts<'t>, set: Node<'t>) -> Option<Node<'t>> {
    let scope = tree::enclosing_function(set);
    let within = scope.unwrap_or(facts.root);
    tree::descendants(within)
        .take_while(|n| n.start_byte() < set.start_byte())
        .filter(|n| n.kind_name() == "call" && n.end_byte() <= set.start_byte())
        .filter(|n| tree::enclosing_function(*n).map(|f| f.id()) == scope.map(|f| f.id()))
        .find(|call| uses_cuda(facts, *call))
}

/// Whether the function (or module) that sets the variable also hands the setting to
/// the running allocator (`torch.cuda.memory._set_allocator_settings(...)`): the
/// variable then only passes it on to the processes this one starts, and setting it
/// after CUDA is in use is deliberate.
fn applies_at_run_time<'t>(facts: &Facts<'t>, set: Node<'t>) -> bool {
    let scope = tree::enclosing_function(set);
    tree::descendants(scope.unwrap_or(facts.root))
        .filter(|n| n.kind_name() == "call")
        .filter(|n| tree::enclosing_function(*n).map(|f| f.id()) == scope.map(|f| f.id()))
        .any(|call| tree::callee_name(call, facts.source) == Some("_set_allocator_settings"))
}

fn uses_cuda<'t>(facts: &Facts<'t>, call: Node<'t>) -> bool {
    let source = facts.source;
    let Some(function) = call.child_by_field_id(field::FUNCTION) else { return false };
    if facts.resolves_to(function, &INITIALIZING).is_some() {
        return true;
    }
    let method = (function.kind_name() == "attribute").then(|| tree::last_name(function, source)).flatten();
    if method == Some("cuda") {
        return true;
    }
    if method == Some("to") && tree::positional_args(call).iter().any(|a| names_cuda_device(facts, *a)) {
        return true;
    }
    tree::keyword_arg(call, "device", source).is_some_and(|d| names_cuda_device(facts, d))
}

/// `"cuda"`, `"cuda:0"`, `torch.device("cuda")`, or a name bound to one of them (also
/// `"cuda" if torch.cuda.is_available() else "cpu"`: on a GPU machine, CUDA). A device
/// whose value is not in sight (`args.device`, a `device` parameter) counts too: code
/// that configures the CUDA allocator runs on CUDA. One known to be the CPU does not.
fn names_cuda_device<'t>(facts: &Facts<'t>, expr: Node<'t>) -> bool {
    let expr = tree::unparenthesize(expr);
    let named_device = |node: Node| {
        tree::last_name(node, facts.source)
            .is_some_and(|n| crate::engine::facts::heuristics::words(n).iter().any(|w| w == "device" || w == "gpu"))
    };
    match expr.kind_name() {
        "string" => string_value(expr, facts.source).is_some_and(|s| s.starts_with("cuda")),
        "call" => {
            tree::callee_name(expr, facts.source) == Some("device")
                && tree::positional_args(expr).first().is_some_and(|a| names_cuda_device(facts, *a))
        }
        "conditional_expression" => expr.named_child(0).is_some_and(|b| names_cuda_device(facts, b)),
        "identifier" => match facts.index().lookup(facts.text(expr), expr).map(|b| b.kind) {
            Some(BindingKind::Value(value)) if value.start_byte() < expr.start_byte() => {
                names_cuda_device(facts, value)
            }
            Some(BindingKind::Value(_) | BindingKind::Import | BindingKind::Definition) => false,
            _ => named_device(expr),
        },
        "attribute" => named_device(expr),
        _ => false,
    }
}

/// The safe fix: a plain module-level statement with a literal value, `os` imported
/// before the first CUDA use, moves (with its line) to just above the module-level
/// statement that first uses CUDA.
fn move_above<'t>(
    facts: &Facts<'t>,
    set: Node<'t>,
    environ: Node<'t>,
    value: Node<'t>,
    first_use: Node<'t>,
) -> Option<Fix> {
    let source = facts.source;
    let root = facts.root;
    let statement = set.parent().filter(|p| p.kind_name() == "expression_statement")?;
    let at_module_level = |n: Node| n.parent().is_some_and(|p| p.id() == root.id());
    if !at_module_level(statement) || string_value(value, source).is_none() {
        return None;
    }
    let target = tree::ancestors(first_use).chain(std::iter::once(first_use)).find(|a| at_module_level(*a))?;
    if target.id() == statement.id() {
        return None;
    }
    // The name the setter is reached through (`os`, or `environ` from `from os import
    // environ`) must be bound by an import that runs before the new place.
    let mut base = environ;
    while base.kind_name() == "attribute" {
        base = base.child_by_field_id(field::OBJECT)?;
    }
    let binding = facts.index().lookup(facts.text(base), base)?;
    if !matches!(binding.kind, BindingKind::Import) || binding.visible_from > target.start_byte() {
        return None;
    }
    let line_start = |offset: usize| source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let start = line_start(statement.start_byte());
    if !source[start..statement.start_byte()].trim().is_empty() {
        return None;
    }
    let line_end = source[statement.end_byte()..].find('\n').map_or(source.len(), |i| statement.end_byte() + i);
    let rest = &source[statement.end_byte()..line_end];
    if !(rest.trim().is_empty() || rest.trim_start().starts_with('#')) {
        return None;
    }
    let removed_end = (line_end + 1).min(source.len());
    let line = source[start..line_end].trim_end_matches('\r');
    // Above the comment lines that introduce the statement, which belong to it.
    let mut insert_at = line_start(target.start_byte());
    while insert_at > 0 {
        let previous = line_start(insert_at - 1);
        if !source[previous..insert_at].trim_start().starts_with('#') {
            break;
        }
        insert_at = previous;
    }
    Some(Fix::safe(
        RULE.fix_title,
        vec![Edit::insert(insert_at, format!("{line}\n")), Edit::replace(TextRange { start, end: removed_end }, "")],
    ))
}
