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
        for entry in walk(path) {
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

/// The walk of `dir`: `.gitignore` files respected inside a repository or not, links not
/// followed, and git's global excludes file applied as `ignore` applies it.
fn walk(dir: &Path) -> ignore::Walk {
    let mut builder = WalkBuilder::new(dir);
    builder.require_git(false).follow_links(false).git_global(false);
    // The global excludes file with the lowest precedence, as `git_global` adds it (the
    // explicit ignores come right after the global one, and there is no global one).
    if let Some(file) = global_excludes_file() {
        // An invalid glob in it is skipped, the others kept, as `git_global` does.
        let _ = builder.add_ignore(file);
    }
    builder.build()
}

/// git's global excludes file, the one `ignore`'s `git_global` reads: `core.excludesFile`
/// from the first git configuration that sets it, else `$XDG_CONFIG_HOME/git/ignore`.
///
/// `ignore` finds the setting with a regex it compiles in every process: 1.4 M
/// instructions, a third of `oomlint check` over a directory of a few small files, and
/// all of it before the walk can begin. Almost no configuration sets it, so the regex is
/// left to the files that name it at all.
fn global_excludes_file() -> Option<PathBuf> {
    #[allow(deprecated)] // `ignore` finds the home directory this way too.
    let home = std::env::home_dir();
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let xdg = set("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    // The configurations `ignore` reads, in its order.
    let configs = [
        set("GIT_CONFIG_GLOBAL"),
        home.as_ref().map(|h| h.join(".gitconfig")),
        xdg.as_ref().map(|x| x.join("git/config")),
        Some(set("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig"))),
    ];
    let names_the_setting = |config: &PathBuf| {
        std::fs::read(config).is_ok_and(|text| text.to_ascii_lowercase().windows(12).any(|w| w == b"excludesfile"))
    };
    let file = if configs.iter().flatten().any(names_the_setting) {
        ignore::gitignore::gitconfig_excludes_path()
    } else {
        xdg.map(|x| x.join("git/ignore"))
    }?;
    file.is_file().then_some(file)
}

fn excluded(file: &Path, resolver: &mut ConfigResolver) -> Result<bool, ConfigError> {
    let (config, absolute) = resolver.for_file(file)?;
    Ok(config.excludes(&absolute))
}
