//! Inline suppression comments:
//! - `# oomlint: ignore[OOM001, OOM002]` or bare `# oomlint: ignore` on the reported line;
//! - `# noqa: OOM001` (and bare `# noqa`), as other Python linters spell it;
//! - `# oomlint: ignore-file` on a comment line of its own silences the whole file.
//!
//! Only real comments count (found through the tree), never text inside a string.

use crate::diagnostic::Diagnostic;
use crate::source::LineIndex;
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;
use tree_sitter::Node;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    All,
    Codes(Vec<String>),
}

/// The suppressions of one file, by zero-based line.
#[derive(Debug, Default)]
pub struct Suppressions {
    lines: HashMap<usize, Scope>,
    index: Option<LineIndex>,
}

fn line_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r"(?i)#\s*(?:oomlint\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\])?(?:\s|$)|noqa(?:\s*:\s*(?P<noqa>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?)")
            .expect("valid suppression regex")
    })
}

fn file_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"(?m)^[ \t]*#\s*oomlint\s*:\s*ignore-file\b").expect("valid regex"))
}

impl Suppressions {
    pub fn ignores_whole_file(source: &str) -> bool {
        source.contains("ignore-file") && file_pattern().is_match(source)
    }

    pub fn parse(source: &str, root: Node) -> Suppressions {
        let mut suppressions = Suppressions::default();
        if !source.contains("oomlint") && !source.contains("noqa") {
            return suppressions;
        }
        let index = LineIndex::new(source);
        for found in line_pattern().captures_iter(source) {
            let hash = found.get(0).map_or(0, |m| m.start());
            // The `#` must open a real comment, not sit inside a string.
            let Some(node) = root.descendant_for_byte_range(hash, hash + 1) else { continue };
            if node.kind() != "comment" {
                continue;
            }
            let codes = found.name("codes").or(found.name("noqa")).map(|m| {
                m.as_str()
                    .split([',', ' ', '\t'])
                    .filter(|c| !c.is_empty())
                    .map(|c| c.trim().to_ascii_uppercase())
                    .collect::<Vec<_>>()
            });
            let scope = match codes {
                Some(codes) if !codes.is_empty() => Scope::Codes(codes),
                _ => Scope::All,
            };
            let line = index.line_of(hash);
            match (suppressions.lines.get_mut(&line), scope) {
                (Some(Scope::Codes(existing)), Scope::Codes(more)) => existing.extend(more),
                (Some(_), Scope::Codes(_)) => {}
                (_, scope) => {
                    suppressions.lines.insert(line, scope);
                }
            }
        }
        suppressions.index = Some(index);
        suppressions
    }

    pub fn suppresses(&self, diagnostic: &Diagnostic) -> bool {
        let Some(index) = &self.index else { return false };
        let line = index.line_of(diagnostic.range.start);
        match self.lines.get(&line) {
            Some(Scope::All) => true,
            Some(Scope::Codes(codes)) => codes.iter().any(|c| c == diagnostic.code),
            None => false,
        }
    }
}
