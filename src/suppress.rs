//! Inline suppression comments:
//! - `# oomlint: ignore[OOM001, OOM002]` or bare `# oomlint: ignore` on the reported line;
//! - `# noqa: OOM001` (and bare `# noqa`), as other Python linters spell it;
//! - `# oomlint: ignore-file` on a comment line of its own silences the whole file.
//!
//! Only real comments count (found through the tree), never text inside a string. Each
//! directive remembers which of its codes suppressed something, for the rules that judge
//! the comments themselves (`Check::Suppressions`) in the engine's suppression stage.

use crate::diagnostic::{Diagnostic, TextRange};
use crate::engine::text_test;
use crate::engine::tree::KindName;
use crate::source::LineIndex;
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;
use tree_sitter::Node;

/// What the engine knows about a rule code written in a suppression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeStatus {
    /// The rule ran on this file: if its code suppressed nothing, nothing was there.
    Ran,
    /// A rule of ours that did not run here (disabled by configuration or selection):
    /// whether its suppression is needed cannot be told.
    NotRun,
    /// No rule has this code.
    Unknown,
}

/// How a directive is spelled: ours, or the `noqa` other linters share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spelling {
    Oomlint,
    Noqa,
}

/// One suppression comment (or the part of a comment that is one).
#[derive(Debug, Clone)]
pub struct Directive {
    pub spelling: Spelling,
    /// Zero-based line.
    pub line: usize,
    /// From the directive's `#` to the end of its code list.
    pub range: TextRange,
    /// The comment the directive sits in.
    pub comment: TextRange,
    /// The listed codes (upper-cased) and where each is written; empty for a bare
    /// directive, which suppresses every rule.
    pub codes: Vec<(String, TextRange)>,
    /// Whether anything was suppressed by the directive as a whole, and by each code.
    pub used: bool,
    pub used_codes: Vec<bool>,
}

/// The suppressions of one file.
#[derive(Debug, Default)]
pub struct Suppressions {
    pub directives: Vec<Directive>,
    /// Zero-based line → indices into `directives`.
    by_line: HashMap<usize, Vec<usize>>,
    index: Option<LineIndex>,
}

fn line_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    // Code lists stay on the comment's line: `[ \t,]`, never `\s`, between codes.
    PATTERN.get_or_init(|| {
        Regex::new(
            r"(?i)#[ \t]*(?:(?P<ours>oomlint[ \t]*:[ \t]*ignore)(?:\[(?P<codes>[^\]\n]*)\])?(?:[ \t\r\n]|$)|noqa(?:[ \t]*:[ \t]*(?P<noqa>[A-Z]+[0-9]+(?:[ \t,]+[A-Z]+[0-9]+)*))?)",
        )
        .expect("valid suppression regex")
    })
}

fn file_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"(?m)^[ \t]*#\s*oomlint\s*:\s*ignore-file\b").expect("valid regex"))
}

fn code_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"[A-Za-z]+[0-9]+|[^\s,]+").expect("valid regex"))
}

impl Suppressions {
    pub fn ignores_whole_file(source: &str) -> bool {
        text_test::contains(source, "ignore-file") && file_pattern().is_match(source)
    }

    /// Whether `source` may hold a suppression comment at all (a cheap text test).
    pub fn could_exist(source: &str) -> bool {
        text_test::contains_any(source, &["oomlint", "noqa", "NOQA"])
    }

    pub fn parse(source: &str, root: Node) -> Suppressions {
        let mut suppressions = Suppressions::default();
        if !Suppressions::could_exist(source) {
            return suppressions;
        }
        let index = LineIndex::new(source);
        for found in line_pattern().captures_iter(source) {
            let whole = found.get(0).expect("a match has group 0");
            let hash = whole.start();
            // The `#` must sit in a real comment, not inside a string.
            let Some(comment) = root.descendant_for_byte_range(hash, hash + 1) else { continue };
            if comment.kind_name() != "comment" {
                continue;
            }
            let spelling = if found.name("ours").is_some() { Spelling::Oomlint } else { Spelling::Noqa };
            let list = found.name("codes").or(found.name("noqa"));
            let codes: Vec<(String, TextRange)> = list
                .map(|list| {
                    code_pattern()
                        .find_iter(list.as_str())
                        .map(|code| {
                            let start = list.start() + code.start();
                            (code.as_str().to_ascii_uppercase(), TextRange { start, end: start + code.len() })
                        })
                        .collect()
                })
                .unwrap_or_default();
            // The directive ends at its code list (or keyword), not at the space after it.
            let end = match (found.name("codes"), list) {
                (Some(codes), _) => codes.end() + 1,
                (None, Some(list)) => list.end(),
                (None, None) => hash + whole.as_str().trim_end().len(),
            };
            let line = index.line_of(hash);
            suppressions.by_line.entry(line).or_default().push(suppressions.directives.len());
            suppressions.directives.push(Directive {
                spelling,
                line,
                range: TextRange { start: hash, end },
                comment: comment_without_carriage_return(source, TextRange::of(comment)),
                used_codes: vec![false; codes.len()],
                codes,
                used: false,
            });
        }
        suppressions.index = Some(index);
        suppressions
    }

    /// Keep the findings no directive suppresses, marking the directives (and codes)
    /// that suppressed something.
    pub fn filter(&mut self, diagnostics: &mut Vec<Diagnostic>) {
        let Some(index) = &self.index else { return };
        let (by_line, directives) = (&self.by_line, &mut self.directives);
        diagnostics.retain(|diagnostic| {
            let line = index.line_of(diagnostic.range.start);
            let mut suppressed = false;
            for &at in by_line.get(&line).into_iter().flatten() {
                let directive = &mut directives[at];
                if directive.codes.is_empty() {
                    directive.used = true;
                    suppressed = true;
                }
                for (code, used) in directive.codes.iter().zip(directive.used_codes.iter_mut()) {
                    if code.0 == diagnostic.code {
                        *used = true;
                        directive.used = true;
                        suppressed = true;
                    }
                }
            }
            !suppressed
        });
    }
}

/// tree-sitter-python's comment token runs to the `\n`, so on a `\r\n` line it holds the
/// `\r`: that belongs to the line ending, which removing the comment must keep.
fn comment_without_carriage_return(source: &str, comment: TextRange) -> TextRange {
    let end = comment.start + source[comment.start..comment.end].trim_end_matches('\r').len();
    TextRange { start: comment.start, end }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(source: &str) -> Suppressions {
        let tree = crate::engine::parse(source).unwrap();
        Suppressions::parse(source, tree.root_node())
    }

    #[test]
    fn directives_record_their_codes_and_where_they_are_written() {
        let source = "x = 1  # noqa: E501, oom001\ny = 2  # oomlint: ignore[OOM002 ,OOM003] why\ns = '# noqa'\n";
        let found = parse(source);
        assert_eq!(found.directives.len(), 2, "{:#?}", found.directives);
        let noqa = &found.directives[0];
        assert_eq!(noqa.spelling, Spelling::Noqa);
        let codes: Vec<&str> = noqa.codes.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(codes, ["E501", "OOM001"]);
        assert_eq!(&source[noqa.codes[1].1.start..noqa.codes[1].1.end], "oom001");
        let ours = &found.directives[1];
        assert_eq!(&source[ours.range.start..ours.range.end], "# oomlint: ignore[OOM002 ,OOM003]");
        assert_eq!(&source[ours.comment.start..ours.comment.end], "# oomlint: ignore[OOM002 ,OOM003] why");
    }

    #[test]
    fn a_code_list_never_continues_on_the_next_line() {
        let found = parse("f()  # noqa: E501\nx1 = 2\n");
        let codes: Vec<&str> = found.directives[0].codes.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(codes, ["E501"]);
    }
}
