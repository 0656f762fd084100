//! A file's summary brought up to date after an edit by walking only the top-level
//! statements the edit changed. The editor's index takes every version of an open file,
//! and summarising a long script whole walks every node of it for a keystroke in one
//! function.
//!
//! What a top-level statement tells the project depends on its own text, on the names
//! the file defines at module level and those the imports before it bind (a name is
//! recorded as passed around only when it is one of them), on how many functions come
//! before it (sites and imports name their function by number) and on its lines. So the
//! statements before the edit that stand where they stood keep what they told; those
//! after it keep it with their lines and function numbers moved, as long as the
//! statements between define the same names and their imports bind the same ones; and
//! the statements between are walked.

use super::summary::{Definition, FileSummary, summarize_statements};
use crate::engine::facts::index::word_places;
use crate::engine::field;
use crate::engine::tree::KindName;
use std::collections::HashSet;
use tree_sitter::{Node, Tree};

/// The summary of `source` (parsed to `tree`) drawn from `old`, the summary of
/// `old_source` (parsed to `old_tree`), walking only the statements between those the
/// edit left in place. `None` where that cannot be told (a syntax error, names defined
/// or imported differently), and the text is then summarised whole.
pub fn resummarize(
    old: &FileSummary,
    old_source: &str,
    old_tree: &Tree,
    source: &str,
    tree: &Tree,
) -> Option<FileSummary> {
    let (old_root, root) = (old_tree.root_node(), tree.root_node());
    if old.has_syntax_errors || old_root.has_error() || root.has_error() {
        return None;
    }
    let (old_units, units) = (statements(old_root), statements(root));
    let (lead, trail) = unchanged_ends(&old_units, old_source, &units, source);
    let (old_middle, middle) = (&old_units[lead..old_units.len() - trail], &units[lead..units.len() - trail]);

    // Lines (1-based) up to `kept` belong to the statements before; from `old_from`
    // (`new_from` now) to those after.
    let kept = lead.checked_sub(1).map_or(0, |last| units[last].end_position().row as u32 + 1);
    let first_after = |units: &[Node]| {
        let at = units.len() - trail;
        units.get(at).filter(|_| trail > 0).map_or(u32::MAX, |u| u.start_position().row as u32 + 1)
    };
    let (old_from, new_from) = (first_after(&old_units), first_after(&units));
    let moved_line = |line: u32| (i64::from(line) + i64::from(new_from) - i64::from(old_from)) as u32;

    // The names defined between must be defined there only: which of two definitions of
    // a name the summary keeps depends on their order. A name defined between, or no
    // longer, reaches the statements outside only where they use it (a use as a value is
    // recorded when the name is defined): a function pasted or deleted that they do not
    // name leaves what they told as it was.
    let (old_defined, defined) = (defined_names(old_middle, old_source), defined_names(middle, source));
    let outside = units[..lead].iter().chain(&units[units.len() - trail..]);
    if defined_names_iter(outside, source).any(|name| defined.contains(name) || old_defined.contains(name)) {
        return None;
    }
    let middle_start = lead.checked_sub(1).map_or(0, |last| units[last].end_byte());
    let middle_end = units.get(units.len() - trail).filter(|_| trail > 0).map_or(source.len(), |u| u.start_byte());
    let (before_middle, after_middle) = (&source[..middle_start], &source[middle_end.max(middle_start)..]);
    let named_outside =
        |name: &&str| [before_middle, after_middle].iter().any(|text| !word_places(text, name).is_empty());
    if old_defined.symmetric_difference(&defined).any(named_outside) {
        return None;
    }

    let before = old.imports.iter().take_while(|i| i.line <= kept).count();
    let imported_before: HashSet<&str> = old.imports[..before].iter().map(|i| &*i.name).collect();
    let walked = summarize_statements(source, root, middle, imported_before.iter().copied());
    let walked_count = walked.functions.len();
    // The names imported between, as the statements after see them.
    let after = |imports: &mut dyn Iterator<Item = &str>| -> HashSet<String> {
        imports.filter(|name| !imported_before.contains(name)).map(str::to_string).collect()
    };
    let old_imports_between = old.imports[before..].iter().take_while(|i| i.line < old_from);
    if after(&mut old_imports_between.clone().map(|i| &*i.name)) != after(&mut walked.imports.iter().map(|i| &*i.name))
    {
        return None;
    }

    // Functions are numbered in document order: those between are renumbered from
    // `first`, those after move by the difference in their number.
    let first = old.functions.iter().take_while(|f| f.line <= kept).count();
    let old_count = old.functions[first..].iter().take_while(|f| f.line < old_from).count();
    let renumber = |function: u32| {
        if function as usize >= first + old_count {
            (function as usize + walked_count - old_count) as u32
        } else {
            function
        }
    };
    let numbered = |function: u32| function + first as u32;

    let mut summary = FileSummary { has_syntax_errors: false, ..FileSummary::default() };
    summary.functions.extend(old.functions[..first].iter().cloned());
    summary.functions.extend(walked.functions);
    summary.functions.extend(old.functions[first + old_count..].iter().map(|f| {
        let mut f = f.clone();
        f.line = moved_line(f.line);
        f
    }));

    summary.imports.extend(old.imports[..before].iter().cloned());
    summary.imports.extend(walked.imports.into_iter().map(|mut i| {
        i.scope = i.scope.map(numbered);
        i
    }));
    let skipped = old_imports_between.count();
    summary.imports.extend(old.imports[before + skipped..].iter().map(|i| {
        let mut i = i.clone();
        i.line = moved_line(i.line);
        i.scope = i.scope.map(renumber);
        i
    }));

    for (name, definition) in &old.definitions {
        if !old_defined.contains(&**name) {
            let definition = match *definition {
                Definition::Function(f) => Definition::Function(renumber(f)),
                Definition::Class => Definition::Class,
            };
            summary.definitions.insert(name.clone(), definition);
        }
    }
    for (name, definition) in walked.definitions {
        let definition = match definition {
            Definition::Function(f) => Definition::Function(numbered(f)),
            Definition::Class => Definition::Class,
        };
        summary.definitions.insert(name, definition);
    }

    let mut walked_sites = walked.sites;
    for (name, sites) in &old.sites {
        let mut all: Vec<_> = sites.iter().take_while(|s| s.line <= kept).cloned().collect();
        for mut site in walked_sites.remove(name).into_iter().flatten() {
            site.caller = site.caller.map(numbered);
            all.push(site);
        }
        all.extend(sites.iter().skip_while(|s| s.line < old_from).map(|s| {
            let mut s = s.clone();
            s.line = moved_line(s.line);
            s.caller = s.caller.map(renumber);
            s
        }));
        if !all.is_empty() {
            summary.sites.insert(name.clone(), all);
        }
    }
    for (name, mut sites) in walked_sites {
        for site in &mut sites {
            site.caller = site.caller.map(numbered);
        }
        summary.sites.insert(name, sites);
    }
    Some(summary)
}

/// The top-level statements of `root`.
fn statements(root: Node) -> Vec<Node> {
    let mut cursor = root.walk();
    root.named_children(&mut cursor).collect()
}

/// How many statements at the start and at the end of the file the edit left in place
/// (the same text, the end ones moved by the change in length), each set apart from the
/// statements between by a line break: what a statement tells is kept by its lines.
fn unchanged_ends(old_units: &[Node], old_source: &str, units: &[Node], source: &str) -> (usize, usize) {
    let (old_bytes, bytes) = (old_source.as_bytes(), source.as_bytes());
    let prefix = old_bytes.iter().zip(bytes).take_while(|(a, b)| a == b).count();
    let shorter = old_bytes.len().min(bytes.len());
    let suffix = old_bytes.iter().rev().zip(bytes.iter().rev()).take_while(|(a, b)| a == b).count();
    let suffix = suffix.min(shorter - prefix);
    let delta = bytes.len() as isize - old_bytes.len() as isize;
    let moved = |at: usize| (at as isize + delta) as usize;

    let mut lead = old_units
        .iter()
        .zip(units)
        .take_while(|(old, new)| old.byte_range() == new.byte_range() && new.end_byte() <= prefix)
        .count();
    // A statement that shares its last line with the next (`a = 1; b = 2`) is walked too.
    let apart =
        |before: &Node, after: Option<&Node>| after.is_none_or(|a| before.end_position().row < a.start_position().row);
    while lead > 0 && !(apart(&units[lead - 1], units.get(lead)) && apart(&old_units[lead - 1], old_units.get(lead))) {
        lead -= 1;
    }
    let room = old_units.len().min(units.len()) - lead;
    let mut trail = old_units
        .iter()
        .rev()
        .zip(units.iter().rev())
        .take(room)
        .take_while(|(old, new)| {
            old.start_byte() >= old_bytes.len() - suffix
                && (moved(old.start_byte()), moved(old.end_byte())) == (new.start_byte(), new.end_byte())
        })
        .count();
    let apart_before = |units: &[Node], trail: usize| {
        let at = units.len() - trail;
        at == 0 || units[at - 1].end_position().row < units[at].start_position().row
    };
    while trail > 0 && !(apart_before(units, trail) && apart_before(old_units, trail)) {
        trail -= 1;
    }
    (lead, trail)
}

/// The names the top-level `units` define with `def` or `class`.
fn defined_names<'s>(units: &[Node], source: &'s str) -> HashSet<&'s str> {
    defined_names_iter(units.iter(), source).collect()
}

fn defined_names_iter<'s, 'u, 't: 'u>(
    units: impl Iterator<Item = &'u Node<'t>>,
    source: &'s str,
) -> impl Iterator<Item = &'s str> {
    units.filter_map(move |unit| {
        let definition = match unit.kind_name() {
            "decorated_definition" => unit.child_by_field_id(field::DEFINITION)?,
            _ => *unit,
        };
        matches!(definition.kind_name(), "function_definition" | "class_definition")
            .then(|| definition.child_by_field_id(field::NAME))
            .flatten()
            .map(|name| &source[name.byte_range()])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::summary::summarize;

    /// The summary drawn from the old one, when there is one, and a whole walk's.
    fn both(old_text: &str, text: &str) -> (Option<FileSummary>, FileSummary) {
        let parse = |text: &str| crate::engine::parse(text).expect("parses");
        let (old_tree, tree) = (parse(old_text), parse(text));
        let old = summarize(old_text, old_tree.root_node());
        (resummarize(&old, old_text, &old_tree, text, &tree), summarize(text, tree.root_node()))
    }

    const SCRIPT: &str = "import torch\nfrom evaluation import evaluate\n\n\nclass Trainer:\n    def step(self, batch):\n        return self.model(batch)\n\n\ndef validate(model, val_loader):\n    with torch.no_grad():\n        evaluate(model, val_loader)\n\n\ndef main():\n    hooks = [evaluate]\n    validate(model, loader)\n    import helpers\n    helpers.run(validate)\n";

    #[test]
    fn an_edit_in_one_statement_walks_it_alone_and_moves_what_follows() {
        let edits = [
            // A `with` taken out: the site's grad mode and the lines after change.
            ("    with torch.no_grad():\n        evaluate(model, val_loader)\n", "    evaluate(model, val_loader)\n"),
            // A method added: the functions after it are numbered one more.
            (
                "        return self.model(batch)\n",
                "        return self.model(batch)\n\n    def evaluate(self):\n        evaluate(self.model, self.loader)\n",
            ),
            // An import added inside a function, of a name already imported.
            ("    hooks = [evaluate]\n", "    from evaluation import evaluate\n    hooks = [evaluate]\n"),
            // Blank lines only.
            ("\n\ndef main", "\n\n\n\ndef main"),
        ];
        for (old, new) in edits {
            let text = SCRIPT.replacen(old, new, 1);
            let (drawn, whole) = both(SCRIPT, &text);
            assert_eq!(drawn.as_ref(), Some(&whole), "{new:?}");
        }
    }

    /// A function pasted between two others, or deleted, that no other statement names.
    #[test]
    fn a_function_nothing_else_names_pasted_or_deleted_walks_it_alone() {
        let pasted = "def warmup(model, loader):\n    evaluate(model, loader)\n\n\n";
        let text = SCRIPT.replacen("def main", &format!("{pasted}def main"), 1);
        for (old, new) in [(SCRIPT, text.as_str()), (text.as_str(), SCRIPT)] {
            let (drawn, whole) = both(old, new);
            assert_eq!(drawn.as_ref(), Some(&whole));
        }
        assert!(both(SCRIPT, &text).1.definitions.contains_key("warmup"));
    }

    #[test]
    fn what_the_statements_after_read_changing_summarises_the_whole_text() {
        // A name defined that the statements after use, or a new name imported, reaches
        // them.
        for (old, new) in [
            ("def validate(", "def validate_all("),
            ("    helpers.run(validate)\n", "    helpers.run(validate)\n\n\ndef helpers():\n    pass\n"),
            ("    hooks = [evaluate]\n", "    import evaluation\n    hooks = [evaluate]\n"),
        ] {
            let text = SCRIPT.replacen(old, new, 1);
            let (drawn, whole) = both(SCRIPT, &text);
            assert_eq!(drawn, None, "{new:?}");
            assert_ne!(whole, summarize(SCRIPT, crate::engine::parse(SCRIPT).unwrap().root_node()));
        }
        // A syntax error.
        let (drawn, _) = both(SCRIPT, &SCRIPT.replacen("(model, loader)", "(model, loader", 1));
        assert_eq!(drawn, None);
    }

    /// Lines deleted, repeated and moved at places taken from a fixed sequence in every
    /// fixture and test case: the summary drawn from the old one is a whole walk's.
    #[test]
    fn summaries_drawn_from_the_last_version_are_a_whole_walks() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let (mut drawn_count, mut edits) = (0, 0);
        let mut random = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |n: usize| {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            (random % n.max(1) as u64) as usize
        };
        for dir in ["fixtures", "tests/cases"] {
            let walk = ignore::WalkBuilder::new(root.join(dir)).build();
            for entry in walk.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "py")) {
                let text = std::fs::read_to_string(entry.path()).expect("a readable test file");
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                for n in 0..12 {
                    let (at, other) = (below(lines.len()), below(lines.len()));
                    let mut edited: Vec<&str> = lines.clone();
                    match n % 3 {
                        0 if !edited.is_empty() => {
                            edited.remove(at);
                        }
                        1 if !edited.is_empty() => edited.insert(at, lines[at]),
                        _ if !edited.is_empty() => edited.insert(at, lines[other]),
                        _ => {}
                    }
                    let edited = edited.concat();
                    let (drawn, whole) = both(&text, &edited);
                    edits += 1;
                    if let Some(drawn) = drawn {
                        drawn_count += 1;
                        assert_eq!(drawn, whole, "{}, the edit {n}", entry.path().display());
                    }
                }
            }
        }
        assert!(drawn_count * 3 > edits, "{drawn_count} of {edits} summaries were drawn from the old one");
    }
}
