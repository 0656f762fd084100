//! Configuration: `[tool.oomlint]` in the nearest `pyproject.toml`, or an `oomlint.toml`
//! (which wins in the same directory), found by walking up from each linted file.
//!
//! ```toml
//! select = ["ALL"]                 # codes, code prefixes, or "ALL"
//! ignore = ["OOM003"]
//! exclude = ["legacy/**"]          # globs relative to the config's directory
//! per-file-ignores = { "tests/**" = ["OOM002"] }
//! severity = { OOM002 = "error" }  # error | warning | info
//! preview = true                   # also run the preview rules
//! ```

use crate::diagnostic::Severity;
use crate::engine::RuleSettings;
use crate::rules::RULES;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawOptions {
    select: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    per_file_ignores: Option<BTreeMap<String, Vec<String>>>,
    severity: Option<BTreeMap<String, String>>,
    preview: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration in {}: {}", self.file.display(), self.message)
    }
}

/// One configuration file, validated.
#[derive(Debug, Default)]
pub struct Config {
    /// The file it came from (`None` for the built-in defaults).
    pub file: Option<PathBuf>,
    /// Globs in it are relative to this directory.
    pub root: PathBuf,
    select: Option<Vec<String>>,
    ignore: Vec<String>,
    exclude: Option<GlobSet>,
    per_file_ignores: Vec<(GlobSet, Vec<String>)>,
    severity: HashMap<&'static str, Severity>,
    preview: Option<bool>,
}

/// Selections given on the command line (or by the editor); they take precedence over files.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub select: Option<Vec<String>>,
    pub ignore: Vec<String>,
    /// `--preview` / `--no-preview`; `None` leaves it to the configuration.
    pub preview: Option<bool>,
}

impl Config {
    /// Load `path` (an `oomlint.toml`, or a `pyproject.toml`). `Ok(None)` for a
    /// `pyproject.toml` without a `[tool.oomlint]` table.
    pub fn load(path: &Path) -> Result<Option<Config>, ConfigError> {
        let error = |message: String| ConfigError { file: path.to_path_buf(), message };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| error(e.message().to_string()))?;
        let is_pyproject = path.file_name().is_some_and(|n| n == "pyproject.toml");
        let options = if is_pyproject {
            match table.get("tool").and_then(|t| t.get("oomlint")) {
                Some(section) => section.clone(),
                None => return Ok(None),
            }
        } else {
            toml::Value::Table(table)
        };
        let prefix = if is_pyproject { "tool.oomlint." } else { "" };
        let raw = RawOptions::deserialize(options).map_err(|e| error(format!("{}{}", prefix, e.message())))?;
        let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Config::from_raw(raw, root, Some(path.to_path_buf())).map(Some).map_err(|m| error(format!("{prefix}{m}")))
    }

    fn from_raw(raw: RawOptions, root: PathBuf, file: Option<PathBuf>) -> Result<Config, String> {
        let select = raw.select.map(|s| validate_selectors("select", s)).transpose()?;
        let ignore = validate_selectors("ignore", raw.ignore.unwrap_or_default())?;
        let exclude = raw.exclude.map(|globs| glob_set("exclude", &globs)).transpose()?;
        let mut per_file_ignores = Vec::new();
        for (pattern, codes) in raw.per_file_ignores.unwrap_or_default() {
            let codes = validate_selectors(&format!("per-file-ignores.\"{pattern}\""), codes)?;
            per_file_ignores.push((glob_set("per-file-ignores", &[pattern])?, codes));
        }
        let mut severity = HashMap::new();
        for (code, level) in raw.severity.unwrap_or_default() {
            let rule = RULES.iter().find(|r| r.code == code).ok_or(format!("severity: unknown rule code `{code}`"))?;
            let level = Severity::parse(&level)
                .ok_or(format!("severity.{code}: `{level}` is not one of error, warning, info"))?;
            severity.insert(rule.code, level);
        }
        Ok(Config { file, root, select, ignore, exclude, per_file_ignores, severity, preview: raw.preview })
    }

    /// Whether a path found while walking directories is excluded by this config.
    pub fn excludes(&self, path: &Path) -> bool {
        let Some(exclude) = &self.exclude else { return false };
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        exclude.is_match(relative) || path.file_name().is_some_and(|n| exclude.is_match(n))
    }

    /// Which rules run on `path`, and at what severity.
    pub fn settings_for(&self, path: &Path, overrides: &Overrides) -> RuleSettings {
        let select = overrides.select.as_ref().or(self.select.as_ref());
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let file_name = path.file_name().map(Path::new).unwrap_or(relative);
        let file_ignores = self
            .per_file_ignores
            .iter()
            .filter(|(glob, _)| glob.is_match(relative) || glob.is_match(file_name))
            .flat_map(|(_, codes)| codes);
        let ignored: Vec<&String> = self.ignore.iter().chain(&overrides.ignore).chain(file_ignores).collect();
        let preview = self.preview(overrides);
        let enabled = RULES
            .iter()
            .map(|rule| {
                // As in ruff, selecting a preview rule by its code does not run it without preview.
                let selected = select.is_none_or(|s| s.iter().any(|sel| selects(sel, rule.code)));
                selected && !ignored.iter().any(|sel| selects(sel, rule.code)) && (preview || !rule.preview)
            })
            .collect();
        RuleSettings { enabled, severity: self.severity.clone(), project: None }
    }
}

impl Config {
    /// The `select` list of this file, if it has one.
    pub fn select(&self) -> Option<&[String]> {
        self.select.as_deref()
    }

    /// Whether preview rules run: the command line (or editor) first, then this file.
    pub fn preview(&self, overrides: &Overrides) -> bool {
        overrides.preview.or(self.preview).unwrap_or(false)
    }

    /// The preview rules that `select` names by code while preview is off: as in ruff,
    /// they run nothing, which deserves a warning rather than silence. The `select` in
    /// force is the command line's (or the editor's), else this file's.
    pub fn inert_preview_selections<'a>(&'a self, overrides: &'a Overrides) -> Vec<InertSelection<'a>> {
        if self.preview(overrides) {
            return Vec::new();
        }
        let (select, file) = match (&overrides.select, &self.select, &self.file) {
            (Some(select), _, _) => (select, None),
            (None, Some(select), Some(file)) => (select, Some(file.as_path())),
            _ => return Vec::new(),
        };
        preview_only_selections(select).into_iter().map(|code| InertSelection { code, file }).collect()
    }
}

/// A preview rule selected by its code while preview is off (see
/// `Config::inert_preview_selections`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InertSelection<'a> {
    pub code: &'a str,
    /// The configuration file whose `select` names it; `None`: the command line or editor.
    pub file: Option<&'a Path>,
}

/// The selectors that name a preview rule by its exact code: they select nothing while
/// preview is off.
fn preview_only_selections(selectors: &[String]) -> Vec<&str> {
    selectors
        .iter()
        .filter(|sel| RULES.iter().any(|r| r.preview && r.code == sel.as_str()))
        .map(String::as_str)
        .collect()
}

fn selects(selector: &str, code: &str) -> bool {
    selector == "ALL" || code.starts_with(selector)
}

/// Every selector must name at least one rule: a typo must not silently select nothing.
pub fn validate_selectors(key: &str, selectors: Vec<String>) -> Result<Vec<String>, String> {
    for selector in &selectors {
        if selector.is_empty() || !RULES.iter().any(|r| selects(selector, r.code)) {
            return Err(format!("{key}: unknown rule code `{selector}`"));
        }
    }
    Ok(selectors)
}

fn glob_set(key: &str, patterns: &[String]) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| format!("{key}: bad glob `{pattern}`: {e}"))?;
        builder.add(glob);
        // `legacy` and `legacy/` also exclude everything below.
        if let Ok(below) = Glob::new(&format!("{}/**", pattern.trim_end_matches('/'))) {
            builder.add(below);
        }
    }
    builder.build().map_err(|e| format!("{key}: {e}"))
}

/// Finds and caches the configuration in force for each directory.
#[derive(Default)]
pub struct ConfigResolver {
    /// `--config FILE`: used for every file, no discovery.
    explicit: Option<std::sync::Arc<Config>>,
    by_directory: HashMap<PathBuf, Result<std::sync::Arc<Config>, ConfigError>>,
    defaults: std::sync::Arc<Config>,
}

impl ConfigResolver {
    pub fn new(explicit: Option<&Path>) -> Result<ConfigResolver, ConfigError> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let defaults = std::sync::Arc::new(Config { root: cwd, ..Config::default() });
        let explicit = match explicit {
            Some(path) => Some(std::sync::Arc::new(Config::load(path)?.ok_or_else(|| ConfigError {
                file: path.to_path_buf(),
                message: "no [tool.oomlint] table".to_string(),
            })?)),
            None => None,
        };
        Ok(ConfigResolver { explicit, by_directory: HashMap::new(), defaults })
    }

    /// The configuration in force for `file`, with the file's absolute path (the one
    /// its globs are matched against).
    pub fn for_file(&mut self, file: &Path) -> Result<(std::sync::Arc<Config>, PathBuf), ConfigError> {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let directory = absolute.parent().unwrap_or(Path::new("/")).to_path_buf();
        Ok((self.for_directory(&directory)?, absolute))
    }

    /// The configuration for files in `directory` (an absolute path).
    pub fn for_directory(&mut self, directory: &Path) -> Result<std::sync::Arc<Config>, ConfigError> {
        if let Some(explicit) = &self.explicit {
            return Ok(explicit.clone());
        }
        if let Some(known) = self.by_directory.get(directory) {
            return known.clone();
        }
        let found = self.find_in(directory);
        self.by_directory.insert(directory.to_path_buf(), found.clone());
        found
    }

    fn find_in(&mut self, directory: &Path) -> Result<std::sync::Arc<Config>, ConfigError> {
        for name in ["oomlint.toml", "pyproject.toml"] {
            let candidate = directory.join(name);
            if candidate.is_file()
                && let Some(config) = Config::load(&candidate)?
            {
                return Ok(std::sync::Arc::new(config));
            }
        }
        match directory.parent() {
            Some(parent) => self.for_directory(parent),
            None => Ok(self.defaults.clone()),
        }
    }
}
