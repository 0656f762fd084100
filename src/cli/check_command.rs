//! `oomlint check`: discover files, lint (and fix) them in parallel, render, and choose
//! the exit status. Bad input (unreadable, binary or non-UTF-8 files, syntax errors, a
//! broken configuration) is reported and the rest is still linted.

use super::{CheckArgs, ColorChoice, EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS};
use crate::config::{self, ConfigResolver, Overrides};
use crate::discover;
use crate::engine::syntax::SyntaxError;
use crate::engine::{Engine, Project, RuleSettings};
use crate::fix::Applicability;
use crate::fix::diff::unified_diff;
use crate::fix::write::write_atomically;
use crate::lint::{self, Contents, SourceKind};
use crate::project::{self, ProjectIndex};
use crate::render::{self, FixSummary, LintedFile};
use crate::rules;
use crate::source::LineIndex;
use std::collections::HashMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// What `check` does with the fixes it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Report,
    /// Write the fixed files (standard input: print the fixed text).
    Fix(Applicability),
    /// Print what fixing would change.
    Diff(Applicability),
}

/// Where the input comes from.
enum Input<'a> {
    /// A file, with its text when the project index read it already (every Python
    /// file of a project checked with the rules that ask other files): read once, not
    /// twice.
    File(&'a Path, Option<Arc<str>>),
    Stdin(&'a Path),
}

/// One file's result.
enum Outcome {
    Done { file: LintedFile, notes: Vec<String>, diff: Option<String>, fixed_text: Option<String> },
    Failed { path: String, reason: String },
}

pub fn run(args: CheckArgs) -> u8 {
    let threshold = if args.unsafe_fixes { Applicability::Unsafe } else { Applicability::Safe };
    let mode = match (args.fix, args.diff) {
        (true, _) => Mode::Fix(threshold),
        (_, true) => Mode::Diff(threshold),
        _ => Mode::Report,
    };
    // Every lint waits for the rules' patterns: they compile on a core of the pool (a
    // millisecond or two) while this thread finds the files and their settings.
    rayon::spawn(|| {
        Engine::get();
    });
    let overrides = match overrides(&args) {
        Ok(overrides) => overrides,
        Err(message) => {
            eprintln!("error: {message}");
            return EXIT_ERROR;
        }
    };
    let mut resolver = match ConfigResolver::new(args.config.as_deref()) {
        Ok(resolver) => resolver,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_ERROR;
        }
    };
    warn_preview_selections(&overrides, &mut resolver);
    let reads_stdin = args.stdin_filename.is_some() || args.paths.iter().any(|p| p.as_os_str() == "-");
    let mut failed = 0;
    let outcomes = if reads_stdin {
        let name = args.stdin_filename.clone().unwrap_or_else(|| PathBuf::from("-"));
        match settings_for(&name, &mut resolver, &overrides) {
            Ok(mut settings) => {
                if rules::reads_project(&settings) {
                    let project = project_of(std::slice::from_ref(&name), &[], &mut resolver, &mut HashMap::new());
                    settings.project = Some(Project(project));
                }
                vec![process(Input::Stdin(&name), &settings, mode)]
            }
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_ERROR;
            }
        }
    } else {
        let paths = if args.paths.is_empty() { vec![PathBuf::from(".")] } else { args.paths.clone() };
        let (discovery, mut read) = discover_reading(&paths, &mut resolver);
        for (path, reason) in &discovery.errors {
            eprintln!("error: {}: {reason}", display(path));
            failed += 1;
        }
        for e in &discovery.config_errors {
            eprintln!("error: {e}");
            failed += 1;
        }
        let mut jobs = Vec::new();
        let mut texts: Option<Arc<ProjectIndex>> = None;
        for file in &discovery.files {
            match settings_for(file, &mut resolver, &overrides) {
                Ok(settings) => jobs.push((file.clone(), settings)),
                Err(e) => {
                    eprintln!("error: {e} (skipping {})", display(file));
                    failed += 1;
                }
            }
        }
        // Indexing the project reads every file of it: only worth it when a rule that asks
        // other files (callers, decorators, callees) could find something in a file
        // checked. A hook that checks the one file changed in a large project would
        // otherwise read the whole project for nothing, at every commit.
        let may_ask = |(file, settings): &(PathBuf, crate::engine::RuleSettings)| match read.get(file) {
            Some(Ok(text)) => rules::may_ask_project(settings, text),
            // Not linted: it asks nothing.
            Some(Err(_)) => false,
            // A notebook: its code is known once it is read.
            None => rules::reads_project(settings),
        };
        if jobs.iter().any(may_ask) {
            let index = project_of(&paths, &discovery.files, &mut resolver, &mut read);
            let project = Project(index.clone());
            for (_, settings) in &mut jobs {
                settings.project = Some(project.clone());
            }
            texts = Some(index);
        }
        let mut known = |file: &Path| match texts.as_ref() {
            Some(index) => index.file_text(file),
            None => read.remove(file).and_then(Result::ok),
        };
        let jobs: Vec<_> = jobs.into_iter().map(|(file, settings)| (known(&file), file, settings)).collect();
        let lint = |at: usize| {
            let (text, file, settings) = &jobs[at];
            process(Input::File(file, text.clone()), settings, mode)
        };
        // One file (a hook run on the file changed, a check on save) is linted from this
        // thread, not the pool's: a large one is then parsed in pieces and linted in parts
        // on all the cores (`engine::pieces`, `engine::parts`), which from a thread of the
        // pool it is not, as there the other cores have files of their own.
        let mut done: Vec<(usize, Outcome)> = if jobs.len() == 1 {
            vec![(0, lint(0))]
        } else {
            largest_first(
                &jobs,
                |(text, file, _)| {
                    text.as_ref().map_or_else(|| std::fs::metadata(file).map_or(0, |m| m.len() as usize), |t| t.len())
                },
                lint,
            )
        };
        // Reported in the order the files were found.
        done.sort_unstable_by_key(|&(at, _)| at);
        done.into_iter().map(|(_, outcome)| outcome).collect()
    };

    let mut linted = Vec::new();
    let mut diffs = String::new();
    let mut fixed_stdin = None;
    for outcome in outcomes {
        match outcome {
            Outcome::Done { file, notes, diff, fixed_text } => {
                notes.iter().for_each(|note| eprintln!("warning: {note}"));
                diffs.push_str(diff.as_deref().unwrap_or(""));
                fixed_stdin = fixed_text.or(fixed_stdin);
                if !file.diagnostics.is_empty() || file.fixed > 0 {
                    linted.push(file);
                }
            }
            Outcome::Failed { path, reason } => {
                eprintln!("error: {path}: {reason}");
                failed += 1;
            }
        }
    }
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let summary =
        FixSummary { fixing: !matches!(mode, Mode::Report), unsafe_fixes: args.unsafe_fixes, unchecked: failed };
    let written = match (mode, fixed_stdin) {
        (Mode::Diff(_), _) => {
            let fixes: usize = linted.iter().map(|f| f.fixed).sum();
            eprintln!(
                "{}",
                if fixes == 0 { "No fixes to apply.".to_string() } else { format!("Would fix {fixes} problem(s).") }
            );
            write_stdout(diffs.as_bytes())
        }
        // Standard input with --fix: the fixed text is the output; the report goes to stderr.
        (Mode::Fix(_), Some(text)) => {
            let mut report = Vec::new();
            let _ = render::render(args.output_format, &linted, false, &summary, &mut report);
            eprint!("{}", String::from_utf8_lossy(&report));
            write_stdout(text.as_bytes())
        }
        _ => {
            let mut out = Vec::new();
            render::render(args.output_format, &linted, color, &summary, &mut out).and_then(|()| write_stdout(&out))
        }
    };
    if let Err(e) = written {
        eprintln!("error: writing output: {e}");
        return EXIT_ERROR;
    }
    let findings = match mode {
        Mode::Diff(_) => !diffs.is_empty(),
        _ => linted.iter().any(|f| !f.diagnostics.is_empty()),
    };
    if failed > 0 {
        EXIT_ERROR
    } else if findings && !args.exit_zero {
        EXIT_FINDINGS
    } else {
        EXIT_CLEAN
    }
}

/// `lint` run on the place of every job, on the pool's cores, the largest job (by `size`)
/// first, each core taking the largest job left when it is done with one; the places come
/// back with their answers, in no order. So the last file to finish is a small one, not a
/// large one that started last while the other cores had nothing left to do. Rayon's
/// parallel iterator over the sorted list would not do it: it halves the list between the
/// cores, and the core given the second half lints it in order, its larger files last (on
/// diffusers' examples, one core linted alone for the last 25 ms of 500).
fn largest_first<T: Sync, R: Send>(
    jobs: &[T],
    size: impl Fn(&T) -> usize,
    lint: impl Fn(usize) -> R + Sync,
) -> Vec<(usize, R)> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&at| std::cmp::Reverse(size(&jobs[at])));
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(order.len()));
    rayon::scope(|scope| {
        for _ in 0..rayon::current_num_threads().min(order.len()) {
            scope.spawn(|_| {
                let mut linted = Vec::new();
                while let Some(&at) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    linted.push((at, lint(at)));
                }
                done.lock().unwrap_or_else(PoisonError::into_inner).extend(linted);
            });
        }
    });
    done.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// Write to standard output; a closed pipe (`| head`) is not an error.
fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

fn overrides(args: &CheckArgs) -> Result<Overrides, String> {
    let select = args.select.clone().map(|s| config::validate_selectors("--select", s)).transpose()?;
    let ignore = config::validate_selectors("--ignore", args.ignore.clone())?;
    let preview = if args.preview {
        Some(true)
    } else if args.no_preview {
        Some(false)
    } else {
        None
    };
    Ok(Overrides { select, ignore, preview })
}

/// `--select OOM00X` (or `select = ["OOM00X"]` in the configuration of the working
/// directory) naming a preview rule runs nothing for it without preview (as in ruff): say
/// so, once, when that configuration leaves preview off.
fn warn_preview_selections(overrides: &Overrides, resolver: &mut ConfigResolver) {
    let cwd = std::path::absolute(".").unwrap_or_default();
    let Ok(config) = resolver.for_directory(&cwd) else { return };
    for inert in config.inert_preview_selections(overrides) {
        let code = inert.code;
        match inert.file {
            None => eprintln!(
                "warning: `--select {code}` has no effect: {code} is a preview rule; add --preview (or `preview = true` in the configuration) to run it"
            ),
            Some(file) => eprintln!(
                "warning: `select` in {} names {code}, which has no effect: {code} is a preview rule; add `preview = true` there (or --preview) to run it",
                file.display()
            ),
        }
    }
}

/// The files to check under `paths`, each read on the pool as soon as the walk finds it
/// (its text, or why it cannot be read, by path as found): the walk is a few
/// milliseconds of one core, and the reading, which every file's lint and the project
/// index wait for, fits beside it on the others.
fn discover_reading(
    paths: &[PathBuf],
    resolver: &mut ConfigResolver,
) -> (discover::Discovery, HashMap<PathBuf, project::ReadText>) {
    let read = std::sync::Mutex::new(HashMap::new());
    let discovery = rayon::scope(|scope| {
        let mut reading = std::collections::HashSet::new();
        discover::python_files_each(paths, resolver, &mut |file| {
            if lint::is_notebook(file) || !reading.insert(file.to_path_buf()) {
                return;
            }
            let (file, read) = (file.to_path_buf(), &read);
            scope.spawn(move |_| {
                let text = project::read_text(&file).map(Arc::from);
                read.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(file, text);
            });
        })
    });
    (discovery, read.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// The index of the projects `paths` belong to (see `project::roots_for`), so that
/// facts cross file boundaries. A project file that cannot be indexed is reported unless
/// it is one of `checked` (whose own error is reported when it is linted).
/// `read`: texts read already, by path (see `discover_reading`).
fn project_of(
    paths: &[PathBuf],
    checked: &[PathBuf],
    resolver: &mut ConfigResolver,
    read: &mut HashMap<PathBuf, project::ReadText>,
) -> Arc<ProjectIndex> {
    let roots = project::roots_for(paths);
    // Checking a project's root (`oomlint check .`), the files checked are the project's:
    // walked once.
    let walked_already = same_directories(paths, &roots);
    let mut files = if walked_already { Vec::new() } else { discover::python_files(&roots, resolver).files };
    files.extend(checked.iter().cloned());
    files.sort();
    files.dedup();
    let (index, skipped) = ProjectIndex::lazy_from(&files, read);
    let checked: Vec<PathBuf> = checked.iter().map(|f| project::normalize(f)).collect();
    for file in skipped.iter().filter(|s| !checked.contains(&s.path)) {
        eprintln!("warning: {}: not indexed: {}", display(&file.path), file.reason);
    }
    Arc::new(index)
}

/// Whether `paths` are the directories `roots` (`project::roots_for`), whose walks find the
/// same files.
fn same_directories(paths: &[PathBuf], roots: &[PathBuf]) -> bool {
    let named: std::collections::BTreeSet<PathBuf> = paths.iter().map(|p| project::normalize(p)).collect();
    paths.iter().all(|p| p.is_dir()) && named.iter().eq(roots)
}

fn settings_for(
    file: &Path,
    resolver: &mut ConfigResolver,
    overrides: &Overrides,
) -> Result<RuleSettings, config::ConfigError> {
    let (config, absolute) = resolver.for_file(file)?;
    Ok(config.settings_for(&absolute, overrides))
}

/// A file's content: its text, read by the project index already, or bytes read here.
enum Content {
    Text(Arc<str>),
    Bytes(Vec<u8>),
}

fn process(input: Input, settings: &RuleSettings, mode: Mode) -> Outcome {
    let (path, read) = match &input {
        Input::File(path, Some(text)) => (*path, Ok(Content::Text(text.clone()))),
        Input::File(path, None) => {
            (*path, std::fs::read(path).map(Content::Bytes).map_err(|e| format!("cannot read: {e}")))
        }
        Input::Stdin(name) => {
            let mut bytes = Vec::new();
            let read = std::io::stdin().read_to_end(&mut bytes).map(|_| Content::Bytes(bytes));
            (*name, read.map_err(|e| format!("cannot read standard input: {e}")))
        }
    };
    let shown = display(path);
    let mut known: Option<Arc<str>> = None;
    let read_now;
    let text: &str = match read {
        Ok(Content::Text(text)) => {
            known = Some(text);
            known.as_deref().unwrap_or_default()
        }
        Ok(Content::Bytes(bytes)) => {
            if bytes.contains(&0) {
                return Outcome::Failed {
                    path: shown,
                    reason: "binary file (contains NUL bytes), not linted".to_string(),
                };
            }
            match String::from_utf8(bytes) {
                Ok(text) => {
                    read_now = text;
                    &read_now
                }
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    let reason = format!("not valid UTF-8 (at byte {at}), not linted");
                    return Outcome::Failed { path: shown, reason };
                }
            }
        }
        Err(reason) => return Outcome::Failed { path: shown, reason },
    };
    // A byte-order mark is not part of the code: columns count from after it, and a
    // fixed file gets it back.
    let original = crate::source::without_byte_order_mark(text);
    let bom = &text[..text.len() - original.len()];
    // A notebook is linted as its code cells joined; positions are shown by cell. The
    // text the index read is linted as it is, not copied, unless a mark is cut off.
    let shared = known.clone().filter(|_| bom.is_empty());
    let source = match shared.map_or_else(
        || SourceKind::from_file_text(path, original),
        |text| SourceKind::from_shared_file_text(path, text),
    ) {
        Ok(source) => source,
        Err(reason) => return Outcome::Failed { path: shown, reason },
    };
    if let Some(reason) = source.skipped() {
        let file = LintedFile::new(shown.clone(), String::new(), Vec::new());
        return Outcome::Done { file, notes: vec![format!("{shown}: {reason}")], diff: None, fixed_text: None };
    }
    let report = lint::lint(&source, path, settings);
    let syntax_notes = |file: &LintedFile, index: &LineIndex| -> Vec<String> {
        let place = |offset| file.place(index, offset);
        let note = |e: &SyntaxError| format!("{shown}:{}: {} (linting continues past it)", place(e.offset), e.message);
        report.syntax_errors.iter().map(note).collect()
    };
    let threshold = match mode {
        Mode::Report => {
            // Only reported: the findings take the text, and its lines are counted only
            // to place a syntax error (most files have none).
            let file = source.into_linted_file(shown.clone(), report.diagnostics);
            let notes = if report.syntax_errors.is_empty() {
                Vec::new()
            } else {
                syntax_notes(&file, &LineIndex::new(&file.source))
            };
            return Outcome::Done { file, notes, diff: None, fixed_text: None };
        }
        Mode::Fix(threshold) | Mode::Diff(threshold) => threshold,
    };
    let file = source.linted_file(shown.clone(), source.code(), report.diagnostics);
    let index = LineIndex::new(&file.source);
    let mut notes = syntax_notes(&file, &index);
    let fixed = match lint::fix(&source, path, settings, threshold) {
        Ok(fixed) => fixed,
        Err(e) => {
            let reason = format!("cannot apply the fixes: {e}; the notebook is unchanged");
            return Outcome::Failed { path: shown, reason };
        }
    };
    let result = fixed.result;
    for dropped in &result.dropped {
        notes.push(format!(
            "{shown}:{}: the fix for {} would break the syntax; not applied",
            file.place(&index, dropped.range.start),
            dropped.code
        ));
    }
    // What the file would hold: the fixed code, or the notebook with its fixed cells.
    let fixed_file = match fixed.contents {
        Contents::File(text) => text,
        // Only the cells an editor holds are fixed cell by cell.
        Contents::Cells(_) => return Outcome::Failed { path: shown, reason: "not a file's text".into() },
    };
    let changed = fixed_file != original;
    let mut diff = None;
    let mut fixed_text = None;
    match (mode, &input) {
        (Mode::Diff(_), _) if changed => diff = Some(unified_diff(&shown, original, &fixed_file)),
        // Standard input: the (possibly unchanged) text is the output.
        (Mode::Fix(_), Input::Stdin(_)) => fixed_text = Some(format!("{bom}{fixed_file}")),
        (Mode::Fix(_), Input::File(path, _)) if changed => {
            if let Err(e) = write_atomically(path, format!("{bom}{fixed_file}").as_bytes()) {
                let reason = format!("cannot write the fixes: {e}; the file is unchanged");
                return Outcome::Failed { path: shown, reason };
            }
        }
        _ => {}
    }
    let mut file = source.linted_file(shown, &result.text, result.remaining);
    file.fixed = result.applied;
    Outcome::Done { file, notes, diff, fixed_text }
}

/// Paths are shown relative to the working directory when they are below it.
fn display(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "-".to_string();
    }
    // Asked once: every file checked is shown, and `check` never changes directory.
    static CWD: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let cwd = CWD.get_or_init(|| std::env::current_dir().unwrap_or_default());
    let relative = path.strip_prefix(cwd).or_else(|_| path.strip_prefix("./")).unwrap_or(path);
    relative.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::largest_first;
    use std::sync::Mutex;

    /// Every job is linted once, with its own answer, however many cores take from the
    /// queue; and a core takes the largest job left each time (one core: in that order).
    #[test]
    fn largest_first_lints_every_job_once_the_largest_first() {
        let sizes = [3, 40, 7, 7, 0, 12, 40, 1, 5, 9, 2, 30];
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            let started = Mutex::new(Vec::new());
            let mut done = pool.install(|| {
                largest_first(
                    &sizes,
                    |&size| size,
                    |at| {
                        started.lock().unwrap().push(sizes[at]);
                        at * 10
                    },
                )
            });
            done.sort_unstable();
            assert_eq!(done, (0..sizes.len()).map(|at| (at, at * 10)).collect::<Vec<_>>(), "{threads} threads");
            if threads == 1 {
                let mut expected = sizes.to_vec();
                expected.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(started.into_inner().unwrap(), expected);
            }
        }
        assert!(largest_first(&[] as &[usize], |&size| size, |at| at).is_empty());
    }
}
