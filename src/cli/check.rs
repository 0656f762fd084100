//! `oomlint check`: discover files, lint them in parallel, render, and choose the exit
//! status. Bad input (unreadable, binary or non-UTF-8 files, syntax errors, a broken
//! configuration) is reported and the rest is still linted.

use super::{CheckArgs, ColorChoice, EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS};
use crate::config::{self, ConfigResolver, Overrides};
use crate::discover;
use crate::engine::{Engine, FileReport, RuleSettings};
use crate::render::{self, LintedFile};
use crate::source::LineIndex;
use rayon::prelude::*;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// Why a file could not be linted.
struct FileError {
    path: String,
    reason: String,
}

enum Outcome {
    Linted(LintedFile, Vec<String>),
    Failed(FileError),
}

pub fn run(args: CheckArgs) -> u8 {
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
    let reads_stdin = args.stdin_filename.is_some() || args.paths.iter().any(|p| p.as_os_str() == "-");
    let mut failed = false;
    let outcomes = if reads_stdin {
        let name = args.stdin_filename.clone().unwrap_or_else(|| PathBuf::from("-"));
        match settings_for(&name, &mut resolver, &overrides) {
            Ok(settings) => vec![lint_stdin(&name, &settings)],
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_ERROR;
            }
        }
    } else {
        let paths = if args.paths.is_empty() { vec![PathBuf::from(".")] } else { args.paths.clone() };
        let discovery = discover::python_files(&paths, &mut resolver);
        for (path, reason) in &discovery.errors {
            eprintln!("error: {}: {reason}", display(path));
            failed = true;
        }
        for e in &discovery.config_errors {
            eprintln!("error: {e}");
            failed = true;
        }
        let mut jobs = Vec::new();
        for file in discovery.files {
            match settings_for(&file, &mut resolver, &overrides) {
                Ok(settings) => jobs.push((file, settings)),
                Err(e) => {
                    eprintln!("error: {e} (skipping {})", display(&file));
                    failed = true;
                }
            }
        }
        jobs.par_iter().map(|(file, settings)| lint_file(file, settings)).collect()
    };

    let mut linted = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Linted(file, notes) => {
                for note in notes {
                    eprintln!("warning: {note}");
                }
                if !file.diagnostics.is_empty() {
                    linted.push(file);
                }
            }
            Outcome::Failed(e) => {
                eprintln!("error: {}: {}", e.path, e.reason);
                failed = true;
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
    let mut stdout = std::io::stdout().lock();
    let written = render::render(args.output_format, &linted, color, &mut stdout).and_then(|()| stdout.flush());
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("error: writing output: {e}");
        return EXIT_ERROR;
    }
    if failed {
        EXIT_ERROR
    } else if linted.is_empty() || args.exit_zero {
        EXIT_CLEAN
    } else {
        EXIT_FINDINGS
    }
}

fn overrides(args: &CheckArgs) -> Result<Overrides, String> {
    let select = args.select.clone().map(|s| config::validate_selectors("--select", s)).transpose()?;
    let ignore = config::validate_selectors("--ignore", args.ignore.clone())?;
    Ok(Overrides { select, ignore })
}

fn settings_for(
    file: &Path,
    resolver: &mut ConfigResolver,
    overrides: &Overrides,
) -> Result<RuleSettings, config::ConfigError> {
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let directory = absolute.parent().unwrap_or(Path::new("/"));
    Ok(resolver.for_directory(directory)?.settings_for(&absolute, overrides))
}

fn lint_file(path: &Path, settings: &RuleSettings) -> Outcome {
    let shown = display(path);
    match std::fs::read(path) {
        Ok(bytes) => lint_bytes(shown, path, bytes, settings),
        Err(e) => Outcome::Failed(FileError { path: shown, reason: format!("cannot read: {e}") }),
    }
}

fn lint_stdin(name: &Path, settings: &RuleSettings) -> Outcome {
    let mut bytes = Vec::new();
    match std::io::stdin().read_to_end(&mut bytes) {
        Ok(_) => lint_bytes(display(name), name, bytes, settings),
        Err(e) => {
            Outcome::Failed(FileError { path: display(name), reason: format!("cannot read standard input: {e}") })
        }
    }
}

fn lint_bytes(shown: String, path: &Path, bytes: Vec<u8>, settings: &RuleSettings) -> Outcome {
    if bytes.contains(&0) {
        return Outcome::Failed(FileError {
            path: shown,
            reason: "binary file (contains NUL bytes), not linted".to_string(),
        });
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            return Outcome::Failed(FileError {
                path: shown,
                reason: format!("not valid UTF-8 (at byte {at}), not linted"),
            });
        }
    };
    // A byte-order mark is not part of the code; columns count from after it.
    let source = text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text);
    let FileReport { diagnostics, syntax_errors } = Engine::get().lint(&source, path, settings);
    let index = LineIndex::new(&source);
    let notes = syntax_errors
        .iter()
        .map(|e| {
            let at = index.location(&source, e.offset);
            format!("{shown}:{}:{}: cannot parse: {} (linting continues past it)", at.row, at.column, e.message)
        })
        .collect();
    Outcome::Linted(LintedFile::new(shown, source, diagnostics), notes)
}

/// Paths are shown relative to the working directory when they are below it.
fn display(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "-".to_string();
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let relative = path.strip_prefix(&cwd).or_else(|_| path.strip_prefix("./")).unwrap_or(path);
    relative.display().to_string()
}
