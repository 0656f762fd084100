//! OOM008 load-without-map-location: `torch.load` without `map_location`, so every
//! tensor comes back on the device that saved it.

use super::{Rule, rule_files};
use crate::diagnostic::Severity;
use crate::engine::checker::{Checker, Match};
use crate::engine::tree;
use crate::fix::edits::{append_argument, string_literal};
use crate::fix::{Applicability, Fix};
use crate::measure::{Cost, Figure};
use tree_sitter::Node;

const FILES: (&str, &str) = rule_files!("OOM008-load-without-map-location");

pub static RULE: Rule = Rule {
    code: "OOM008",
    slug: "load-without-map-location",
    default_severity: Severity::Warning,
    preview: true,
    summary: "`torch.load` without `map_location`: tensors come back on the device that saved them",
    cost: Cost::Memory {
        figure: Figure::End,
        bad: "live on the GPU after resuming, the checkpoint's own copy of the weights still there,",
        good: "with `map_location=\"cpu\"`",
    },
    fix_title: "Pass `map_location=\"cpu\"`",
    docs: FILES.1,
    query: FILES.0,
    could_match: could_call_torch_load,
    check,
};

/// `torch.load(` spelled out, `load` imported from torch, or `T.load(` after
/// `import torch as T`: most files that merely say `load(` (`json.load`) skip the parse.
fn could_call_torch_load(source: &str) -> bool {
    static IMPORTS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    if !source.contains("load") || !source.contains("torch") {
        return false;
    }
    if source.contains("torch.load") {
        return true;
    }
    let imports = IMPORTS.get_or_init(|| {
        regex::Regex::new(r"from\s+torch\s+import\s[^\n]*\bload\b|import\s+torch\s+as\s+(\w+)").expect("valid regex")
    });
    imports.captures_iter(source).any(|found| match found.get(1) {
        Some(alias) => source.contains(&format!("{}.load", alias.as_str())),
        None => true,
    })
}

/// A round trip in one process: bytes in memory (`io.BytesIO(...)`, a parameter typed
/// `BytesIO`), a temporary file (or its `.name`) or a file object the code rewinds
/// (`buffer.seek(0)`) were written by this process, with the devices it already uses,
/// and putting tensors back where they were is the point.
fn reads_back_its_own_bytes(source: &str, call: Node, target: Node) -> bool {
    let target = tree::unparenthesize(target);
    let file = match target.kind() {
        "attribute" if tree::last_name(target, source) == Some("name") => target.child_by_field_name("object"),
        _ => Some(target),
    };
    match file.map(|f| (f.kind(), f)) {
        Some(("call", file)) => tree::callee_name(file, source).is_some_and(|name| IN_MEMORY.contains(&name)),
        Some(("identifier", file)) => {
            let name = regex::escape(tree::text(file, source));
            let scope = tree::enclosing_function(call).map_or(0, |f| f.start_byte());
            let before = &source[scope..call.start_byte()];
            let pattern = format!(
                r"\b{name}\.seek\(|\b{name}\s*(?::\s*(?:io\.)?BytesIO\b|=\s*(?:io\.|tempfile\.)?(?:{files})\()|(?:{files})\([^\n]*\)\s+as\s+{name}\b",
                files = IN_MEMORY.join("|")
            );
            regex::Regex::new(&pattern).is_ok_and(|p| p.is_match(before))
        }
        _ => false,
    }
}

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
    if arguments.named_children(&mut cursor).any(|a| matches!(a.kind(), "dictionary_splat" | "list_splat")) {
        return;
    }
    if tree::positional_args(call).first().is_some_and(|target| reads_back_its_own_bytes(source, call, *target)) {
        return;
    }
    let message = "`torch.load` without `map_location`: every tensor comes back on the device that saved it \
                   (GPU 0 for a checkpoint written by rank 0), on top of the model it is loaded into"
        .to_string();
    let help = "pass `map_location=\"cpu\"` (then `load_state_dict` copies onto the model's device), or the \
                rank's own device"
        .to_string();
    let argument = format!("map_location={}", string_literal(source, "cpu"));
    let fix = append_argument(source, call, &argument)
        .map(|edit| Fix::new(Applicability::Unsafe, RULE.fix_title, vec![edit]));
    checker.report(callee, Severity::Warning, message, help).fix = fix;
}
