//! The engine: parse a file once, run every enabled rule's query in one pass over the
//! tree, hand matches to the rules' host code, then the suppression stage (comments drop
//! the findings they name; rules that judge the comments report), then severity
//! overrides. Every front end lints through `crate::lint`, which calls `Engine::lint`.

pub mod checker;
pub mod children;
pub mod facts;
pub mod field;
mod parts;
pub mod pattern;
pub mod pieces;
pub mod predicates;
pub mod syntax;
pub mod text_test;
pub mod tree;

use crate::diagnostic::{Diagnostic, Severity};
use crate::rules::{Check, RULES, Rule};
use crate::suppress::{CodeStatus, Suppressions};
use checker::{Checker, Match};
use facts::Facts;
use facts::index::WalkedIdentifiers;
use foldhash::HashSetExt;
use rayon::prelude::*;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tree_sitter::{Language, Parser, Tree};

pub fn language() -> Language {
    tree_sitter_python::LANGUAGE.into()
}

/// The rules and their patterns. All of a file's rules run in one walk over its tree
/// (`pattern::Matches`), each node tried against the patterns rooted at its kind.
pub struct Engine {
    rules: Vec<&'static Rule>,
    patterns: pattern::PatternSet,
}

/// Which rules run, and at what severity, for one file, and the project it belongs to.
#[derive(Debug, Clone)]
pub struct RuleSettings {
    /// Indexed like the engine's rules (`RULES` for the built-in engine).
    pub enabled: Vec<bool>,
    pub severity: HashMap<&'static str, Severity>,
    /// What the other files of the project say (callers, decorators, callees); without
    /// it the facts stop at the file's edge.
    pub project: Option<Project>,
}

/// The project a file is linted in, shared by every file of it.
#[derive(Clone)]
pub struct Project(pub std::sync::Arc<dyn facts::cross_file::ProjectFacts>);

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Project")
    }
}

impl Default for RuleSettings {
    fn default() -> Self {
        RuleSettings { enabled: vec![true; RULES.len()], severity: HashMap::new(), project: None }
    }
}

/// A parsed file being linted, and how.
#[derive(Clone, Copy)]
struct FileAtHand<'a, 't> {
    source: &'a str,
    root: tree_sitter::Node<'t>,
    path: &'a Path,
    settings: &'a RuleSettings,
    /// Per engine rule: enabled, and its text test passed.
    active: &'a [bool],
}

/// A match the walk found: the rule, and the captures.
type Found<'t> = (usize, pattern::Captures<'t>);

/// What linting one file produced.
#[derive(Debug, Default)]
pub struct FileReport {
    pub diagnostics: Vec<Diagnostic>,
    pub syntax_errors: Vec<syntax::SyntaxError>,
}

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut parser = Parser::new();
        parser.set_language(&language()).expect("tree-sitter-python matches the tree-sitter ABI");
        parser
    });
}

/// Parse `source`. tree-sitter-python does not know a parenthesized starred item in an
/// expression list without brackets (`return a, *(rest)`, valid since Python 3.8): when
/// the tree has errors and the text has such an item, it is parsed again with the star
/// blanked (offsets unchanged; the item reads as a parenthesized expression) and the tree
/// with fewer errors is kept. `docs/grammar-gaps.md` lists what the grammar misses.
///
/// A bracket still open where a `def` or `class` starts a line at column 0
/// (`syntax::unclosed_brackets`) is read as a space: its syntax error stays on its line,
/// and is reported from the text.
pub fn parse(source: &str) -> Option<Tree> {
    parse_finding_unclosed_brackets(source).map(|(tree, _)| tree)
}

/// `parse`, and where the brackets it read as spaces are (`syntax::unclosed_brackets`):
/// the lint reports them.
///
/// The text is scanned for them only when its parse has errors: a bracket open where a
/// `def` or `class` starts a line is a syntax error, so a tree without one has no such
/// bracket (`a_clean_parse_has_no_unclosed_bracket` checks it over every fixture). Most
/// files parse cleanly, and the scan reads every byte of them.
pub fn parse_finding_unclosed_brackets(source: &str) -> Option<(Tree, Vec<usize>)> {
    let tree = reparse(source, None)?;
    if !tree.root_node().has_error() {
        return Some((tree, Vec::new()));
    }
    let unclosed = syntax::unclosed_brackets(source);
    let blanked = syntax::blanked(source, &unclosed);
    let tree = if unclosed.is_empty() { tree } else { reparse(&blanked, None)? };
    retry_starred_parentheses(&blanked, tree).map(|tree| (tree, unclosed))
}

/// `parse_finding_unclosed_brackets`, in pieces on the cores when the text is large and
/// they are free (`pieces::parse`: not from a thread of the pool, where `check` lints many
/// files at once). The pieces parse only where they parse cleanly, and then the tree has
/// no syntax error, so no bracket is left open.
fn parse_on_the_cores(source: &str) -> Option<(Tree, Vec<usize>)> {
    match pieces::parse(source) {
        Some((tree, _seams)) => Some((tree, Vec::new())),
        None => parse_finding_unclosed_brackets(source),
    }
}

/// `tree`, `source` parsed (its unclosed brackets blanked already), or, when it has
/// errors, the parse with starred parentheses blanked if that has fewer.
fn retry_starred_parentheses(source: &str, tree: Tree) -> Option<Tree> {
    if !tree.root_node().has_error() {
        return Some(tree);
    }
    let Some(blanked) = starred_parentheses_blanked(source) else { return Some(tree) };
    let retried = reparse(&blanked, None)?;
    let better = syntax::error_count(retried.root_node()) < syntax::error_count(tree.root_node());
    Some(if better { retried } else { tree })
}

/// `source` with the star of each unary `*(` after `,`, `=`, `return`, `yield`, `in` or
/// `else` blanked, or `None` when it has none.
fn starred_parentheses_blanked(source: &str) -> Option<String> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let unary_after = |before: &str| {
        before.ends_with([',', '='])
            || ["return", "yield", "in", "else"]
                .iter()
                .any(|k| before.strip_suffix(k).is_some_and(|rest| !rest.ends_with(is_word)))
    };
    let mut blanked: Option<Vec<u8>> = None;
    for (at, _) in source.match_indices('*') {
        let before = source[..at].trim_end_matches([' ', '\t']);
        let after = source[at + 1..].trim_start_matches([' ', '\t']);
        if after.starts_with('(') && unary_after(before) {
            blanked.get_or_insert_with(|| source.as_bytes().to_vec())[at] = b' ';
        }
    }
    // One ASCII byte replaced by another: still UTF-8.
    blanked.and_then(|bytes| String::from_utf8(bytes).ok())
}

/// Parse `source`, reusing `old` (already `Tree::edit`ed to match) where it still holds.
pub fn reparse(source: &str, old: Option<&Tree>) -> Option<Tree> {
    PARSER.with(|p| p.borrow_mut().parse(source, old))
}

impl Engine {
    /// The process-wide engine (its patterns are read when first needed: a
    /// millisecond, not the time tree-sitter takes to analyse a query).
    pub fn get() -> &'static Engine {
        static ENGINE: OnceLock<Engine> = OnceLock::new();
        ENGINE.get_or_init(|| {
            Engine::compile(RULES).unwrap_or_else(|e| panic!("the rules' queries compile (their tests check it): {e}"))
        })
    }

    /// An engine for the given rules; the error names the rule whose query is broken.
    pub fn compile(rules: &[&'static Rule]) -> Result<Engine, String> {
        let queries: Vec<(usize, &str)> = rules.iter().enumerate().map(|(i, rule)| (i, rule.query)).collect();
        let patterns =
            pattern::PatternSet::compile(&queries).map_err(|(rule, e)| format!("{}: query: {e}", rules[rule].code))?;
        Ok(Engine { rules: rules.to_vec(), patterns })
    }

    /// Whether the rule `code` names ran on this file (`enabled` is per engine rule).
    fn code_status(&self, code: &str, enabled: &[bool]) -> CodeStatus {
        match self.rules.iter().position(|r| r.code == code) {
            // An enabled rule whose text test failed ran in effect: it could find nothing.
            Some(at) if enabled.get(at).copied().unwrap_or(false) => CodeStatus::Ran,
            Some(_) => CodeStatus::NotRun,
            None if crate::rules::find(code).is_some() => CodeStatus::NotRun,
            None => CodeStatus::Unknown,
        }
    }

    /// Suppression comments drop the findings they name; then the rules that judge the
    /// comments themselves report on which suppressed something. Their findings are not
    /// filtered again: a bare `# oomlint: ignore` would hide the finding that it
    /// suppresses nothing.
    fn suppression_stage(
        &self,
        source: &str,
        root: tree_sitter::Node,
        active: &[bool],
        enabled: &[bool],
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let mut suppressions = Suppressions::parse(source, root);
        suppressions.filter(diagnostics);
        let status = |code: &str| self.code_status(code, enabled);
        let mut reported = false;
        for (rule, _) in self.rules.iter().zip(active).filter(|(_, active)| **active) {
            if let Check::Suppressions(review) = rule.check {
                diagnostics.extend(review(source, &suppressions, &status));
                reported = true;
            }
        }
        if reported {
            diagnostics.sort_by_key(|d| (d.range.start, d.code, d.range.end));
        }
    }

    /// Lint one file's text. `path` is used for file-name heuristics and is not read.
    pub fn lint(&self, source: &str, path: &Path, settings: &RuleSettings) -> FileReport {
        self.lint_parsed(source, None, path, settings)
    }

    /// Lint with a tree already parsed from `source` (the language server keeps one per
    /// document and reparses it incrementally); without one, parse only when some
    /// enabled rule could match.
    pub fn lint_parsed(&self, source: &str, tree: Option<&Tree>, path: &Path, settings: &RuleSettings) -> FileReport {
        self.lint_range(source, tree, path, settings, None, None)
    }

    /// Lint, reporting only findings inside `ranges` when they are given (the query runs
    /// over those ranges alone): the language server relints the statements an edit
    /// touched. Whole-file answers are kept in, and taken from, `file_wide` when one is
    /// given (see `facts::FileWideFacts`). A large file linted whole, alone (the editor's
    /// open document), is linted in parts, one per core this process may use (`parts`).
    pub fn lint_range(
        &self,
        source: &str,
        tree: Option<&Tree>,
        path: &Path,
        settings: &RuleSettings,
        ranges: Option<&[std::ops::Range<usize>]>,
        file_wide: Option<&facts::FileWideFacts>,
    ) -> FileReport {
        // Rayon's pool has a thread per core the process may use
        // (`std::thread::available_parallelism`). A lint running on one of its threads is
        // one of many files linted at once (`check` over a directory): the cores are
        // busy with the other files, and parts would only add the walk each repeats.
        let cores = if rayon::current_thread_index().is_some() { 1 } else { rayon::current_num_threads() };
        self.lint_split(source, tree, path, settings, ranges, file_wide, &|root: tree_sitter::Node, source: &str| {
            parts::of(root, source, cores)
        })
    }

    /// `lint_range`, a whole lint split as `split` says.
    #[allow(clippy::too_many_arguments)]
    fn lint_split(
        &self,
        source: &str,
        tree: Option<&Tree>,
        path: &Path,
        settings: &RuleSettings,
        ranges: Option<&[std::ops::Range<usize>]>,
        file_wide: Option<&facts::FileWideFacts>,
        split: &parts::Split<'_>,
    ) -> FileReport {
        if let Cow::Owned(lines) = crate::source::lone_carriage_returns_as_newlines(source) {
            // Same offsets, the lines Python sees; a tree parsed from the other text is stale.
            return self.lint_split(&lines, None, path, settings, ranges, file_wide, split);
        }
        if Suppressions::ignores_whole_file(source) {
            return FileReport::default();
        }
        let active: Vec<bool> = self
            .rules
            .iter()
            .zip(&settings.enabled)
            .map(|(rule, &enabled)| enabled && (rule.could_match)(source))
            .collect();
        if !active.contains(&true) {
            return FileReport::default();
        }
        let parsed;
        // A file another file's lint asked about may have been parsed for that already.
        let taken = || settings.project.as_ref().and_then(|project| project.0.take_parse(path, source));
        let (tree, unclosed) = match tree {
            Some(tree) => (tree, syntax::unclosed_brackets(source)),
            None => match taken().or_else(|| parse_on_the_cores(source)) {
                Some((tree, unclosed)) => {
                    parsed = tree;
                    (&parsed, unclosed)
                }
                None => return FileReport::default(),
            },
        };
        let root = tree.root_node();
        let mut syntax_errors = syntax::unclosed_bracket_errors(source, &unclosed);
        syntax_errors.extend(syntax::errors(root, source));
        syntax_errors.extend(syntax::too_deep(root));
        let file = FileAtHand { source, root, path, settings, active: &active };
        let diagnostics = match ranges.is_none().then(|| split(root, source)).flatten() {
            Some(parts) => self.lint_parts(&file, &parts, file_wide),
            None => self.lint_tree(&file, ranges, file_wide),
        };
        FileReport { diagnostics, syntax_errors }
    }

    /// The findings of `lint_range` for a parsed file whose rules could match.
    fn lint_tree(
        &self,
        file: &FileAtHand,
        ranges: Option<&[std::ops::Range<usize>]>,
        file_wide: Option<&facts::FileWideFacts>,
    ) -> Vec<Diagnostic> {
        let _parents = tree::index_parents(file.root);
        let (found, walked) = self.walk(file, ranges, false);
        let identifiers = walked.every_identifier().map(|found| Arc::new(WalkedIdentifiers::new(found)));
        self.check(file, ranges, found, identifiers, file_wide)
    }

    /// A whole lint split in `parts` (`parts::of`), on the cores: first each part's walk,
    /// then each part's checks, whose facts read the identifiers and the parents that
    /// all the walks met, as a whole lint's facts read them from its one walk.
    fn lint_parts(
        &self,
        file: &FileAtHand,
        parts: &[Vec<std::ops::Range<usize>>],
        file_wide: Option<&facts::FileWideFacts>,
    ) -> Vec<Diagnostic> {
        let walks: Vec<_> = parts
            .par_iter()
            .map(|part| {
                let _parents = tree::index_parents(file.root);
                self.walk(file, Some(part), true)
            })
            .collect();
        let mut founds = Vec::with_capacity(walks.len());
        let mut identifiers = Vec::new();
        let mut parents = tree::GatheredParents::default();
        let mut whole = true;
        for (found, walked) in walks {
            founds.push(found);
            identifiers.extend(walked.identifiers);
            parents.extend(walked.parents);
            whole &= walked.whole;
        }
        // The parts' ranges hold every top-level statement: their identifiers together
        // are the tree's, in document order once sorted (runs already in order).
        identifiers.sort_by_key(|(n, _)| n.start_byte());
        identifiers.dedup_by_key(|(n, _)| n.id());
        // Looked up by spelling in every part: the table is built once, by the first part
        // to ask.
        let identifiers = whole.then(|| Arc::new(WalkedIdentifiers::new(identifiers)));
        // The parts share the whole-file answers, as partial relints do.
        let own = facts::FileWideFacts::default();
        let file_wide = file_wide.unwrap_or(&own);
        let mut found: Vec<Diagnostic> = parts
            .par_iter()
            .zip(founds)
            .flat_map_iter(|(part, found)| {
                let _parents = tree::index_parents(file.root);
                parents.offer();
                self.check(file, Some(part), found, identifiers.clone(), Some(file_wide))
            })
            .collect();
        // Each part's findings are in the whole lint's order, and each finding of the
        // whole lint starts in one part: merged by where they start, they are in the
        // whole lint's order.
        found.sort_by_key(|d| (d.range.start, d.code, d.range.end));
        found
    }

    /// The matches of the active rules' patterns in `ranges` (everywhere without), their
    /// host predicates holding, and what the walk met.
    fn walk<'t>(
        &self,
        file: &FileAtHand<'_, 't>,
        ranges: Option<&[std::ops::Range<usize>]>,
        gather_parents: bool,
    ) -> (Vec<Found<'t>>, pattern::Walked<'t>) {
        let matches =
            pattern::Matches { patterns: &self.patterns, ranges, max_start_depth: syntax::MAX_DEPTH, gather_parents };
        let source = file.source;
        let mut found = Vec::new();
        let walked = matches.for_each(file.root, source, file.active, &mut |index, captures, ancestry| {
            let pattern = self.patterns.pattern(index);
            let holds = pattern.host.iter().all(|p| {
                captures.iter().filter(|(c, _)| *c == p.capture()).all(|&(_, node)| p.holds(ancestry.of(node), source))
            });
            if holds {
                found.push((pattern.rule, captures));
            }
        });
        (found, walked)
    }

    /// Run the rules' checks on what `walk` found, then the suppression stage and the
    /// severity overrides. `identifiers`: every identifier of the tree, when known.
    fn check<'t>(
        &self,
        file: &FileAtHand<'t, 't>,
        ranges: Option<&[std::ops::Range<usize>]>,
        found: Vec<Found<'t>>,
        identifiers: Option<Arc<WalkedIdentifiers<'t>>>,
        file_wide: Option<&'t facts::FileWideFacts>,
    ) -> Vec<Diagnostic> {
        let FileAtHand { source, root, path, settings, active } = *file;
        let mut diagnostics = Vec::new();
        let mut reported = foldhash::HashSet::new();
        let facts = Facts::new(source, root, path)
            .with_identifiers(identifiers)
            .with_project(settings.project.as_ref().map(|p| &*p.0))
            .with_file_wide(file_wide);
        for (rule, captures) in found {
            let rule = self.rules[rule];
            let Check::Query(check) = rule.check else { continue };
            let captured = Match { names: self.patterns.capture_names(), captures };
            let mut checker = Checker { facts: &facts, rule, diagnostics: &mut diagnostics, reported: &mut reported };
            check(&mut checker, &captured);
        }
        diagnostics.sort_by_key(|d| (d.range.start, d.code, d.range.end));
        diagnostics.dedup_by(|a, b| a.code == b.code && a.range == b.range);
        self.suppression_stage(source, root, active, &settings.enabled, &mut diagnostics);
        if let Some(ranges) = ranges {
            diagnostics.retain(|d| ranges.iter().any(|r| r.start <= d.range.start && d.range.end <= r.end));
        }
        for diagnostic in &mut diagnostics {
            if let Some(&severity) = settings.severity.get(diagnostic.code) {
                diagnostic.severity = severity;
            }
        }
        diagnostics
    }
}

/// The text of every Python file among the project's fixtures and test cases: real
/// code of every shape the rules look at, for tests that hold one way of doing a thing
/// to another.
#[cfg(test)]
pub(crate) fn fixture_and_test_sources() -> Vec<String> {
    let mut sources = Vec::new();
    for dir in ["fixtures", "tests/cases"] {
        let mut stack = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)];
        while let Some(at) = stack.pop() {
            for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "py") {
                    sources.extend(std::fs::read_to_string(&path));
                }
            }
        }
    }
    sources
}
