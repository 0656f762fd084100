//! OOM008 load-without-map-location: `torch.load` without `map_location`, so every
//! tensor comes back on the device that saved it.

use crate::engine::field;
use super::{Check, Cost, Figure, Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use crate::engine::text_test;
use crate::engine::tree::{self, KindName};
use crate::fix::edits::{append_argument, string_literal};
use crate::fix::{Applicability, Fix};
use tree_sitter::Node;

mod scans;

const FILES: (&str, &str) = rule_files!("OOM008-load-without-map-location");

pub static RULE: Rule = Rule {
    code: "OOM008",
    slug: "load-without-map-location",
    default_severity: Severity::Warning,
    preview: true,
    summary: "`torch.load` without `map_location`: tensors come back on the device that saved them",
    cost: Cost::DeviceMemory {
        figure: Figure::End,
        bad: "live on the GPU after resuming, the checkpoint's own copy of the weights still there,",
        good: "with `map_location=\"cpu\"`",
    },
    fix_title: "Pass `map_location=\"cpu\"`",
    docs: FILES.1,
    query: FILES.0,
    could_match: could_call_torch_load,
    reads_project: false,
    check: Check::Query(check),
};

/// `torch.load(` spelled out, `load` imported from torch, or `T.load(` after
/// `import torch as T`: most files that merely say `load(` (`json.load`) skip the parse.
fn could_call_torch_load(source: &str) -> bool {
    if !text_test::contains(source, "load") || !text_test::contains(source, "torch") {
        return false;
    }
    names_torch_load(source) || scans::imports_torch_load(source)
}

/// `torch.load` with no word character after it: `safetensors.torch.load_file(` is another
/// function, and the test suites of diffusers' LoRA scripts call nothing else.
fn names_torch_load(source: &str) -> bool {
    const NAME: &str = "torch.load";
    memchr::memmem::find_iter(source.as_bytes(), NAME)
        .any(|at| source[at + NAME.len()..].chars().next().is_none_or(|c| !text_test::is_word_character(c)))
}

/// A round trip in one process: bytes in memory (`io.BytesIO(...)`, a parameter typed
/// `BytesIO`), a temporary file (or its `.name`) or a file object the code rewinds
/// (`buffer.seek(0)`) were written by this process, with the devices it already uses,
/// and putting tensors back where they were is the point.
fn reads_back_its_own_bytes(checker: &Checker, call: Node, target: Node) -> bool {
    let source = checker.source();
    let target = tree::unparenthesize(target);
    let file = match target.kind_name() {
        "attribute" if tree::last_name(target, source) == Some("name") => target.child_by_field_id(field::OBJECT),
        _ => Some(target),
    };
    match file.map(|f| (f.kind_name(), f)) {
        // `BytesIO(response.content)`: bytes another machine sent, with its devices.
        Some(("call", file)) => {
            tree::callee_name(file, source).is_some_and(|name| IN_MEMORY.contains(&name))
                && tree::positional_args(file)
                    .first()
                    .is_none_or(|bytes| tree::last_name(*bytes, source) != Some("content"))
        }
        Some(("identifier", file)) => {
            let name = tree::text(file, source);
            let scope = tree::enclosing_function(call).map_or(0, |f| f.start_byte());
            // Each way below spells one of these: without them no search (a search per
            // call of the text before it is quadratic over a file of loads).
            let spelled = [".seek(", "BytesIO", "TemporaryFile"];
            if checker.facts.index().first_text_in(&spelled, scope..call.start_byte()).is_none() {
                return false;
            }
            let before = &source[scope..call.start_byte()];
            scans::rewound(before, name)
                || scans::typed_bytes_io(before, name)
                || scans::assigned_from(before, name, &["io.", "tempfile."], IN_MEMORY)
                || scans::made_as(before, IN_MEMORY, name)
        }
        _ => false,
    }
}

/// A file under a temporary directory this process made (`with
/// tempfile.TemporaryDirectory() as d`, `d = tempfile.mkdtemp()`) or pytest's `tmp_path` /
/// `tmpdir`: written by this run, on the devices it uses.
fn in_temporary_directory<'t>(checker: &Checker<'_, 't>, call: Node<'t>, target: Node<'t>) -> bool {
    let source = checker.source();
    let scope = tree::enclosing_function(call).map_or(0, |f| f.start_byte());
    let before = &source[scope..call.start_byte()];
    let made = ["TemporaryDirectory(", "mkdtemp(", "gettempdir("];
    let no_temporary_directory = checker.facts.index().first_text_in(&made, scope..call.start_byte()).is_none();
    tree::descendants(target).filter(|n| n.kind_name() == "identifier").any(|name| {
        let name = tree::text(name, source);
        if matches!(name, "tmp_path" | "tmpdir" | "tmp_path_factory" | "tmpdir_factory") {
            return true;
        }
        if no_temporary_directory {
            return false;
        }
        scans::made_as(before, &TEMPORARY_DIRECTORIES, name)
            || scans::assigned_from(before, name, &["tempfile."], &TEMPORARY_DIRECTORIES)
    })
}

/// The file is written earlier in the same function (or the same script), as in
/// "save the best model during training, reload it for the test": a round trip within
/// one process, back onto the device it came from.
fn saved_earlier_in_same_run(checker: &Checker, call: Node, target: Node) -> bool {
    let source = checker.source();
    let body = tree::enclosing_body(call);
    let before = &source[body.start_byte()..call.start_byte()];
    // A match starts at a `save(` or an `open(`: the search starts at the first.
    let Some(first) = checker.facts.index().first_text_in(&["save(", "open("], body.start_byte()..call.start_byte())
    else {
        return false;
    };
    let mut path = tree::text(target, source);
    // `with open(path, "rb") as f: torch.load(f)`: the path is what `f` was opened from.
    if target.kind_name() == "identifier"
        && let Some(opened) = scans::last_opened_as(before, path)
    {
        path = opened;
    }
    scans::writes(before, first - body.start_byte(), path)
}

/// A data cache: loaded in a dataset class, or behind an existence check of a path the
/// code names as a cache or writes itself (`if os.path.exists(cache): x =
/// torch.load(cache) else: ...; torch.save(x, cache)`), or a path named as data. Data
/// files are written from CPU tensors (a DataLoader worker could not hold GPU ones).
fn loads_a_data_cache<'t>(checker: &Checker<'_, 't>, call: Node<'t>, target: Node<'t>) -> bool {
    let source = checker.source();
    let in_dataset = tree::ancestors(call).filter(|a| a.kind_name() == "class_definition").any(|class| {
        class.child_by_field_id(field::SUPERCLASSES).is_some_and(|s| tree::text(s, source).contains("Dataset"))
    });
    if in_dataset {
        return true;
    }
    let path = tree::text(target, source);
    let described = |text: &str| {
        let lower = text.to_ascii_lowercase();
        ["cache", "data", "feature", "corpus", "vocab", "mel"].iter().any(|w| lower.contains(w))
            && !["model", "ckpt", "checkpoint", "weight", "state", "optim", "resume", "net", "best", "save"]
                .iter()
                .any(|w| lower.contains(w))
    };
    // The name's own assignment tells what it holds (`fn = os.path.join(dir, "cache.pt")`).
    let bound =
        (target.kind_name() == "identifier").then(|| checker.facts.index().lookup(path, target)).flatten().and_then(|b| {
            match b.kind {
                crate::engine::facts::index::BindingKind::Value(value) => Some(tree::text(value, source)),
                _ => None,
            }
        });
    if described(path) || bound.is_some_and(|v| v.to_ascii_lowercase().contains("cache")) {
        return true;
    }
    let guarded = tree::ancestors_in_function(call).filter(|a| a.kind_name() == "if_statement").any(|statement| {
        statement.child_by_field_id(field::CONDITION).is_some_and(|c| {
            let condition = tree::text(c, source);
            ["exists(", "isfile(", "is_file("].iter().any(|check| condition.contains(check)) && condition.contains(path)
        })
    });
    // Searched only when guarded: once per call over the whole body is quadratic.
    guarded && tree::text(tree::enclosing_body(call), source).contains(&format!(", {path})"))
}

/// `if cpu_run: torch.load(f, map_location="cpu") else: torch.load(f)`: the code chose
/// the device on each branch, the GPU one deliberately.
fn other_branch_maps_to_cpu<'t>(checker: &Checker<'_, 't>, call: Node<'t>) -> bool {
    let source = checker.source();
    let Some(statement) = tree::ancestors_in_function(call).find(|a| a.kind_name() == "if_statement") else {
        return false;
    };
    checker.facts.calls_named(&["load"], statement).into_iter().any(|other| {
        other.id() != call.id()
            && tree::keyword_arg(other, "map_location", source)
                .is_some_and(|m| tree::text(m, source).contains("cpu") || tree::text(m, source).contains("lambda"))
    })
}

/// Read over the whole file (`crate::rules::file_wide_words`): its saves and where they
/// come from, its use of accelerators, and (for a load outside any function, which
/// reads the text above it) the in-memory and temporary files made before it.
pub(super) const FILE_WIDE_WORDS: &[&str] = &[
    "save",
    "offload_to_cpu",
    "cpu",
    "cuda",
    "to",
    "device",
    "mps",
    "xla",
    "open",
    "seek",
    "BytesIO",
    "TemporaryFile",
    "NamedTemporaryFile",
    "SpooledTemporaryFile",
    "TemporaryDirectory",
    "mkdtemp",
    "gettempdir",
];

/// Every checkpoint this file writes is on the CPU: gathered with `offload_to_cpu=True`,
/// or saved from a module moved with `.cpu()` first.
fn file_saves_from_cpu(checker: &Checker) -> bool {
    // A fact about the whole file, asked for every load in it.
    *checker.facts.memo("OOM008 file saves from the CPU", None, || every_save_from_cpu(checker))
}

fn every_save_from_cpu(checker: &Checker) -> bool {
    let source = checker.source();
    if checker.facts.index().first_text_in(&["offload_to_cpu=True"], 0..source.len()).is_some() {
        return true;
    }
    let saves = checker.facts.calls_named(&["save"], checker.facts.root);
    let saves: Vec<Node> = saves.into_iter().filter(|s| tree::text(*s, source).starts_with("torch.save")).collect();
    !saves.is_empty()
        && saves.iter().all(|save| {
            let Some(saved) = tree::positional_args(*save).first().copied() else { return false };
            let mut root = saved;
            while let Some(inner) = match root.kind_name() {
                "call" => root.child_by_field_id(field::FUNCTION),
                "attribute" => root.child_by_field_id(field::OBJECT),
                _ => None,
            } {
                root = inner;
            }
            let body = tree::enclosing_body(*save);
            let before = &source[body.start_byte()..save.start_byte()];
            // A regex built per save would cost more than the rest of the rule together.
            root.kind_name() == "identifier" && text_test::word_then_on_line(before, tree::text(root, source), ".cpu()")
        })
}

/// The file itself writes this path above the load (`torch.save(net, "net.pkl")` in one
/// function, `torch.load("net.pkl")` in a later one) and never puts anything on an
/// accelerator (no `cuda`, `.to(`, `device` or `mps` anywhere in it): what it saved, and
/// so what it loads back, is on the CPU.
fn cpu_only_file_writes_it(checker: &Checker, call: Node, target: Node) -> bool {
    let source = checker.source();
    // Through the file index, which searches the text once per word, not once per load.
    if checker.facts.index().first_text_in(&["cuda", ".to(", "device", "mps", "xla"], 0..source.len()).is_some() {
        return false;
    }
    let path = tree::text(target, source);
    // Written above the load: a converter that loads a file and saves it back under the
    // same name (`torch.save(model, ckpt)` after `torch.load(ckpt)`) reads what someone
    // else wrote.
    file_saves(checker).iter().any(|(at, saved_to)| *at < call.start_byte() && saved_to == path)
}

/// Where the file calls `torch.save` and the destination each names, as spelled: found
/// once per file, asked for every load.
fn file_saves(checker: &Checker) -> std::rc::Rc<Vec<(usize, String)>> {
    checker.facts.memo("OOM008 torch.save destinations", None, || {
        let source = checker.source();
        checker
            .facts
            .calls_named(&["save"], checker.facts.root)
            .into_iter()
            .filter(|save| tree::text(*save, source).starts_with("torch.save"))
            .filter_map(|save| {
                let saved_to = tree::positional_args(save).get(1).copied()?;
                Some((save.start_byte(), tree::text(saved_to, source).to_owned()))
            })
            .collect()
    })
}

/// The functions that make a temporary directory.
const TEMPORARY_DIRECTORIES: [&str; 3] = ["TemporaryDirectory", "mkdtemp", "gettempdir"];

/// Constructors of in-memory buffers and temporary files.
const IN_MEMORY: &[&str] = &["BytesIO", "TemporaryFile", "NamedTemporaryFile", "SpooledTemporaryFile"];

fn check<'t>(checker: &mut Checker<'_, 't>, found: &Match<'_, 't>) {
    let (Some(call), Some(callee), Some(arguments)) = (found.get("call"), found.get("callee"), found.get("arguments"))
    else {
        return;
    };
    // Only PyTorch's own: `pickle.load`, `np.load`, `torch.jit.load`, a project's `load`.
    if checker.facts.resolves_to(callee, &["torch.load"]).is_none() {
        return;
    }
    let source = checker.source();
    // `map_location` given by keyword, as the second positional argument, or possibly
    // through `*args` / `**kwargs`.
    if tree::keyword_arg(call, "map_location", source).is_some() || tree::positional_args(call).len() >= 2 {
        return;
    }
    let mut cursor = arguments.walk();
    if arguments.named_children(&mut cursor).any(|a| matches!(a.kind_name(), "dictionary_splat" | "list_splat")) {
        return;
    }
    let Some(target) = tree::positional_args(call).first().copied() else { return };
    if reads_back_its_own_bytes(checker, call, target)
        || in_temporary_directory(checker, call, target)
        || saved_earlier_in_same_run(checker, call, target)
        || loads_a_data_cache(checker, call, target)
        || other_branch_maps_to_cpu(checker, call)
        || file_saves_from_cpu(checker)
        || cpu_only_file_writes_it(checker, call, target)
    {
        return;
    }
    let message = "`torch.load` without `map_location`: every tensor comes back on the device that saved it \
                   (GPU 0 for a checkpoint written by rank 0), on top of the model it is loaded into"
        .to_string();
    let help = "pass `map_location=\"cpu\"` (then `load_state_dict` copies onto the model's device), or the \
                rank's own device"
        .to_string();
    let argument = format!("map_location={}", string_literal(checker.facts, "cpu"));
    let fix = append_argument(source, call, &argument)
        .map(|edit| Fix::new(Applicability::Unsafe, RULE.fix_title, vec![edit]));
    checker.report(callee, Severity::Warning, message, help).fix = fix;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_load_is_told_from_functions_whose_names_begin_like_it() {
        let called = ["torch.load(f)", "x = torch.load", "partial(torch.load, f)", "mytorch.load(f)", "torch.load"];
        for text in called {
            assert!(could_call_torch_load(text), "{text}");
        }
        let others = ["safetensors.torch.load_file(f)", "torch.load_state_dict_from_url(u)", "torch.loaded = 1"];
        for text in others {
            assert!(!could_call_torch_load(text), "{text}");
        }
    }
}
