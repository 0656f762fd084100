//! A large file parsed in pieces, one per core, and the pieces' trees joined into one
//! (`join.c`). tree-sitter parses a text from its start to its end on one thread: a
//! 5,000-line script takes it over 30 ms, most of the time from opening the script in
//! the editor to its first findings. So the text is cut where a top-level definition
//! starts, each piece is parsed on its own core, and the pieces' trees are joined.
//!
//! The joined tree has the nodes a whole parse gives, at the same places
//! (`pieces_join_into_the_tree_a_whole_parse_gives`), and the lint reads nothing else.
//! What differs is below what nodes show: the tokens just before a seam were lexed with
//! the end of their piece after them, where a whole parse looked ahead at the next
//! statement. tree-sitter's incremental reparse relies on how far each token looked
//! ahead to tell which tokens an edit touches, so before the joined tree is reparsed
//! after an edit, each seam is marked changed (`seam_edit`): the statements on both
//! sides of it are parsed again. (Reparsing before the first findings are out would not
//! pay: the first reparse of a tree fresh from a parse, joined or whole, takes half the
//! time of a whole parse on a 5,000-line script, where later reparses take a fraction of
//! a millisecond. The language server makes that reparse in the background after them:
//! `Document::cold_tree`.)

use crate::source::LineIndex;
use rayon::prelude::*;
use tree_sitter::{InputEdit, Tree};

/// Below this many bytes per piece a text is parsed whole: a piece saves the time
/// tree-sitter takes to parse it, about 7 ms per 32 KB, and the join and the hand-over
/// between threads cost a fraction of a millisecond.
const PIECE_BYTES: usize = 32 * 1024;

unsafe extern "C" {
    fn oomlint_join_module_trees(
        trees: *const *const tree_sitter::ffi::TSTree,
        count: u32,
        repeat: u16,
    ) -> *mut tree_sitter::ffi::TSTree;
}

/// A tree parsed in pieces, and where they were joined (to mark changed before its first
/// reparse).
pub type Joined = (Tree, Vec<usize>);

/// `source`'s tree, parsed in pieces on the cores, when it is large enough for that to
/// pay and nothing else runs on them (not from a thread of the pool: `check` parses many
/// files at once). `None`: parse it whole, as when a piece does not parse cleanly (a
/// seam inside a string or brackets, or a syntax error anywhere). A tree given has no
/// syntax error.
pub fn parse(source: &str) -> Option<Joined> {
    if rayon::current_thread_index().is_some() {
        return None;
    }
    parse_in(source, rayon::current_num_threads().min(source.len() / PIECE_BYTES))
}

/// `parse` in up to `count` pieces, whatever their size.
pub fn parse_in(source: &str, count: usize) -> Option<Joined> {
    let seams = seams(source, count);
    if seams.is_empty() {
        return None;
    }
    let bounds: Vec<usize> = std::iter::once(0).chain(seams.iter().copied()).chain([source.len()]).collect();
    let trees: Vec<Tree> = bounds
        .par_windows(2)
        .map(|piece| super::reparse(&source[piece[0]..piece[1]], None).filter(|tree| !tree.root_node().has_error()))
        .collect::<Option<_>>()?;
    Some((join(&trees)?, seams))
}

/// The pieces' trees as one tree of their texts put together, when each is a module of
/// whole statements and each but the last ends with its last statement.
fn join(trees: &[Tree]) -> Option<Tree> {
    static REPEAT: std::sync::OnceLock<Option<u16>> = std::sync::OnceLock::new();
    // The grammar's repetition of a module's statements, which a module's root holds.
    let repeat = (*REPEAT.get_or_init(|| {
        let language = super::language();
        (0..language.node_kind_count() as u16).find(|&id| language.node_kind_for_id(id) == Some("module_repeat1"))
    }))?;
    let raw: Vec<*const tree_sitter::ffi::TSTree> = trees.iter().map(|t| t.root_node().into_raw().tree).collect();
    // SAFETY: every pointer is a live tree (`trees` outlives the call), which the
    // function only reads; it returns a new tree, owned here, or null.
    let joined = unsafe { oomlint_join_module_trees(raw.as_ptr(), raw.len() as u32, repeat) };
    // SAFETY: a non-null result is a tree nothing else owns.
    (!joined.is_null()).then(|| unsafe { Tree::from_raw(joined) })
}

/// An edit that changes nothing but marks the seam at `seam` of `source` changed: from
/// the last byte of the statement before it to the first byte of the one after, so that
/// a reparse parses both again, with the whitespace between them.
pub fn seam_edit(source: &str, lines: &LineIndex, seam: usize) -> InputEdit {
    let start = seam - 1;
    let next = seam + source[seam..].len() - source[seam..].trim_start_matches(is_blank).len();
    let end = (next + 1).min(source.len());
    let (start_position, end_position) = (lines.point(start), lines.point(end));
    InputEdit {
        start_byte: start,
        old_end_byte: end,
        new_end_byte: end,
        start_position,
        old_end_position: end_position,
        new_end_position: end_position,
    }
}

/// Whitespace between statements as Python reads it.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

/// Where to cut `source` into up to `count` pieces of about the same length: each cut is
/// at the end of the last token before a line that starts a top-level `def`, `class` or
/// decorator (so the whitespace between is the next piece's), after a line of code (a
/// comment there would be the first piece's last subtree, which `join` does not take).
/// A cut inside a string or brackets makes a piece that does not parse cleanly, which
/// `parse_in` turns down.
///
/// Each cut is the one nearest its share of the text, before or after it: most of a
/// training script is often one `main` function, and a cut before it still parses the
/// rest of the file beside it.
fn seams(source: &str, count: usize) -> Vec<usize> {
    let mut seams: Vec<usize> = Vec::new();
    for k in 1..count {
        let share = source.len() * k / count;
        let after_last = seams.last().map_or(0, |&s| s + 1);
        let after = seam_from(source, share.max(after_last));
        let before = seam_before(source, share).filter(|&seam| seam >= after_last);
        let nearest = match (before, after) {
            (Some(before), Some(after)) => {
                Some(if share.abs_diff(before) <= share.abs_diff(after) { before } else { after })
            }
            (before, after) => before.or(after),
        };
        if let Some(seam) = nearest.filter(|seam| seams.last() != Some(seam)) {
            seams.push(seam);
        }
    }
    seams
}

/// The first cut (see `seams`) at a line starting after `from`.
fn seam_from(source: &str, from: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut at = from;
    while let Some(newline) = memchr::memchr(b'\n', &bytes[at.min(bytes.len())..]) {
        let line = at + newline + 1;
        at = line;
        if let Some(seam) = seam_at(source, line) {
            return Some(seam);
        }
    }
    None
}

/// The last cut (see `seams`) at a line starting at or before `to`.
fn seam_before(source: &str, to: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut end = (to + 1).min(bytes.len());
    while let Some(newline) = memchr::memrchr(b'\n', &bytes[..end]) {
        end = newline;
        if let Some(seam) = seam_at(source, newline + 1) {
            return Some(seam);
        }
    }
    None
}

/// The cut before the line starting at `line`, when that line starts a top-level
/// definition and the line of code before it may end a piece (see `seams`).
fn seam_at(source: &str, line: usize) -> Option<usize> {
    let rest = &source.as_bytes()[line..];
    if !(rest.starts_with(b"def ")
        || rest.starts_with(b"class ")
        || rest.starts_with(b"@")
        || rest.starts_with(b"async def "))
    {
        return None;
    }
    let seam = source[..line].trim_end_matches(is_blank).len();
    let previous_line = &source[source[..seam].rfind('\n').map_or(0, |i| i + 1)..seam];
    // After a comment, a decorator, or a backslash that joins the lines (which the
    // piece would end with, not joining anything): no cut.
    let joins_lines = previous_line.ends_with('\\');
    if seam == 0 || previous_line.trim_start().starts_with('#') || previous_line.starts_with('@') || joins_lines {
        return None;
    }
    Some(seam)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tree::KindName;

    /// Every node of `tree`: its kind, field, place, and whether it is missing or an extra.
    fn nodes(tree: &Tree) -> Vec<String> {
        let mut out = Vec::new();
        let mut cursor = tree.walk();
        loop {
            let node = cursor.node();
            out.push(format!(
                "{} {:?} {:?} {}-{} {:?}-{:?} {} {}",
                node.kind_name(),
                cursor.field_name(),
                node.is_named(),
                node.start_byte(),
                node.end_byte(),
                node.start_position(),
                node.end_position(),
                node.is_missing(),
                node.is_extra(),
            ));
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return out;
                }
            }
        }
    }

    /// A training script as many are: a header, imports, a few helpers, then one `main`
    /// that is most of the text.
    fn one_big_main() -> String {
        let mut text = with_header("import torch\n\n\ndef parse_args():\n    return None\n\n\ndef main():\n");
        for i in 0..400 {
            text.push_str(&format!("    loss_{i} = torch.ones(2).sum()\n"));
        }
        text + "\n\nif __name__ == \"__main__\":\n    main()\n"
    }

    #[test]
    fn a_text_is_cut_at_the_definition_nearest_its_share_before_or_after_it() {
        let text = one_big_main();
        // No definition starts after the middle: the cut is before `main`.
        let main = text.find("\ndef main").unwrap();
        assert_eq!(seams(&text, 2), [text[..main].trim_end().len()]);
        let helpers = "def a():\n    pass\n\n\ndef b():\n    pass\n\n\ndef c():\n    pass\n";
        let (a_end, b_end) = (helpers.find("\n\n\ndef b").unwrap(), helpers.find("\n\n\ndef c").unwrap());
        // The middle (29) is nearer the end of `b` (37) than that of `a` (17) ...
        assert_eq!((helpers.len() / 2, a_end, b_end), (29, 17, 37));
        assert_eq!(seams(helpers, 2), [b_end]);
        // ... and with a longer `a`, nearer its end.
        let longer = helpers.replacen("def a():\n", "def a():\n    x = 1\n    y = 2\n", 1);
        assert_eq!(seams(&longer, 2), [longer.find("\n\n\ndef b").unwrap()]);
        assert_eq!(seam_before(helpers, a_end), None);
        assert_eq!(seam_before(helpers, a_end + 4), Some(a_end));
        assert_eq!(seam_before(helpers, helpers.len()), Some(b_end));
    }

    /// `module` after a shebang line and a license header.
    fn with_header(module: &str) -> String {
        format!("#!/usr/bin/env python\n# Copyright the authors.\n#\n# Licensed under a license.\n\n{module}")
    }

    /// A module of many top-level definitions and statements, with the whitespace,
    /// comments and decorators that sit between them in real files.
    fn module(definitions: usize) -> String {
        let mut text = String::from("import torch\n# a comment\n\nSCALE = 2\n");
        for i in 0..definitions {
            let gap = ["\n\n", "\n", "\n\n\n  \n", "\n\t\n", "\r\n\r\n"][i % 5];
            text.push_str(gap);
            match i % 4 {
                0 => text.push_str(&format!("@torch.no_grad()\ndef evaluate_{i}(model, x):\n    return model(x)  # why\n")),
                1 => text.push_str(&format!(
                    "class Net{i}(torch.nn.Module):\n    def forward(self, x):\n        if x:\n            return (x +\n                1)\n        return x\n"
                )),
                2 => text.push_str(&format!("def train_{i}(model, loader):\n    for x in loader:\n        loss = model(x)\n        loss.backward()\n    # trailing\n")),
                _ => text.push_str(&format!("async def serve_{i}():\n    s = '''\ndef not_a_seam():\n'''\n    return s\nx_{i} = [\n    1,\n]\n")),
            }
        }
        text.push_str("\nif __name__ == '__main__':\n    train_2(None, [])\n");
        text
    }

    #[test]
    fn pieces_join_into_the_tree_a_whole_parse_gives() {
        let mut sources = vec![module(40), module(7)];
        // Most files open with comments (a license, a shebang line), which a module's
        // root holds before its statements.
        let headed = [
            with_header(&module(40)),
            format!("# one comment\n{}", module(12)),
            one_big_main(),
            // A piece of one statement (a pipeline's class), and comments after the last.
            format!(
                "{}\n\n# the end\n#\n",
                one_big_main().replace("def main():", "class Main:").split("\n\nif").next().unwrap()
            ),
        ];
        for source in &headed {
            assert!(parse_in(source, 2).is_some(), "not joined:\n{source}");
        }
        sources.extend(headed);
        sources.extend(crate::engine::fixture_and_test_sources());
        let mut joined = 0;
        for source in &sources {
            let whole = crate::engine::reparse(source, None).unwrap();
            for count in [2, 3, 5] {
                if let Some((tree, _)) = parse_in(source, count) {
                    joined += 1;
                    assert_eq!(nodes(&tree), nodes(&whole), "{count} pieces of:\n{source}");
                }
            }
        }
        assert!(joined >= 20, "only {joined} texts were parsed in pieces");
    }

    /// The joined tree is the old tree of later edits, as the language server keeps it:
    /// with its seams marked, edits at a seam and on either side of it reparse to the tree
    /// a whole parse gives.
    #[test]
    fn edits_at_a_seam_reparse_as_a_whole_parse() {
        // (Some of the texts have their middle seam inside a string.)
        let cut = |variant: fn(usize) -> String| {
            (8..30).map(variant).find(|s| parse_in(s, 2).is_some()).expect("a text cut in two")
        };
        edits_at_the_seam_reparse_as_a_whole_parse(&cut(module));
        edits_at_the_seam_reparse_as_a_whole_parse(&cut(|n| with_header(&module(n))));
    }

    fn edits_at_the_seam_reparse_as_a_whole_parse(source: &str) {
        let source = source.to_string();
        let seam = seams(&source, 2)[0];
        let next = seam + source[seam..].find(|c: char| !is_blank(c)).unwrap();
        // (start, removed, inserted): indent the next definition into the one before,
        // join the two lines, type after the last token, delete the gap.
        let edits =
            [(next, 0, "    "), (seam, next - seam, " "), (seam, 0, "x"), (seam, next - seam, "\n"), (next, 0, "#")];
        for (start, removed, inserted) in edits {
            let (mut tree, seams) = parse_in(&source, 2).expect("pieces");
            let lines = LineIndex::new(&source);
            for &seam in &seams {
                tree.edit(&seam_edit(&source, &lines, seam));
            }
            let mut edited = source.clone();
            edited.replace_range(start..start + removed, inserted);
            tree.edit(&InputEdit {
                start_byte: start,
                old_end_byte: start + removed,
                new_end_byte: start + inserted.len(),
                start_position: lines.point(start),
                old_end_position: lines.point(start + removed),
                new_end_position: LineIndex::new(&edited).point(start + inserted.len()),
            });
            let reparsed = crate::engine::reparse(&edited, Some(&tree)).unwrap();
            let whole = crate::engine::reparse(&edited, None).unwrap();
            assert_eq!(nodes(&reparsed), nodes(&whole), "edit {start}+{removed} {inserted:?}");
        }
    }

    #[test]
    fn a_cut_that_does_not_leave_whole_statements_is_turned_down() {
        // The only line that starts a definition is inside a string.
        let inside_string = "x = '''\n\ndef f():\n    pass\n'''\ny = 1\n";
        assert!(parse_in(inside_string, 2).is_none());
        // Inside brackets.
        let inside_brackets = "x = [\n1,\n]\ncall(\n\n@dec\n)\n";
        assert!(parse_in(inside_brackets, 2).is_none());
        // After a decorator or a comment, or with nothing before it: no cut there.
        assert_eq!(seam_from("@dec\ndef f():\n    pass\n", 0), None);
        assert_eq!(seam_from("x = 1\n# about f\ndef f():\n    pass\n", 0), None);
        assert_eq!(seam_from("def f():\n    pass\n", 0), None);
        assert_eq!(seam_from("x = 1 + \\\n\ndef f():\n    pass\n", 0), None);
        assert_eq!(seam_from("x = 1  \n\n\n@dec\ndef f():\n    pass\n", 0), Some(5));
    }
}
