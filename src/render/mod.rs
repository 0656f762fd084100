//! Output formats. Each renderer receives the linted files with their text, so code
//! frames and character columns come from the same source the engine saw.

mod concise;
mod full;
mod github;
mod json;
mod sarif;

use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::Applicability;
use crate::notebook::CellIndex;
use crate::source::{LineIndex, Location};
use std::io::{self, Write};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Each finding with a code frame and a help line.
    Full,
    /// One line per finding.
    Concise,
    /// A JSON array of findings (schema in docs/json-output.md).
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other CI systems.
    Sarif,
    /// GitHub Actions annotations (workflow commands).
    Github,
}

/// One file's findings with the text they point into.
pub struct LintedFile {
    /// The path as shown to the user.
    pub path: String,
    /// The code the positions are in: a Python file's text is shared with the lint.
    pub source: Arc<str>,
    pub diagnostics: Vec<Diagnostic>,
    /// How many findings were fixed before `diagnostics` were found.
    pub fixed: usize,
    /// For a notebook: where each cell starts in `source` (its code cells joined), so
    /// positions are reported by cell and line within the cell.
    pub cells: Option<CellIndex>,
}

/// A position as shown: one-based row and column, within a notebook cell when `cell`
/// is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub cell: Option<usize>,
    pub row: usize,
    pub column: usize,
}

impl std::fmt::Display for Place {
    /// `12:5`, or `cell 3:2:5` in a notebook.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(cell) = self.cell {
            write!(f, "cell {cell}:")?;
        }
        write!(f, "{}:{}", self.row, self.column)
    }
}

/// What the summary says besides the findings: fixes, and inputs never checked.
#[derive(Debug, Clone, Copy, Default)]
pub struct FixSummary {
    /// Fixes were applied (or, with `--diff`, computed).
    pub fixing: bool,
    /// `--unsafe-fixes` was given.
    pub unsafe_fixes: bool,
    /// Inputs refused with an error (reported on standard error): "All checks passed."
    /// would claim they were checked.
    pub unchecked: usize,
}

impl LintedFile {
    pub fn new(path: String, source: impl Into<Arc<str>>, diagnostics: Vec<Diagnostic>) -> LintedFile {
        LintedFile { path, source: source.into(), diagnostics, fixed: 0, cells: None }
    }

    /// Where `offset` is, as shown to the user.
    pub fn place(&self, index: &LineIndex, offset: usize) -> Place {
        match &self.cells {
            Some(cells) => {
                let (cell, Location { row, column }) = cells.locate(&self.source, index, offset);
                Place { cell: Some(cell), row, column }
            }
            None => {
                let Location { row, column } = index.location(&self.source, offset);
                Place { cell: None, row, column }
            }
        }
    }

    /// Start and end of each finding, as shown.
    fn located<'f, 'i>(
        &'f self,
        index: &'i LineIndex,
    ) -> impl Iterator<Item = (&'f Diagnostic, Place, Place)> + use<'f, 'i> {
        self.diagnostics.iter().map(move |d| (d, self.place(index, d.range.start), self.place(index, d.range.end)))
    }
}

pub fn render(
    format: OutputFormat,
    files: &[LintedFile],
    color: bool,
    fixes: &FixSummary,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        OutputFormat::Full => full::render(files, color, out)?,
        OutputFormat::Concise => concise::render(files, color, out)?,
        OutputFormat::Json => return json::render(files, out),
        OutputFormat::Sarif => return sarif::render(files, out),
        OutputFormat::Github => return github::render(files, out),
    }
    writeln!(out, "{}", summary(files, fixes))
}

/// `Found 3 problems: 2 errors, 1 warning.` or `All checks passed.`, then what fixing
/// did or could do.
pub fn summary(files: &[LintedFile], fixes: &FixSummary) -> String {
    let all = files.iter().flat_map(|f| &f.diagnostics);
    let total = all.clone().count();
    let fixed: usize = files.iter().map(|f| f.fixed).sum();
    let mut lines = Vec::new();
    if fixes.fixing && fixed > 0 {
        lines.push(format!("Fixed {fixed} {}.", if fixed == 1 { "problem" } else { "problems" }));
    }
    if total == 0 {
        lines.push(match (fixed > 0, fixes.unchecked) {
            (true, 0) => "No problems remain.".to_string(),
            (false, 0) => "All checks passed.".to_string(),
            (_, 1) => "No problems found, but 1 input could not be checked (see the error above).".to_string(),
            (_, n) => format!("No problems found, but {n} inputs could not be checked (see the errors above)."),
        });
        return lines.join("\n");
    }
    let counts: Vec<String> = Severity::ALL
        .iter()
        .filter_map(|&severity| {
            let n = all.clone().filter(|d| d.severity == severity).count();
            let noun = match (severity, n) {
                (Severity::Info, _) => "info".to_string(),
                (_, 1) => severity.to_string(),
                _ => format!("{severity}s"),
            };
            (n > 0).then(|| format!("{n} {noun}"))
        })
        .collect();
    let problems = if total == 1 { "problem" } else { "problems" };
    let found = if fixes.fixing { "Remaining" } else { "Found" };
    lines.push(format!("{found} {total} {problems}: {}.", counts.join(", ")));
    let with = |applicability: Applicability| {
        all.clone().filter(|d| d.fix.as_ref().is_some_and(|f| f.applicability == applicability)).collect::<Vec<_>>()
    };
    let (safe, unsafe_) = (with(Applicability::Safe), with(Applicability::Unsafe));
    if !fixes.fixing && !safe.is_empty() {
        lines.push(format!("{} fixable with `--fix`.", safe.len()));
    }
    // After `--fix --unsafe-fixes` no unsafe fix is left unapplied on purpose.
    let applied_unsafe = fixes.fixing && fixes.unsafe_fixes;
    if !unsafe_.is_empty() && !applied_unsafe {
        let mut codes: Vec<&str> = unsafe_.iter().map(|d| d.code).collect();
        codes.sort_unstable();
        codes.dedup();
        let (count, has) = match unsafe_.len() {
            1 => ("1 problem".to_string(), "has an unsafe fix"),
            n => (format!("{n} problems"), "have unsafe fixes"),
        };
        lines.push(format!("{count} {has} ({}): review, then apply with `--fix --unsafe-fixes`.", codes.join(", ")));
    }
    lines.join("\n")
}

/// ANSI styling, or nothing when colour is off.
pub(crate) struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }

    pub fn severity(&self, severity: Severity, text: &str) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
        };
        self.paint(code, text)
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.paint("34", text)
    }
}

/// A path as findings show it: relative to the working directory when below it.
pub fn shown_path(path: &std::path::Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd).unwrap_or(path).display().to_string()
}
