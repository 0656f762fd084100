//! The fix model every front end shares: a fix is a set of non-overlapping text edits
//! plus how safe it is to apply without review. `--fix`, `--diff` and the editor's code
//! actions all apply fixes through `apply`.

pub mod apply;
pub mod diff;
pub mod edits;
pub mod write;

use crate::diagnostic::TextRange;
use serde::Serialize;

/// How safe a fix is, from most to least: the order `--fix` / `--unsafe-fixes` filter by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Shown as a suggestion, never applied.
    DisplayOnly,
    /// Changes meaning in a way to review: applied only with `--unsafe-fixes`.
    Unsafe,
    /// Keeps the program's meaning: applied by `--fix` and the editor's fix-all.
    Safe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::DisplayOnly => "display-only",
            Applicability::Unsafe => "unsafe",
            Applicability::Safe => "safe",
        }
    }
}

/// Replace `range` with `content`. Newlines in `content` are written as `\n` and turned
/// into the file's line ending when applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

impl Edit {
    pub fn replace(range: TextRange, content: impl Into<String>) -> Edit {
        Edit { range, content: content.into() }
    }

    pub fn insert(at: usize, content: impl Into<String>) -> Edit {
        Edit { range: TextRange { start: at, end: at }, content: content.into() }
    }
}

/// A fix is built only through its constructors, which keep its edits sorted and
/// without duplicates: applying them in order is then one pass over the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// What the fix does, for a code action's title (`Replace with ...`).
    pub title: String,
    /// Sorted by range, non-overlapping; insertions at one point keep the rule's order.
    edits: Vec<Edit>,
}

impl Fix {
    pub fn new(applicability: Applicability, title: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix { applicability, title: title.into(), edits: in_text_order(edits) }
    }

    pub fn safe(title: impl Into<String>, edits: Vec<Edit>) -> Fix {
        Fix::new(Applicability::Safe, title, edits)
    }

    /// Sorted, without duplicates.
    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// The same fix with each edit's range moved by `map` (the text it points into moved).
    pub fn map_ranges(self, map: impl Fn(TextRange) -> TextRange) -> Fix {
        let edits = self.edits.into_iter().map(|e| Edit { range: map(e.range), ..e }).collect();
        Fix::new(self.applicability, self.title, edits)
    }

    pub fn is_applicable(&self, threshold: Applicability) -> bool {
        self.applicability >= threshold && self.applicability != Applicability::DisplayOnly
    }
}

/// Edits sorted by where they apply, duplicates dropped. The sort is stable: two
/// insertions at one point (an added `import torch` and a decorator on the file's first
/// line) keep the order they were given in, which is the order they read in the result.
pub fn in_text_order<E: std::borrow::Borrow<Edit> + Clone>(mut edits: Vec<E>) -> Vec<E> {
    edits.sort_by_key(|e| (e.borrow().range.start, e.borrow().range.end));
    let mut seen = std::collections::HashSet::new();
    edits.retain(|e| seen.insert(e.borrow().clone()));
    edits
}
