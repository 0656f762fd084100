//! Names resolved across files, and the grad mode of a function from its callers.
//! Everything is computed on demand from the summaries; one `Resolver` memoises the
//! answers of one question.

use super::summary::{Definition, FileSummary, FunctionSummary, Site};
use super::{LastParse, ProjectIndex};
use crate::diagnostic::Related;
use crate::engine::facts::cross_file::{Callers, ParsedFile};
use crate::engine::facts::grad_mode::GradSwitch;
use crate::engine::facts::tensors::TensorValue;
use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many re-exports (or callers of callers) are followed before giving up.
const MAX_DEPTH: usize = 6;

/// What a name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target<'i> {
    Module(&'i Path),
    Function(&'i Path, u32),
    Class(&'i Path, &'i str),
}

pub(super) struct Resolver<'i> {
    index: &'i ProjectIndex,
    /// Whether a function runs with autograd disabled, per (file, function); `None`
    /// while it is being decided (a recursive call proves nothing).
    runs_disabled: RefCell<HashMap<(&'i Path, u32), Option<bool>>>,
    /// The file whose lint asks, as parsed there, under its normalised path.
    linted: Option<(PathBuf, ParsedFile<'i>)>,
    /// The other file this lint parsed last (see `LastParse`).
    last_parse: LastParse<'i>,
}

impl<'i> Resolver<'i> {
    pub(super) fn new(index: &'i ProjectIndex, linted: Option<ParsedFile<'i>>) -> Resolver<'i> {
        let linted = linted.map(|parsed| (super::normalize(parsed.path), parsed));
        Resolver { index, runs_disabled: RefCell::new(HashMap::new()), linted, last_parse: LastParse::for_index(index) }
    }

    pub(super) fn index(&self) -> &'i ProjectIndex {
        self.index
    }

    fn file(&self, path: &Path) -> Option<(&'i Path, &'i FileSummary)> {
        let (path, file) = self.index.files.get_key_value(path)?;
        let linted = self.linted.as_ref().filter(|(linted, _)| linted == path).map(|(_, parsed)| *parsed);
        Some((path.as_path(), &**file.summary_or_from(path, linted, Some(&self.last_parse))))
    }

    fn function(&self, path: &'i Path, function: u32) -> Option<&'i FunctionSummary> {
        self.file(path)?.1.functions.get(function as usize)
    }

    pub(super) fn callers(&self, path: &Path, qualname: &str) -> Callers {
        let Some((path, _)) = self.index.files.get_key_value(path) else { return Callers::default() };
        let path = path.as_path();
        let name = short_name(qualname);
        // The function's place among the file's, looked up (which summarises the linted
        // file) only once a site elsewhere may call it: most functions have no caller in
        // another file, and a script that shares their names with its siblings (`main`,
        // `log_validation`) is imported by none of them.
        let place = OnceCell::new();
        let function = || {
            *place.get_or_init(|| {
                let (_, summary) = self.file(path)?;
                summary.functions.iter().position(|f| &*f.name == qualname).map(|i| i as u32)
            })
        };
        let mut callers = Callers::default();
        // The file's own facts judge its own calls.
        for (file, site) in self.sites_calling(path, name, qualname.contains('.'), &function, false) {
            let shown = if site.is_call { format!("`{name}()`") } else { format!("`{name}`") };
            if !site.is_call {
                callers.enabled.get_or_insert_with(|| Related {
                    path: file.to_path_buf(),
                    line: site.line,
                    message: format!("{shown} is passed here as a value, so it may run with autograd on"),
                });
            } else if self.site_disabled(file, site, 0) {
                callers.disabled += 1;
                callers.first_disabled.get_or_insert_with(|| Related {
                    path: file.to_path_buf(),
                    line: site.line,
                    message: format!("{shown} is called here with autograd disabled"),
                });
            } else {
                callers.enabled.get_or_insert_with(|| Related {
                    path: file.to_path_buf(),
                    line: site.line,
                    message: format!("{shown} is called here with autograd on"),
                });
            }
        }
        callers
    }

    pub(super) fn decorator_disables_grad(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<Related> {
        let (path, _) = self.file(path)?;
        let Target::Function(file, function) = self.resolve_dotted(path, scope, dotted, 0)? else { return None };
        let summary = self.function(file, function)?;
        summary.no_grad_decorator.then(|| Related {
            path: file.to_path_buf(),
            line: summary.line,
            message: format!("`{}` runs what it decorates with autograd disabled", summary.name),
        })
    }

    pub(super) fn callee_returns(
        &self,
        path: &Path,
        scope: Option<&str>,
        dotted: &str,
    ) -> Option<(TensorValue, Related)> {
        let (path, _) = self.file(path)?;
        let Target::Function(file, function) = self.resolve_dotted(path, scope, dotted, 0)? else { return None };
        // The file's own functions are the file's own facts' business.
        if file == path {
            return None;
        }
        let summary = self.function(file, function)?;
        let returns = self.index.returns_of(file, function, &self.last_parse);
        let what = match returns {
            TensorValue::Attached => "returns a tensor attached to its autograd graph",
            TensorValue::Detached => "returns values detached from any graph",
            TensorValue::Unknown => return None,
        };
        Some((
            returns,
            Related { path: file.to_path_buf(), line: summary.line, message: format!("`{}()` {what}", summary.name) },
        ))
    }

    /// Every site in the project that calls (or passes around) `function` of `path`.
    fn sites_of(&self, path: &'i Path, function: u32) -> Vec<(&'i Path, &'i Site)> {
        let Some(target) = self.function(path, function) else { return Vec::new() };
        self.sites_calling(path, short_name(&target.name), target.is_method, &|| Some(function), true)
    }

    /// The sites that call (or pass around) the function named `name` of `path` whose
    /// place among the file's functions `function` tells (`None`: no such function),
    /// the file's own sites among them when `own`.
    fn sites_calling(
        &self,
        path: &'i Path,
        name: &str,
        is_method: bool,
        function: &dyn Fn() -> Option<u32>,
        own: bool,
    ) -> Vec<(&'i Path, &'i Site)> {
        let mut found = Vec::new();
        for file in self.files_that_may_use(path, name, own) {
            let Some((file, summary)) = self.file(file) else { continue };
            let Some(sites) = summary.sites.get(name) else { continue };
            for site in sites {
                if self.site_calls(file, summary, site, name, path, function, is_method) {
                    found.push((file, site));
                }
            }
        }
        found
    }

    /// The files that may call or pass around a function of `path` named `name` (`path`
    /// itself among them when `own`): their summary has sites of the name, or, not
    /// summarised yet, their text has it. A file whose summary is at hand (and the linted
    /// file, whose tree is) costs nothing more to ask; any other (one not parsed yet, or
    /// a notebook known from its summary alone, which calls `forward` and `__init__` of
    /// its own) only when it may import `path` (see `importers`).
    fn files_that_may_use<'a>(
        &'a self,
        path: &'a Path,
        name: &'a str,
        own: bool,
    ) -> impl Iterator<Item = &'i Path> + 'a {
        let importers = self.index.importers(path);
        let linted = self.linted.as_ref().map(|(linted, _)| linted.as_path());
        self.index.files.iter().filter_map(move |(file, indexed)| {
            if !own && file == path {
                return None;
            }
            let at_hand = indexed.text.is_some() && (indexed.summary.get().is_some() || linted == Some(file));
            let may_use = (at_hand || importers.contains(indexed.number)) && indexed.may_mention(name);
            may_use.then_some(file.as_path())
        })
    }

    /// Whether `site` (in `file`, spelled `name`) reaches `function` of `path`.
    #[allow(clippy::too_many_arguments)]
    fn site_calls(
        &self,
        file: &'i Path,
        summary: &'i FileSummary,
        site: &Site,
        name: &str,
        path: &'i Path,
        function: &dyn Fn() -> Option<u32>,
        is_method: bool,
    ) -> bool {
        let scope = site.caller.and_then(|c| summary.functions.get(c as usize)).map(|f| &*f.name);
        let wanted =
            |target: Target<'i>| matches!(target, Target::Function(p, f) if p == path && function() == Some(f));
        // A receiver whose type is unknown (`trainer`, `self.evaluator`, `make()`): a
        // method of that name may be the one called, where the calling file imports
        // from the method's module (or is it).
        let maybe_method = || is_method && (file == path || self.imports_from(file, path)) && function().is_some();
        match site.receiver.as_deref() {
            None => self.resolve_dotted(file, scope, name, 0).is_some_and(wanted),
            Some("") => maybe_method(),
            Some(receiver) => match self.resolve_dotted(file, scope, receiver, 0) {
                Some(target @ (Target::Module(_) | Target::Class(..))) => match self.member(&target, name, 0) {
                    Some(found) => wanted(found),
                    // `self.evaluate()` of a method the class inherits.
                    None => matches!(target, Target::Class(..)) && maybe_method(),
                },
                Some(Target::Function(..)) => false,
                None => maybe_method(),
            },
        }
    }

    /// Whether `file` imports `module` or something defined in it.
    fn imports_from(&self, file: &'i Path, module: &'i Path) -> bool {
        self.import_targets(file).contains(module)
    }

    /// The project files `file`'s imports reach, worked out once per index.
    fn import_targets(&self, file: &'i Path) -> Arc<HashSet<PathBuf>> {
        self.index.import_targets.get_or_compute(file, || {
            self.file(file).map_or_else(HashSet::new, |(file, summary)| {
                let reached = summary.imports.iter().filter_map(|import| {
                    match self.import_target(file, import.level, &import.path, 0)? {
                        Target::Module(p) | Target::Function(p, _) | Target::Class(p, _) => Some(p.to_path_buf()),
                    }
                });
                reached.collect()
            })
        })
    }

    /// Whether `site` (in `file`) runs with autograd disabled.
    fn site_disabled(&self, file: &'i Path, site: &Site, depth: usize) -> bool {
        match (site.switch, site.caller) {
            (Some(GradSwitch::Disables), _) => true,
            (Some(GradSwitch::Enables), _) | (None, None) => false,
            (None, Some(caller)) => self.function_runs_disabled(file, caller, depth + 1),
        }
    }

    /// Whether `function` of `path` always runs with autograd disabled: its own `torch`
    /// decorator, a project decorator that disables it, a framework evaluation hook, or
    /// every call of it in the project made with autograd disabled.
    fn function_runs_disabled(&self, path: &'i Path, function: u32, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        if let Some(known) = self.runs_disabled.borrow().get(&(path, function)) {
            return known.unwrap_or(false);
        }
        self.runs_disabled.borrow_mut().insert((path, function), None);
        let answer = self.decide_runs_disabled(path, function, depth);
        self.runs_disabled.borrow_mut().insert((path, function), Some(answer));
        answer
    }

    fn decide_runs_disabled(&self, path: &'i Path, function: u32, depth: usize) -> bool {
        let Some(summary) = self.function(path, function) else { return false };
        match summary.own_switch {
            Some(GradSwitch::Disables) => return true,
            Some(GradSwitch::Enables) => return false,
            None => {}
        }
        if summary.framework_hook {
            return true;
        }
        let decorated = summary.decorators.iter().any(|d| {
            matches!(self.resolve_dotted(path, None, d, 0), Some(Target::Function(file, f))
                if self.function(file, f).is_some_and(|s| s.no_grad_decorator))
        });
        if decorated {
            return true;
        }
        let sites = self.sites_of(path, function);
        !sites.is_empty() && sites.iter().all(|(file, site)| site.is_call && self.site_disabled(file, site, depth))
    }

    /// What `dotted` (`evaluate`, `utils.evaluate`, `self.evaluate`, `Trainer.evaluate`)
    /// names in `path`, seen from inside the function `scope`.
    fn resolve_dotted(&self, path: &'i Path, scope: Option<&str>, dotted: &str, depth: usize) -> Option<Target<'i>> {
        let mut parts = dotted.split('.');
        let first = parts.next()?;
        let mut target = if first == "self" || first == "cls" {
            // `self.evaluate` inside a method of `Trainer`: `Trainer.evaluate`.
            let class = scope?.split_once('.')?.0;
            let (path, summary) = self.file(path)?;
            let (name, _) = summary.definitions.get_key_value(class)?;
            Target::Class(path, name)
        } else {
            self.lookup(path, scope, first, depth)?
        };
        for part in parts {
            target = self.member(&target, part, depth)?;
        }
        Some(target)
    }

    /// The binding of `name` in `path`: an import made in `scope`, else a module-level
    /// definition or import (the last one made).
    fn lookup(&self, path: &'i Path, scope: Option<&str>, name: &str, depth: usize) -> Option<Target<'i>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (path, summary) = self.file(path)?;
        let scope_index = scope.and_then(|s| summary.functions.iter().position(|f| &*f.name == s)).map(|i| i as u32);
        let import =
            |in_scope: Option<u32>| summary.imports.iter().rev().find(|i| &*i.name == name && i.scope == in_scope);
        if let Some(import) = scope_index.and_then(|s| import(Some(s))) {
            return self.import_target(path, import.level, &import.path, depth + 1);
        }
        if let Some((name, definition)) = summary.definitions.get_key_value(name) {
            return Some(match definition {
                Definition::Function(function) => Target::Function(path, *function),
                Definition::Class => Target::Class(path, name),
            });
        }
        let import = import(None)?;
        self.import_target(path, import.level, &import.path, depth + 1)
    }

    /// What `import`ing `dotted` (`level` packages up from `from`) gives: the longest
    /// prefix that is a project module, then members of it.
    fn import_target(&self, from: &'i Path, level: u8, dotted: &str, depth: usize) -> Option<Target<'i>> {
        let parts: Vec<&str> = if dotted.is_empty() { Vec::new() } else { dotted.split('.').collect() };
        for split in (0..=parts.len()).rev() {
            if split == 0 && level == 0 {
                break;
            }
            let Some(module) = self.module_file(from, level, &parts[..split]) else { continue };
            let mut target = Target::Module(module);
            for part in &parts[split..] {
                target = self.member(&target, part, depth)?;
            }
            return Some(target);
        }
        None
    }

    /// The project file of module `parts`, imported `level` packages up from `from`
    /// (`level` 0: from the importing file's directory or any directory above it in the
    /// project, as a script's own directory and the project root are both on the path).
    fn module_file(&self, from: &Path, level: u8, parts: &[&str]) -> Option<&'i Path> {
        let directory = from.parent()?;
        let candidates = |base: &Path| -> [PathBuf; 2] {
            let mut module = base.to_path_buf();
            parts.iter().for_each(|p| module.push(p));
            let package = module.join("__init__.py");
            module.set_extension("py");
            if parts.is_empty() { [package.clone(), package] } else { [module, package] }
        };
        let found = |base: &Path| candidates(base).into_iter().find_map(|c| self.file(&c).map(|(p, _)| p));
        if level > 0 {
            let base = directory.ancestors().nth(level as usize - 1)?;
            return found(base);
        }
        directory.ancestors().find_map(found)
    }

    /// `name` looked up inside a module (a definition, a re-export, a submodule) or a
    /// class (a method).
    fn member(&self, target: &Target<'i>, name: &str, depth: usize) -> Option<Target<'i>> {
        match *target {
            Target::Module(path) => {
                let (_, summary) = self.file(path)?;
                if summary.definitions.contains_key(name) || summary.imports.iter().any(|i| &*i.name == name) {
                    return self.lookup(path, None, name, depth + 1);
                }
                // A submodule of a package.
                if path.file_name().is_some_and(|f| f == "__init__.py") {
                    return self.module_file(path, 1, &[name]).map(Target::Module);
                }
                None
            }
            Target::Class(path, class) => {
                let (_, summary) = self.file(path)?;
                let qualified = format!("{class}.{name}");
                let function = summary.functions.iter().position(|f| *f.name == qualified)?;
                Some(Target::Function(path, function as u32))
            }
            Target::Function(..) => None,
        }
    }
}

/// `evaluate` for `Trainer.evaluate`.
fn short_name(qualname: &str) -> &str {
    qualname.rsplit('.').next().unwrap_or(qualname)
}
