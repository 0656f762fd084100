//! `--diff` output: a unified diff that `patch` applies. Lines are split at `\n` only,
//! as `patch` splits them, so a `\r` (alone, or doubled before `\r\n`) stays inside its
//! line instead of ending one, and a last line without `\n` is marked as such.

use similar::{Algorithm, DiffTag, capture_diff_slices, group_diff_ops};
use std::fmt::Write;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The diff from `before` to `after` for the file shown as `shown`; empty when they are equal.
pub fn unified_diff(shown: &str, before: &str, after: &str) -> String {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let groups = group_diff_ops(capture_diff_slices(Algorithm::Myers, &old, &new), CONTEXT);
    if groups.is_empty() {
        return String::new();
    }
    let mut out = format!("--- a/{shown}\n+++ b/{shown}\n");
    for group in groups {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(out, "@@ -{} +{} @@", hunk_range(&old_range), hunk_range(&new_range));
        for op in &group {
            let (tag, old_lines, new_lines) = op.as_tag_tuple();
            let mut push = |sign: char, line: &str| {
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            };
            match tag {
                DiffTag::Equal => old[old_lines].iter().for_each(|l| push(' ', l)),
                DiffTag::Delete => old[old_lines].iter().for_each(|l| push('-', l)),
                DiffTag::Insert => new[new_lines].iter().for_each(|l| push('+', l)),
                DiffTag::Replace => {
                    old[old_lines].iter().for_each(|l| push('-', l));
                    new[new_lines].iter().for_each(|l| push('+', l));
                }
            }
        }
    }
    out
}

/// `start,count` with a one-based start; an empty range names the line before it.
fn hunk_range(range: &std::ops::Range<usize>) -> String {
    match range.len() {
        0 => format!("{},0", range.start),
        1 => format!("{}", range.start + 1),
        n => format!("{},{n}", range.start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carriage_returns_stay_inside_their_lines() {
        let diff = unified_diff("t.py", "a\r\r\nb\r\r\nc\r\r\n", "a\r\r\nB\r\r\nc\r\r\n");
        assert_eq!(diff, "--- a/t.py\n+++ b/t.py\n@@ -1,3 +1,3 @@\n a\r\r\n-b\r\r\n+B\r\r\n c\r\r\n");
    }

    #[test]
    fn a_last_line_without_newline_is_marked() {
        let diff = unified_diff("t.py", "a\nb", "a\nc");
        assert_eq!(
            diff,
            "--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified_diff("t.py", "a\n", "a\n"), "");
    }
}
