//! Output formats. Each renderer receives the linted files with their text, so code
//! frames and character columns come from the same source the engine saw.

mod concise;
mod full;
mod json;

use crate::diagnostic::{Diagnostic, Severity};
use crate::source::{LineIndex, Location};
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Each finding with a code frame and a help line.
    Full,
    /// One line per finding.
    Concise,
    /// A JSON array of findings (schema in docs/json-output.md).
    Json,
}

/// One file's findings with the text they point into.
pub struct LintedFile {
    /// The path as shown to the user.
    pub path: String,
    pub source: String,
    pub diagnostics: Vec<Diagnostic>,
}

impl LintedFile {
    pub fn new(path: String, source: String, diagnostics: Vec<Diagnostic>) -> LintedFile {
        LintedFile { path, source, diagnostics }
    }

    /// Start and end of each finding, with its line index computed once.
    fn located(&self) -> impl Iterator<Item = (&Diagnostic, Location, Location)> {
        let index = LineIndex::new(&self.source);
        self.diagnostics
            .iter()
            .map(move |d| (d, index.location(&self.source, d.range.start), index.location(&self.source, d.range.end)))
    }
}

pub fn render(format: OutputFormat, files: &[LintedFile], color: bool, out: &mut dyn Write) -> io::Result<()> {
    match format {
        OutputFormat::Full => full::render(files, color, out)?,
        OutputFormat::Concise => concise::render(files, color, out)?,
        OutputFormat::Json => return json::render(files, out),
    }
    writeln!(out, "{}", summary(files))
}

/// `Found 3 problems: 2 errors, 1 warning.` or `All checks passed.`
pub fn summary(files: &[LintedFile]) -> String {
    let all = files.iter().flat_map(|f| &f.diagnostics);
    let total = all.clone().count();
    if total == 0 {
        return "All checks passed.".to_string();
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
    format!("Found {total} {problems}: {}.", counts.join(", "))
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
