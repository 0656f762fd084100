//! Lint a source, whatever holds it: the one entry point `oomlint check`, `--fix` /
//! `--diff` and the language server share. A source is a Python file's text, a notebook
//! file, or the cells of a notebook an editor holds; notebooks are linted as their Python
//! cells joined, so a name defined in one cell is known in the next, and fixed the same
//! way, each changed cell written back on its own.

use crate::diagnostic::Diagnostic;
use crate::engine::facts::FileWideFacts;
use crate::engine::{Engine, FileReport, RuleSettings};
use crate::fix::Applicability;
use crate::fix::apply::{FixResult, fix_source_keeping};
use crate::notebook::{Cells, Notebook};
use crate::render::LintedFile;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use tree_sitter::Tree;

/// What is linted.
#[derive(Debug)]
pub enum SourceKind {
    /// A Python file's text (a byte-order mark already removed), shared with whoever read
    /// it (the project index, an editor's document) rather than copied.
    Python(Arc<str>),
    /// A Jupyter notebook file.
    Notebook(Notebook),
    /// The cells of a notebook an editor holds, in order.
    Cells(Cells),
}

/// What fixing leaves in the source.
#[derive(Debug)]
pub enum Contents {
    /// The file's new text: the code, or the notebook's JSON with its changed cells
    /// rewritten.
    File(String),
    /// Each changed cell's number (one-based, among the texts `Cells::from_texts` took)
    /// and new text.
    Cells(Vec<(usize, String)>),
}

/// A fixed source: what fixing did, and what the source holds now.
#[derive(Debug)]
pub struct Fixed {
    /// The fixes applied, the fixed code (for notebooks: the cells joined), and what is
    /// still found in it.
    pub result: FixResult,
    pub contents: Contents,
}

impl SourceKind {
    /// The text of the file at `path`: a notebook when its name ends in `.ipynb`.
    pub fn from_file_text(path: &Path, text: &str) -> Result<SourceKind, String> {
        if is_notebook(path) {
            Notebook::parse(text).map(SourceKind::Notebook)
        } else {
            Ok(SourceKind::Python(Arc::from(text)))
        }
    }

    /// `from_file_text` of a text the caller shares: a Python file's is linted as it is,
    /// not copied (`check` lints the text its project index read).
    pub fn from_shared_file_text(path: &Path, text: Arc<str>) -> Result<SourceKind, String> {
        match is_notebook(path) {
            true => SourceKind::from_file_text(path, &text),
            false => Ok(SourceKind::Python(text)),
        }
    }

    /// What the engine lints: the Python text, or the notebook's Python cells joined.
    pub fn code(&self) -> &str {
        match self {
            SourceKind::Python(text) => text,
            SourceKind::Notebook(notebook) => &notebook.cells.source,
            SourceKind::Cells(cells) => &cells.source,
        }
    }

    /// The joined cells of a notebook.
    pub fn cells(&self) -> Option<&Cells> {
        match self {
            SourceKind::Python(_) => None,
            SourceKind::Notebook(notebook) => Some(&notebook.cells),
            SourceKind::Cells(cells) => Some(cells),
        }
    }

    /// Why the source is not linted at all (a notebook whose kernel runs another language).
    pub fn skipped(&self) -> Option<&str> {
        match self {
            SourceKind::Notebook(notebook) => notebook.skipped.as_deref(),
            _ => None,
        }
    }

    /// Findings in `code` (this source's code, or its fixed version) as a renderer shows
    /// them: notebooks by cell, with their IPython lines back in place.
    pub fn linted_file(&self, shown: String, code: &str, diagnostics: Vec<Diagnostic>) -> LintedFile {
        match self.cells() {
            Some(cells) => {
                let (text, index) = cells.shown(code);
                LintedFile { cells: Some(index), ..LintedFile::new(shown, text, diagnostics) }
            }
            None => LintedFile::new(shown, code.to_string(), diagnostics),
        }
    }

    /// `linted_file` for this source's own code, which the file takes rather than copies.
    pub fn into_linted_file(self, shown: String, diagnostics: Vec<Diagnostic>) -> LintedFile {
        match self {
            SourceKind::Python(text) => LintedFile::new(shown, text, diagnostics),
            cells => cells.linted_file(shown, cells.code(), diagnostics),
        }
    }

    /// What the source holds once its code is `fixed`.
    pub fn contents(&self, fixed: &str) -> Result<Contents, String> {
        match self {
            SourceKind::Python(_) => Ok(Contents::File(fixed.to_string())),
            SourceKind::Notebook(notebook) => notebook.with_fixed_source(fixed).map(Contents::File),
            SourceKind::Cells(cells) => cells.changed_cells(fixed).map(Contents::Cells),
        }
    }
}

/// Lint a source. `path` is used for configuration-independent file-name heuristics
/// and is not read.
pub fn lint(source: &SourceKind, path: &Path, settings: &RuleSettings) -> FileReport {
    lint_parsed(source, None, None, None, path, settings)
}

/// Lint a source with its syntax tree already parsed (an editor keeps one per file and
/// reparses it incrementally), reporting only findings inside `ranges` when they are
/// given (the statements an edit touched, and those that read them), with the whole-file
/// answers an editor keeps between lints of a file (`file_wide`). Notebooks are always
/// parsed whole: their tree is that of the joined cells.
pub fn lint_parsed(
    source: &SourceKind,
    tree: Option<&Tree>,
    ranges: Option<&[Range<usize>]>,
    file_wide: Option<&FileWideFacts>,
    path: &Path,
    settings: &RuleSettings,
) -> FileReport {
    let engine = Engine::get();
    match source {
        SourceKind::Python(text) => engine.lint_range(text, tree, path, settings, ranges, file_wide),
        _ => {
            let mut report = engine.lint(source.code(), path, settings);
            for diagnostic in &mut report.diagnostics {
                if !crate::notebook::fix_edits_only_cells(source.code(), diagnostic) {
                    diagnostic.fix = None;
                }
            }
            report
        }
    }
}

/// Apply every fix at least as safe as `threshold` until nothing more applies, and say
/// what the source holds then.
pub fn fix(
    source: &SourceKind,
    path: &Path,
    settings: &RuleSettings,
    threshold: Applicability,
) -> Result<Fixed, String> {
    let notebook = source.cells().is_some();
    let applicable = |text: &str, d: &Diagnostic| !notebook || crate::notebook::fix_edits_only_cells(text, d);
    let result = fix_source_keeping(Engine::get(), source.code(), path, settings, threshold, applicable);
    let contents = source.contents(&result.text)?;
    Ok(Fixed { result, contents })
}

pub fn is_notebook(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
}
