//! Splitting a large file's lint between cores: each part is linted as the language
//! server relints the statements an edit touched (`Engine::lint_range` over its ranges,
//! the facts drawn from the whole tree), and the parts' findings together are the whole
//! lint's. What ties findings of different top-level statements together decides where
//! a part may end:
//!
//! - a suppression comment suppresses findings of its own line, and the rules that judge
//!   the comments report on which suppressed something: every part starts and ends at the
//!   start of a line, so a line's findings and its comments are linted together;
//! - a rule that reports once per region (`Checker::report_once`: once per loop, function
//!   body, or the module's body) must see every finding of the region: a region inside a
//!   top-level statement stays in its part, and all of the module's own code (every
//!   top-level statement that is not a definition, and the comments between them) is
//!   linted in the last part. The other parts are runs of top-level function and class
//!   definitions;
//! - a tree with syntax errors is linted whole: error recovery may tie statements
//!   together in ways their text does not show.

use crate::engine::tree::KindName;
use std::ops::Range;
use tree_sitter::Node;

/// Below this many bytes per part a file is linted in one piece: the work each part
/// repeats (the facts it draws from the whole file) outweighs what the others take on.
const PART_BYTES: usize = 24 * 1024;

/// How a whole lint is split: the ranges of each part, or `None` to lint whole.
pub type Split<'a> = dyn Fn(Node, &str) -> Option<Vec<Vec<Range<usize>>>> + Sync + 'a;

/// The parts of `source` to lint on their own, when it is worth splitting between
/// `cores`. `None`: lint it whole.
pub fn of(root: Node, source: &str, cores: usize) -> Option<Vec<Vec<Range<usize>>>> {
    split(root, source, cores.min(source.len() / PART_BYTES))
}

/// The ranges of up to `count` parts of `source`, each about as long: every part but the
/// last a run of top-level definitions, the last the rest of the file. `None` when there
/// are no two parts, or the tree has errors.
pub fn split(root: Node, source: &str, count: usize) -> Option<Vec<Vec<Range<usize>>>> {
    if count < 2 || root.has_error() {
        return None;
    }
    let starts_line = |at: usize| at == 0 || source.as_bytes()[at - 1] == b'\n';
    // Each top-level statement with the comments and blank lines up to the next one.
    let mut cursor = root.walk();
    let children: Vec<Node> = root.children(&mut cursor).collect();
    let mut slots: Vec<(Range<usize>, bool)> = Vec::with_capacity(children.len());
    for (at, child) in children.iter().enumerate() {
        let start = if at == 0 { 0 } else { child.start_byte() };
        let end = children.get(at + 1).map_or(source.len(), |next| next.start_byte());
        let definition =
            matches!(child.kind_name(), "function_definition" | "class_definition" | "decorated_definition");
        slots.push((start..end, definition && starts_line(start) && starts_line(end)));
    }
    // Definitions go to the first parts in order, each part taking about its share of
    // the file; whatever is left over, with all of the module's own code, is the last.
    let share = source.len() / count;
    let mut parts: Vec<Vec<Range<usize>>> = vec![Vec::new(); count];
    let mut sizes = vec![0; count - 1];
    let mut filling = 0;
    for (range, definition) in slots {
        while filling < count - 1 && sizes[filling] >= share {
            filling += 1;
        }
        let part = if definition && filling < count - 1 { filling } else { count - 1 };
        if part < count - 1 {
            sizes[part] += range.len();
        }
        add(&mut parts[part], range);
    }
    parts.retain(|ranges| !ranges.is_empty());
    (parts.len() >= 2).then_some(parts)
}

/// Add `range` to `ranges`, joined to the last one when they touch: a node is tested
/// against each range of its part.
fn add(ranges: &mut Vec<Range<usize>>, range: Range<usize>) {
    match ranges.last_mut() {
        Some(last) if last.end == range.start => last.end = range.end,
        _ => ranges.push(range),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Diagnostic;
    use crate::engine::{Engine, RuleSettings, parse};
    use std::path::{Path, PathBuf};

    /// Every `.py` under `fixtures/` and `tests/`.
    fn sources() -> Vec<(PathBuf, String)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["fixtures", "tests"] {
            for entry in ignore::WalkBuilder::new(root.join(dir)).build().flatten() {
                if entry.path().extension().is_some_and(|x| x == "py") {
                    let text = std::fs::read_to_string(entry.path()).expect("a readable test file");
                    files.push((entry.path().to_path_buf(), text));
                }
            }
        }
        files.sort();
        files
    }

    /// The findings of a whole lint, and of a lint in `count` parts (`None` when the
    /// file is not split in that many).
    fn whole_and_parts(source: &str, path: &Path, count: usize) -> (Vec<Diagnostic>, Option<Vec<Diagnostic>>) {
        let engine = Engine::get();
        let settings = RuleSettings::default();
        let tree = parse(source);
        let lint = |split: &Split<'_>| {
            engine.lint_split(source, tree.as_ref(), path, &settings, None, None, split).diagnostics
        };
        let whole = lint(&|_: Node, _: &str| None);
        let split = tree.as_ref().and_then(|tree| split(tree.root_node(), source, count));
        (whole, split.map(|_| lint(&|root: Node, source: &str| super::split(root, source, count))))
    }

    #[test]
    fn a_file_linted_in_parts_has_the_findings_of_a_whole_lint() {
        let files = sources();
        assert!(files.len() > 100, "the fixtures and test cases are found");
        // Scripts of several files each: module-level code between the definitions of
        // another file, findings of rules that report once per module body in both.
        let joined: Vec<(PathBuf, String)> = files
            .windows(4)
            .step_by(2)
            .map(|group| (group[0].0.clone(), group.iter().map(|(_, text)| format!("{text}\n")).collect()))
            .collect();
        let (mut split, mut found) = (0, 0);
        for (path, source) in files.iter().chain(&joined) {
            for count in 2..=4 {
                let (whole, parts) = whole_and_parts(source, path, count);
                let Some(parts) = parts else { continue };
                assert_eq!(parts, whole, "{} in {count} parts", path.display());
                split += 1;
                found += whole.len();
            }
        }
        assert!(split > 300 && found > 1000, "files are split ({split}) and have findings ({found})");
    }

    /// `model(x)` in evaluation code at module level, outside a loop, is reported once
    /// for the module's body: the module's code is linted in one part.
    #[test]
    fn module_level_code_is_linted_in_one_part() {
        let helper = |n: usize| format!("def helper_{n}(x):\n    y = x * 2\n    return y\n\n\n");
        let source = format!(
            "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\nval_loader = []\nout = model(val_x)\n{}\
             print(out)\nres = model(val_y)\n{}",
            (0..40).map(helper).collect::<String>(),
            (40..80).map(helper).collect::<String>(),
        );
        let (whole, parts) = whole_and_parts(&source, Path::new("evaluate.py"), 2);
        assert_eq!(whole.iter().filter(|d| d.code == "OOM002").count(), 1);
        assert_eq!(parts, Some(whole));
        let root = parse(&source).expect("parses");
        let parts = split(root.root_node(), &source, 2).expect("two parts");
        let last = parts.last().expect("parts");
        for statement in ["model.eval()", "out = model(val_x)", "res = model(val_y)"] {
            let at = source.find(statement).expect("in the source");
            assert!(last.iter().any(|r| r.contains(&at)), "{statement} in the last part");
        }
        assert!(parts[0].iter().all(|r| source[r.clone()].trim_start().starts_with("def ")));
    }

    /// A part ends where a line starts: a definition whose line goes on with another
    /// statement's comment is left to the last part with it.
    #[test]
    fn parts_end_where_lines_start() {
        let mut source = String::new();
        for n in 0..60 {
            let tail = if n == 10 { "  # oomlint: ignore[OOM001]" } else { "" };
            source.push_str(&format!("def f_{n}(): return {n}\n{tail}\n"));
        }
        let tree = parse(&source).expect("parses");
        let parts = split(tree.root_node(), &source, 3).expect("three parts");
        for range in parts.iter().flatten() {
            assert!(range.start == 0 || source.as_bytes()[range.start - 1] == b'\n', "{range:?}");
            assert!(range.end == source.len() || source.as_bytes()[range.end - 1] == b'\n', "{range:?}");
        }
        let f10 = source.find("def f_10").expect("defined");
        assert!(parts.last().expect("parts").iter().any(|r| r.contains(&f10)));
        let covered: usize = parts.iter().flatten().map(|r| r.len()).sum();
        assert_eq!(covered, source.len(), "the parts cover the file once");
    }

    #[test]
    fn small_files_and_files_with_syntax_errors_are_linted_whole() {
        let definitions: String = (0..2000).map(|n| format!("def f_{n}(x):\n    return x + {n}\n\n")).collect();
        let tree = parse(&definitions).expect("parses");
        assert!(definitions.len() > 2 * PART_BYTES);
        assert_eq!(of(tree.root_node(), &definitions, 2).map(|p| p.len()), Some(2));
        assert_eq!(of(tree.root_node(), &definitions, 1), None, "one core");
        let small = &definitions[..PART_BYTES];
        let small = &small[..small.rfind("\ndef").expect("definitions") + 1];
        assert_eq!(of(parse(small).expect("parses").root_node(), small, 2), None, "a small file");
        let broken = format!("{definitions}x = (\n");
        assert_eq!(of(parse(&broken).expect("parses").root_node(), &broken, 2), None, "a syntax error");
    }
}
