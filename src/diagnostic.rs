//! The one type every front end consumes: a finding of one rule at one place.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How loudly a finding is reported. Ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Info];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A half-open byte range into the file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub fn of(node: tree_sitter::Node) -> TextRange {
        TextRange { start: node.start_byte(), end: node.end_byte() }
    }
}

/// One finding. `severity` starts as the rule's verdict for this case and is then
/// overridden by configuration, so front ends never re-derive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: &'static str,
    pub range: TextRange,
    pub severity: Severity,
    pub message: String,
    /// What to do about it, one sentence.
    pub help: String,
    /// The repair, computed with the finding so every front end applies the same edits.
    pub fix: Option<crate::fix::Fix>,
    /// Places in other files that decided the finding (the caller that runs a function
    /// with autograd on, the callee that returns a graph-attached tensor).
    pub related: Vec<Related>,
}

/// A place in another file that a finding rests on, with what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub path: std::path::PathBuf,
    /// 1-based.
    pub line: u32,
    pub message: String,
}
