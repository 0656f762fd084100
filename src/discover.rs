//! Which files to lint: the paths named on the command line, with directories walked
//! (`.gitignore` respected, hidden and customary non-source directories skipped, and each
//! configuration's `exclude` applied). A file named explicitly is always linted.

use crate::config::{ConfigError, ConfigResolver};
use ignore::WalkBuilder;
use std::path::{Path, PathBuf};

/// Directory names never worth walking into.
const SKIPPED_DIRECTORIES: &[&str] =
    &["venv", "node_modules", "__pypackages__", "site-packages", "__pycache__", "build", "dist"];

pub struct Discovery {
    pub files: Vec<PathBuf>,
    /// Paths that could not be walked or do not exist.
    pub errors: Vec<(PathBuf, String)>,
    pub config_errors: Vec<ConfigError>,
}

pub fn python_files(paths: &[PathBuf], resolver: &mut ConfigResolver) -> Discovery {
    python_files_each(paths, resolver, &mut |_| {})
}

/// `python_files`, calling `found` with each file as the walk finds it (a file may come
/// twice when the paths overlap): a caller can start on the first files while the walk
/// goes on.
pub fn python_files_each(paths: &[PathBuf], resolver: &mut ConfigResolver, found: &mut dyn FnMut(&Path)) -> Discovery {
    let mut discovery = Discovery { files: Vec::new(), errors: Vec::new(), config_errors: Vec::new() };
    for path in paths {
        // `symlink_metadata`: a broken link exists, and reading it reports why it fails.
        if path.symlink_metadata().is_err() {
            discovery.errors.push((path.clone(), "no such file or directory".to_string()));
            continue;
        }
        if !path.is_dir() {
            found(path);
            discovery.files.push(path.clone());
            continue;
        }
        let walk = WalkBuilder::new(path).require_git(false).follow_links(false).build();
        for entry in walk {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    discovery.errors.push((path.clone(), e.to_string()));
                    continue;
                }
            };
            let file = entry.path();
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            if !is_file || file.extension().is_none_or(|e| e != "py" && e != "ipynb") {
                continue;
            }
            let below_root = file.strip_prefix(path).unwrap_or(file);
            if below_root.components().any(|c| SKIPPED_DIRECTORIES.iter().any(|s| c.as_os_str() == *s)) {
                continue;
            }
            match excluded(file, resolver) {
                Ok(true) => {}
                Ok(false) => {
                    found(file);
                    discovery.files.push(file.to_path_buf());
                }
                Err(e) => {
                    if !discovery.config_errors.contains(&e) {
                        discovery.config_errors.push(e);
                    }
                }
            }
        }
    }
    discovery.files.sort();
    discovery.files.dedup();
    discovery
}

fn excluded(file: &Path, resolver: &mut ConfigResolver) -> Result<bool, ConfigError> {
    let (config, absolute) = resolver.for_file(file)?;
    Ok(config.excludes(&absolute))
}
