//! The project index: every Python file and notebook of a project, each summarised once
//! per content (`summary`), and the questions the rules ask across files answered from
//! those summaries (`resolve`): who calls a function and under which grad mode, whether
//! a decorator disables autograd, what a callee returns.
//!
//! How far it reaches: names bound by `def`, `class` and imports (absolute, relative,
//! `from pkg import module`, `import a.b as c`, re-exports through `__init__.py`), calls
//! through those names, through `self.` inside a class, and, for methods, through a
//! receiver whose type is unknown in a file that imports from the method's module
//! (`trainer.evaluate()` there counts as a call of its `evaluate` methods). Where it stops: calls made through `getattr`, a
//! dictionary or any other value (a function passed around as a value counts as called
//! with autograd on, anywhere), inherited methods, code outside the project (a library's
//! callers are unknown), and grad modes set by `torch.set_grad_enabled(False)`
//! statements in other files.

mod importers;
mod resolve;
mod resummary;
pub mod summary;

use crate::diagnostic::Related;
use crate::engine::facts::cross_file::{Callers, ParsedFile, ProjectFacts, ProjectSession};
use crate::engine::facts::tensors::TensorValue;
use crate::lint::{SourceKind, is_notebook};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use summary::FileSummary;

/// Files at or above this directory's level that mark a project's root.
const ROOT_MARKERS: &[&str] = &[".git", "pyproject.toml", "setup.py", "setup.cfg", "oomlint.toml", ".oomlint.toml"];

#[derive(Default)]
pub struct ProjectIndex {
    files: HashMap<PathBuf, Indexed>,
    /// Summaries by content hash: an unchanged text (a file saved again, an edit undone,
    /// the same file under two names) is not summarised twice.
    by_content: HashMap<u64, Arc<FileSummary>>,
    /// Which texts name which modules, read the first time a question needs it (see
    /// `importers`); forgotten when a file changes.
    mentions: OnceLock<importers::Mentions>,
    /// The files that may import a file, per file asked about.
    importers: PerFile<importers::FileSet>,
    /// The project files each file's imports resolve to, per file asked about: asked for
    /// every caller of every function a lint asks about.
    import_targets: PerFile<HashSet<PathBuf>>,
    /// The number the next new file gets (see `insert`).
    next_number: u32,
    /// The names the files and directories of the project bear (see
    /// `may_import_project_file`), read the first time it is asked; forgotten when a path
    /// comes or goes.
    path_names: OnceLock<HashSet<String>>,
    /// Parses of files made to answer other files' questions, waiting for the files' own
    /// lints (see `ParseShelf`): kept only by an index of files read lazily for one
    /// `check`, which lints each of them once.
    parses: Option<ParseShelf>,
}

/// Answers about files worked out from the whole index, kept until a file changes. Shared
/// by the threads that lint in parallel; a panic elsewhere must not poison it.
struct PerFile<T>(Mutex<HashMap<PathBuf, Arc<T>>>);

impl<T> Default for PerFile<T> {
    fn default() -> Self {
        PerFile(Mutex::default())
    }
}

impl<T> PerFile<T> {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Arc<T>>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answer for `file`, computed (outside the lock: it may ask for others) the first
    /// time.
    fn get_or_compute(&self, file: &Path, compute: impl FnOnce() -> T) -> Arc<T> {
        if let Some(known) = self.map().get(file) {
            return known.clone();
        }
        let answer = Arc::new(compute());
        self.map().insert(file.to_path_buf(), answer.clone());
        answer
    }

    fn clear(&mut self) {
        self.0.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
    }
}

struct Indexed {
    /// The file's number, given when it first came in and kept while its path is
    /// indexed: sets of files are kept as bits by these numbers (`importers::FileSet`).
    number: u32,
    content: u64,
    /// Set when indexed, or, for a file indexed lazily, the first time a question needs it.
    summary: OnceLock<Arc<FileSummary>>,
    /// The text, when it did not come from the disk (an editor's buffer), or when the
    /// file is indexed lazily.
    text: Option<Arc<str>>,
    /// `text` is the code the engine reads (an editor's buffer: a notebook's code cells
    /// joined), not the file's text.
    text_is_code: bool,
    /// `text` is the file's text as read from the disk (a file indexed lazily).
    text_from_disk: bool,
    /// The syntax tree of `text`, for an editor's buffer: its next version is summarised
    /// from this one's summary, walking only what changed (`resummary`).
    tree: Option<tree_sitter::Tree>,
    /// What each function returns (see `summary::returned_values`), worked out the first
    /// time a rule asks.
    returns: OnceLock<Vec<TensorValue>>,
}

impl Indexed {
    fn new(content: u64, summary: Arc<FileSummary>, text: Option<Arc<str>>) -> Indexed {
        Indexed {
            number: 0,
            content,
            summary: OnceLock::from(summary),
            text,
            text_is_code: false,
            text_from_disk: false,
            tree: None,
            returns: OnceLock::new(),
        }
    }

    /// A Python file summarised only when a question needs it.
    fn lazy(text: Arc<str>) -> Indexed {
        Indexed {
            number: 0,
            content: content_hash(&text),
            summary: OnceLock::new(),
            text: Some(text),
            text_is_code: false,
            text_from_disk: true,
            tree: None,
            returns: OnceLock::new(),
        }
    }

    fn summary(&self, path: &Path) -> &Arc<FileSummary> {
        self.summary_or_from(path, None, None)
    }

    /// The summary, drawn from `linted`'s tree when that is this file's text parsed (the
    /// text a parse of the index's copy would give; a notebook's JSON never is), so that
    /// a file's own lint does not parse it twice; else parsed, through `last` when given.
    fn summary_or_from(
        &self,
        path: &Path,
        linted: Option<ParsedFile>,
        last: Option<&LastParse<'_>>,
    ) -> &Arc<FileSummary> {
        self.summary.get_or_init(|| {
            let text = self.text.as_deref().unwrap_or_default();
            let code = crate::source::without_byte_order_mark(text);
            match (linted, last) {
                (Some(linted), _) if !is_notebook(path) && linted.source == code => {
                    Arc::new(summary::summarize(linted.source, linted.root))
                }
                (_, Some(last)) => {
                    Arc::new(last.read(path, self.content, text, summary::summarize).unwrap_or_default())
                }
                _ => Arc::new(summarize_text(path, text).unwrap_or_default()),
            }
        })
    }

    /// The summary of `code` (parsed to `tree`), the buffer's next version, drawn from
    /// this one's when its tree is at hand.
    fn resummarize(&self, code: &str, tree: &tree_sitter::Tree) -> Option<FileSummary> {
        let (old, text, old_tree) = (self.summary.get()?, self.text.as_deref()?, self.tree.as_ref()?);
        resummary::resummarize(old, text, old_tree, code, tree)
    }

    /// Whether the file may call or use a function named `name`: its summary has sites
    /// of it, or, not summarised yet, its text has the name at all.
    fn may_mention(&self, name: &str) -> bool {
        match (self.summary.get(), &self.text) {
            (Some(summary), _) => summary.sites.contains_key(name),
            (None, Some(text)) => memchr::memmem::find(text.as_bytes(), name.as_bytes()).is_some(),
            (None, None) => false,
        }
    }
}

/// A file that could not be indexed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl ProjectIndex {
    /// Index `files` (read from disk, in parallel). Unreadable files and files that are
    /// not UTF-8 text are skipped and returned.
    pub fn build(files: &[PathBuf]) -> (ProjectIndex, Vec<Skipped>) {
        type Read = (PathBuf, Result<(u64, FileSummary), String>);
        let read: Vec<Read> = files
            .par_iter()
            .map(|file| {
                let result = read_text(file).and_then(|text| {
                    let content = content_hash(&text);
                    summarize_text(file, &text).map(|s| (content, s))
                });
                (normalize(file), result)
            })
            .collect();
        let mut index = ProjectIndex::default();
        let mut skipped = Vec::new();
        for (path, result) in read {
            match result {
                Ok((content, summary)) => {
                    let summary = index.by_content.entry(content).or_insert_with(|| Arc::new(summary)).clone();
                    index.insert(path, Indexed::new(content, summary, None));
                }
                Err(reason) => skipped.push(Skipped { path, reason }),
            }
        }
        (index, skipped)
    }

    /// Index `files` to answer a few questions (`check`): each Python file is read now
    /// and parsed only when a question may need it (a file is searched for a function's
    /// callers only when its text has the function's name); notebooks are summarised now.
    /// Unreadable files, and files that are not UTF-8 text, are skipped and returned.
    pub fn lazy(files: &[PathBuf]) -> (ProjectIndex, Vec<Skipped>) {
        ProjectIndex::lazy_from(files, &mut HashMap::new())
    }

    /// `lazy`, taking the texts of files read already (`read_text`'s answers, by path as
    /// given in `files`) from `read` instead of reading them again.
    pub fn lazy_from(files: &[PathBuf], read: &mut HashMap<PathBuf, ReadText>) -> (ProjectIndex, Vec<Skipped>) {
        // Notebooks are summarised now: what their code is is known only once parsed.
        let (notebooks, python): (Vec<&PathBuf>, Vec<&PathBuf>) = files.iter().partition(|f| is_notebook(f));
        let notebooks: Vec<PathBuf> = notebooks.into_iter().cloned().collect();
        let (mut index, mut skipped) = ProjectIndex::build(&notebooks);
        // Read, copied into a shared text and hashed on the cores: what is left to the one
        // thread that fills the index is putting each in.
        let texts: Vec<(&PathBuf, Option<ReadText>)> =
            python.into_iter().map(|file| (file, read.remove(file))).collect();
        let read: Vec<(PathBuf, Result<Indexed, String>)> = texts
            .into_par_iter()
            .map(|(file, text)| {
                let text = text.unwrap_or_else(|| read_text(file).map(Arc::from));
                (normalize(file), text.map(Indexed::lazy))
            })
            .collect();
        for (path, indexed) in read {
            match indexed {
                Ok(indexed) => {
                    index.insert(path, indexed);
                }
                Err(reason) => skipped.push(Skipped { path, reason }),
            }
        }
        index.forget_imports();
        // Room for a mark for every file: each lint marks its file (see `ParseShelf::take`).
        index.parses = Some(ParseShelf(Mutex::new(HashMap::with_capacity(index.files.len()))));
        (index, skipped)
    }

    /// The text of the file at `path` as read from the disk, when the index holds it
    /// (a file indexed lazily).
    pub fn file_text(&self, path: &Path) -> Option<Arc<str>> {
        let indexed = self.files.get(&normalize(path))?;
        indexed.text.clone().filter(|_| indexed.text_from_disk)
    }

    /// Put `indexed` in as the file at `path`, under the path's number: a new one for a
    /// path not indexed yet. Returns the entry it replaces, if any.
    fn insert(&mut self, path: PathBuf, mut indexed: Indexed) -> Option<Indexed> {
        indexed.number = match self.files.get(&path) {
            Some(known) => known.number,
            None => {
                self.path_names = OnceLock::new();
                self.next_number += 1;
                self.next_number - 1
            }
        };
        self.files.insert(path, indexed)
    }

    /// The files that may reach `target` through imports (see `importers`), `target`
    /// among them, by number; worked out from the texts the index holds, and from the
    /// imports of the files indexed from their summary alone.
    fn importers(&self, target: &Path) -> Arc<importers::FileSet> {
        self.importers.get_or_compute(target, || {
            let mentions = self.mentions.get_or_init(|| {
                let texts = self.files.values().filter_map(|f| Some((f.number, f.text.as_deref()?))).collect();
                let summarized = (self.files.iter())
                    .filter(|(_, f)| f.text.is_none())
                    .map(|(path, f)| (f.number, &**f.summary(path)))
                    .collect();
                let numbered = self.files.iter().map(|(path, f)| (f.number, path.as_path()));
                importers::Mentions::read(numbered, texts, summarized)
            });
            self.files.get(target).map_or_else(Default::default, |f| mentions.importers(f.number))
        })
    }

    /// Forget who may import whom: the files changed.
    fn forget_imports(&mut self) {
        self.mentions = OnceLock::new();
        self.importers.clear();
        self.import_targets.clear();
    }

    /// Add the files of another index (built from other files, e.g. in parts to report
    /// progress).
    pub fn merge(&mut self, other: ProjectIndex) {
        for (path, indexed) in other.files {
            self.insert(path, indexed);
        }
        self.by_content.extend(other.by_content);
        self.forget_imports();
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn contains(&self, path: &Path) -> bool {
        self.files.contains_key(&normalize(path))
    }

    /// Take `text` as the content of `path` (an open editor buffer wins over the disk).
    /// Returns whether what the file tells the project changed, with the summaries
    /// before and after; a file that cannot be parsed keeps no summary.
    pub fn update(&mut self, path: &Path, text: &str) -> Change {
        let prepared = self.prepare(path, text);
        self.apply(prepared)
    }

    /// The summary of `text` as the content of `path`, computed without changing the
    /// index (so a shared index stays readable meanwhile); `apply` puts it in.
    pub fn prepare(&self, path: &Path, text: &str) -> Prepared {
        let path = normalize(path);
        let content = content_hash(text);
        let current = self.files.get(&path);
        let summary = match self.by_content.get(&content) {
            Some(known) => Some(known.clone()),
            None if current.is_some_and(|f| f.content == content) => None,
            None => summarize_text(&path, text).ok().map(Arc::new),
        };
        // Dependents read what the file's functions return only once a rule asked: then
        // the new text's answer is needed to tell whether it changed (the same text's is
        // the one known: a document closed unchanged is not parsed again).
        let returns = current.and_then(|f| f.returns.get().map(|known| (f, known))).map(|(f, known)| {
            if f.content == content {
                known.clone()
            } else {
                parsed(&path, text, summary::returned_values).unwrap_or_default()
            }
        });
        Prepared { path, content, summary, text: Arc::from(text), text_is_code: false, tree: None, returns }
    }

    /// `prepare` for an editor's buffer whose syntax tree is at hand: `code` is what the
    /// engine lints (a notebook's code cells joined) and `tree` its tree, so nothing is
    /// parsed again, and when the index holds the buffer's last version with its tree,
    /// only the statements that changed are walked.
    pub fn prepare_buffer(&self, path: &Path, code: Arc<str>, tree: &tree_sitter::Tree) -> Prepared {
        let path = normalize(path);
        let content = content_hash(&code);
        let current = self.files.get(&path);
        let summary = match self.by_content.get(&content) {
            Some(known) => Some(known.clone()),
            None if current.is_some_and(|f| f.content == content) => None,
            None => Some(Arc::new(
                current
                    .and_then(|f| f.resummarize(&code, tree))
                    .unwrap_or_else(|| summary::summarize(&code, tree.root_node())),
            )),
        };
        let returns = current.and_then(|f| f.returns.get().map(|known| (f, known))).map(|(f, known)| {
            if f.content == content { known.clone() } else { summary::returned_values(&code, tree.root_node()) }
        });
        Prepared { path, content, summary, text: code, text_is_code: true, tree: Some(tree.clone()), returns }
    }

    pub fn apply(&mut self, prepared: Prepared) -> Change {
        let Prepared { path, content, summary, text, text_is_code, tree, returns } = prepared;
        let before = self.files.get(&path).map(|f| f.summary(&path).clone());
        let old_content = self.files.get(&path).map(|f| f.content);
        let returns_changed = match (self.files.get(&path).and_then(|f| f.returns.get()), &returns) {
            (Some(old), Some(new)) => old != new,
            _ => false,
        };
        if old_content == Some(content) {
            // The same text: from the disk (a buffer closed, its text saved), the tree
            // kept for the buffer's next version goes with the buffer; from a buffer, it
            // is kept.
            if let Some(file) = self.files.get_mut(&path) {
                // A buffer's next version is summarised from this one's text and tree
                // (`resummary`): a file indexed from the disk holds no text, and without
                // it every later version of the buffer was summarised whole.
                let from_disk = tree.is_some() && file.text.is_none();
                if from_disk {
                    (file.text, file.text_is_code) = (Some(text), text_is_code);
                }
                let released = std::mem::replace(&mut file.tree, tree);
                if from_disk {
                    // Who imports whom is read from the texts the index holds.
                    self.forget_imports();
                }
                return Change { changed: false, before: before.clone(), after: before, _released: released };
            }
            return Change { changed: false, before: before.clone(), after: before, _released: None };
        }
        self.forget_imports();
        // Forget the summary of the text being replaced unless another file has it too:
        // an editor session would otherwise keep one per keystroke.
        if let Some(old) = old_content
            && !self.files.iter().any(|(other, f)| *other != path && f.content == old)
        {
            self.by_content.remove(&old);
        }
        let released = match &summary {
            Some(summary) => {
                self.by_content.insert(content, summary.clone());
                let indexed = Indexed { text_is_code, tree, ..Indexed::new(content, summary.clone(), Some(text)) };
                if let Some(returns) = returns {
                    let _ = indexed.returns.set(returns);
                }
                self.insert(path, indexed)
            }
            None => {
                self.path_names = OnceLock::new();
                self.files.remove(&path)
            }
        };
        let changed = returns_changed || before.as_deref() != summary.as_deref();
        Change { changed, before, after: summary, _released: released.and_then(|r| r.tree) }
    }

    /// Forget a deleted file.
    pub fn remove(&mut self, path: &Path) -> Change {
        let path = normalize(path);
        let removed = self.files.remove(&path);
        let before = removed.as_ref().map(|f| f.summary(&path).clone());
        self.path_names = OnceLock::new();
        self.forget_imports();
        Change { changed: before.is_some(), before, after: None, _released: removed.and_then(|r| r.tree) }
    }

    /// The files whose findings may read what `change` altered in `changed`: those that
    /// define a function it calls or passes around and that it may import (a call reaches
    /// another file only through imports: see `importers`), and those that import it (its
    /// decorators and return values). Always excludes `changed` itself.
    pub fn dependents(&self, changed: &Path, change: &Change) -> Vec<PathBuf> {
        let changed = normalize(changed);
        let mut names: Vec<&str> = Vec::new();
        for summary in [&change.before, &change.after].into_iter().flatten() {
            names.extend(summary.sites.keys().map(|k| &**k));
        }
        // A file no longer indexed (deleted) imports nothing that can be told now: every
        // file defining a name it called counts.
        let number = self.files.get(&changed).map(|f| f.number);
        let reaches = |path: &Path| number.is_none_or(|number| self.importers(path).contains(number));
        let module_names = module_names(&changed);
        let mut found: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|(path, _)| **path != changed)
            .filter(|(path, file)| {
                let summary = file.summary(path);
                let defines = summary.functions.iter().any(|f| {
                    let last = f.name.rsplit('.').next().unwrap_or(&f.name);
                    names.contains(&last)
                }) && reaches(path);
                let imports = summary
                    .imports
                    .iter()
                    .any(|i| module_names.iter().any(|m| i.path.split('.').any(|part| part == m.as_str())));
                defines || imports
            })
            .map(|(path, _)| path.clone())
            .collect();
        found.sort();
        found
    }

    /// Whether an import of `module` may reach a project file (see
    /// `ProjectSession::may_import_project_file`). An absolute import reaches a module
    /// file `a/b.py` or package `a/b/__init__.py` under a directory above the importing
    /// file (`resolve::Resolver::module_file`), so its first part is the name of a
    /// directory or a file's stem on some indexed path; a relative import may reach any.
    fn may_import_project_file(&self, module: &str) -> bool {
        if module.starts_with('.') {
            return true;
        }
        let first = module.split('.').next().unwrap_or(module);
        let names = self.path_names.get_or_init(|| {
            let mut names = HashSet::new();
            for path in self.files.keys() {
                let stem = path.file_stem().and_then(|s| s.to_str());
                let directories = path.parent().into_iter().flat_map(|p| p.components());
                names.extend(directories.filter_map(|c| c.as_os_str().to_str()).chain(stem).map(str::to_string));
            }
            names
        });
        names.contains(first)
    }

    /// What `function` (an index into the summary's functions) of `path` returns, read
    /// from the tree `last` kept when that is the file's (its summary was just read).
    fn returns_of(&self, path: &Path, function: u32, last: &LastParse<'_>) -> TensorValue {
        let Some(file) = self.files.get(path) else { return TensorValue::Unknown };
        let returns = file.returns.get_or_init(|| {
            let text = match &file.text {
                Some(text) => Some(std::borrow::Cow::Borrowed(&**text)),
                // The disk's text, if it is still the one summarised.
                None => read_text(path).ok().filter(|text| content_hash(text) == file.content).map(Into::into),
            };
            let read = |text: std::borrow::Cow<str>| match file.text_is_code {
                true => crate::engine::parse(&text).map(|tree| summary::returned_values(&text, tree.root_node())),
                false => last.read(path, file.content, &text, summary::returned_values).ok(),
            };
            text.and_then(read).unwrap_or_default()
        });
        returns.get(function as usize).copied().unwrap_or(TensorValue::Unknown)
    }
}

/// A file's summary made ready for `ProjectIndex::apply`.
pub struct Prepared {
    path: PathBuf,
    content: u64,
    summary: Option<Arc<FileSummary>>,
    text: Arc<str>,
    text_is_code: bool,
    tree: Option<tree_sitter::Tree>,
    /// What its functions return, worked out when the index had been asked it before.
    returns: Option<Vec<TensorValue>>,
}

/// What one update did to the index.
pub struct Change {
    /// Whether the file's summary (what other files read) is different.
    pub changed: bool,
    pub before: Option<Arc<FileSummary>>,
    pub after: Option<Arc<FileSummary>>,
    /// The syntax tree the index stopped keeping, freed with the change: by whoever holds
    /// it after letting go of the index's lock, since freeing a large file's tree takes
    /// milliseconds, which every reader of the index would wait out.
    _released: Option<tree_sitter::Tree>,
}

/// `check`'s index, read-only while the files are linted: one resolver per file's lint
/// keeps its answers for the file's next questions.
impl ProjectFacts for ProjectIndex {
    fn session<'s>(&'s self, linted: Option<ParsedFile<'s>>) -> Box<dyn ProjectSession + 's> {
        Box::new(resolve::Resolver::new(self, linted))
    }

    fn take_parse(&self, path: &Path, code: &str) -> Option<(tree_sitter::Tree, Vec<usize>)> {
        self.parses.as_ref()?.take(&normalize(path), code)
    }
}

impl ProjectSession for resolve::Resolver<'_> {
    fn callers(&self, path: &Path, qualname: &str) -> Callers {
        self.callers(&normalize(path), qualname)
    }

    fn decorator_disables_grad(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<Related> {
        self.decorator_disables_grad(&normalize(path), scope, dotted)
    }

    fn callee_returns(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<(TensorValue, Related)> {
        self.callee_returns(&normalize(path), scope, dotted)
    }

    fn may_import_project_file(&self, module: &str) -> bool {
        self.index().may_import_project_file(module)
    }
}

/// The index as the language server shares it: read by every lint, updated by edits
/// meanwhile, so each question is answered from the index as it is then.
impl ProjectFacts for std::sync::RwLock<ProjectIndex> {
    fn session<'s>(&'s self, linted: Option<ParsedFile<'s>>) -> Box<dyn ProjectSession + 's> {
        Box::new(SharedSession(self, linted))
    }
}

struct SharedSession<'i>(&'i std::sync::RwLock<ProjectIndex>, Option<ParsedFile<'i>>);

impl ProjectSession for SharedSession<'_> {
    fn callers(&self, path: &Path, qualname: &str) -> Callers {
        read(self.0).session(self.1).callers(path, qualname)
    }

    fn decorator_disables_grad(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<Related> {
        read(self.0).session(self.1).decorator_disables_grad(path, scope, dotted)
    }

    fn callee_returns(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<(TensorValue, Related)> {
        read(self.0).session(self.1).callee_returns(path, scope, dotted)
    }

    fn may_import_project_file(&self, module: &str) -> bool {
        read(self.0).may_import_project_file(module)
    }
}

/// A read guard; a panic elsewhere must not take the index down with a poisoned lock.
pub fn read(index: &std::sync::RwLock<ProjectIndex>) -> std::sync::RwLockReadGuard<'_, ProjectIndex> {
    index.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A write guard (see `read`).
pub fn write(index: &std::sync::RwLock<ProjectIndex>) -> std::sync::RwLockWriteGuard<'_, ProjectIndex> {
    index.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The directories whose files make the projects of `paths`: for each path, the nearest
/// directory at or above it, and at or below the working directory, holding a project
/// marker (`.git`, `pyproject.toml`, ...), else the path itself (its directory, for a
/// file). Never climbs above the working directory, so a stray file does not make the
/// whole home directory a project.
pub fn roots_for(paths: &[PathBuf]) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut roots: Vec<PathBuf> = paths
        .iter()
        .map(|path| {
            let path = normalize(path);
            let start =
                if path.is_dir() { path.clone() } else { path.parent().map(Path::to_path_buf).unwrap_or_default() };
            let marked = start
                .ancestors()
                .take_while(|a| a.starts_with(&cwd))
                .find(|a| ROOT_MARKERS.iter().any(|m| a.join(m).exists()));
            marked.map_or(start.clone(), Path::to_path_buf)
        })
        .collect();
    roots.sort();
    roots.dedup();
    // A root inside another is covered by it.
    let all = roots.clone();
    roots.retain(|r| !all.iter().any(|other| other != r && r.starts_with(other)));
    roots
}

/// An absolute path with `.` and `..` resolved by their spelling (no symlinks followed),
/// so that one file has one key however it was named.
pub fn normalize(path: &Path) -> PathBuf {
    let absolute =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut clean = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

/// The names other files may import `path` by: its stem, and its package's name for an
/// `__init__.py`.
fn module_names(path: &Path) -> Vec<String> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
    if stem == "__init__" {
        let package = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("");
        vec![package.to_string()]
    } else {
        vec![stem]
    }
}

/// A file's text as read (`read_text`), shared, or why it could not be.
pub type ReadText = Result<Arc<str>, String>;

/// A file's text as the index reads it, or why it cannot: unreadable, binary (it holds
/// NUL bytes) or not UTF-8.
pub fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.contains(&0) {
        return Err("binary file (contains NUL bytes)".to_string());
    }
    String::from_utf8(bytes).map_err(|e| format!("not valid UTF-8 (at byte {})", e.utf8_error().valid_up_to()))
}

/// Parse and summarise one file's text (a notebook's code cells joined).
fn summarize_text(path: &Path, text: &str) -> Result<FileSummary, String> {
    parsed(path, text, summary::summarize)
}

/// `read` applied to one file's code (a notebook's code cells joined) and its tree.
fn parsed<T>(path: &Path, text: &str, read: impl FnOnce(&str, tree_sitter::Node) -> T) -> Result<T, String> {
    let (source, tree, _) = parse_file_text(path, text)?;
    Ok(read(source.code(), tree.root_node()))
}

/// One file's text as the engine lints it (a notebook's code cells joined), its tree, and
/// where the brackets the parse read as spaces are (`engine::parse_finding_unclosed_brackets`).
fn parse_file_text(path: &Path, text: &str) -> Result<(SourceKind, tree_sitter::Tree, Vec<usize>), String> {
    let text = crate::source::without_byte_order_mark(text);
    let source = SourceKind::from_file_text(path, text)?;
    if let Some(reason) = source.skipped() {
        return Err(reason.to_string());
    }
    let (tree, unclosed) = crate::engine::parse_finding_unclosed_brackets(source.code())
        .ok_or_else(|| "the parser gave up".to_string())?;
    Ok((source, tree, unclosed))
}

/// Parses of files made to answer other files' questions (a callee's file, parsed to find
/// what it returns), each kept for the file's own lint, which takes it instead of parsing
/// the same text again: a `check` lints every file of a directory once, and the files
/// imported by the others are often asked about before their turn comes. A file whose
/// lint has begun is marked so, and no parse of it is kept after that.
#[derive(Default)]
struct ParseShelf(Mutex<HashMap<PathBuf, Shelved>>);

enum Shelved {
    Parsed { code: u64, tree: tree_sitter::Tree, unclosed: Vec<usize> },
    Linting,
}

impl ParseShelf {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Shelved>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keep a parse of `code`, the file at `path`, unless its lint has begun or one is kept.
    fn offer(&self, path: &Path, code: &str, tree: &tree_sitter::Tree, unclosed: &[usize]) {
        self.map().entry(path.to_path_buf()).or_insert_with(|| Shelved::Parsed {
            code: content_hash(code),
            tree: tree.clone(),
            unclosed: unclosed.to_vec(),
        });
    }

    /// The parse kept of the file at `path`, if it is of `code`, which its lint is about to
    /// lint; the file is marked as linting either way.
    fn take(&self, path: &Path, code: &str) -> Option<(tree_sitter::Tree, Vec<usize>)> {
        match self.map().insert(path.to_path_buf(), Shelved::Linting)? {
            Shelved::Parsed { code: parsed, tree, unclosed } if parsed == content_hash(code) => Some((tree, unclosed)),
            _ => None,
        }
    }
}

/// The file last parsed to answer one lint's questions about other files, kept while
/// that lint lasts (`resolve::Resolver`): what a callee returns is asked right after the
/// callee's file is summarised to find it, and both are read from one parse, not two.
#[derive(Default)]
pub(crate) struct LastParse<'i> {
    kept: std::cell::RefCell<Option<KeptParse>>,
    /// Where each new parse is offered for its file's own lint, when the index keeps them.
    shelf: Option<&'i ParseShelf>,
}

struct KeptParse {
    path: PathBuf,
    /// The hash of the text parsed (`content_hash`).
    content: u64,
    source: SourceKind,
    tree: tree_sitter::Tree,
}

impl<'i> LastParse<'i> {
    pub(crate) fn for_index(index: &'i ProjectIndex) -> LastParse<'i> {
        LastParse { kept: Default::default(), shelf: index.parses.as_ref() }
    }

    /// `parsed` for the file at `path` whose text (`text`) hashes to `content`, from the
    /// tree kept when it is that file's, else from a new parse, which is kept instead.
    fn read<T>(
        &self,
        path: &Path,
        content: u64,
        text: &str,
        read: impl FnOnce(&str, tree_sitter::Node) -> T,
    ) -> Result<T, String> {
        let mut kept = self.kept.borrow_mut();
        if let Some(kept) = kept.as_ref().filter(|kept| kept.content == content && kept.path == path) {
            return Ok(read(kept.source.code(), kept.tree.root_node()));
        }
        let (source, tree, unclosed) = parse_file_text(path, text)?;
        if let Some(shelf) = self.shelf {
            shelf.offer(path, source.code(), &tree, &unclosed);
        }
        let answer = read(source.code(), tree.root_node());
        *kept = Some(KeptParse { path: path.to_path_buf(), content, source, tree });
        Ok(answer)
    }
}

/// A hash of a file's text, to tell whether it changed: kept in memory only, so any
/// fixed seed does. foldhash rather than SipHash: every file's whole text is hashed as it
/// is read, and SipHash reads a few bytes per cycle where foldhash reads tens.
fn content_hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::quality::FixedState::with_seed(0x6f6f_6d6c_696e_7400).hash_one(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLER: &str = "from losses import score\n\n\ndef train(model, x):\n    total = score(model, x)\n";

    fn losses(returned: &str) -> String {
        format!("def score(model, x):\n    loss = model(x).mean()\n    return {returned}\n")
    }

    /// A callee's file, parsed to find the callee, is read again for what it returns
    /// from the same tree; another text of it is parsed anew.
    #[test]
    fn the_last_file_parsed_is_read_again_without_a_parse() {
        let (path, text) = (Path::new("/p/losses.py"), losses("loss"));
        let last = LastParse::default();
        let root_of = |text: &str| last.read(path, content_hash(text), text, |code, root| (root.id(), code.len()));
        let first = root_of(&text).expect("parses");
        assert_eq!(root_of(&text), Ok(first), "the same tree");
        let edited = losses("x");
        let (root, length) = root_of(&edited).expect("parses");
        assert_ne!(root, first.0, "a new tree for another text");
        assert_eq!(length, edited.len());
        // Another path with the same text is another file.
        let other = last.read(Path::new("/p/other.py"), content_hash(&edited), &edited, |_, root| root.id());
        assert_ne!(other, Ok(root));
    }

    /// A callee's file parsed to answer a caller's question is kept for the callee's own
    /// lint, which takes it once, only for the text parsed; once a file's lint has begun,
    /// no parse of it is kept. An index that is not a `check`'s keeps none.
    #[test]
    fn a_file_parsed_for_another_files_question_is_kept_for_its_own_lint() {
        let (train, callee) = (PathBuf::from("/p/train.py"), PathBuf::from("/p/losses.py"));
        let text = losses("loss");
        let lazy = || {
            let mut read: HashMap<PathBuf, ReadText> =
                HashMap::from([(train.clone(), Ok(Arc::from(CALLER))), (callee.clone(), Ok(Arc::from(text.as_str())))]);
            let (index, skipped) = ProjectIndex::lazy_from(&[train.clone(), callee.clone()], &mut read);
            assert!(skipped.is_empty());
            index
        };
        let ask = |index: &ProjectIndex| {
            let asked = index.session(None).callee_returns(&train, Some("train"), "score");
            assert_eq!(asked.map(|(value, _)| value), Some(TensorValue::Attached));
        };
        assert!(lazy().take_parse(&callee, &text).is_none(), "nothing parsed yet");
        let index = lazy();
        ask(&index);
        assert!(index.take_parse(&callee, &losses("x")).is_none(), "not for another text");
        let index = lazy();
        ask(&index);
        let (tree, unclosed) = index.take_parse(&callee, &text).expect("kept for the callee's lint");
        let fresh = crate::engine::parse(&text).expect("parses");
        assert_eq!(tree.root_node().to_sexp(), fresh.root_node().to_sexp());
        assert!(unclosed.is_empty());
        assert!(index.take_parse(&callee, &text).is_none(), "handed over once");

        let shelf = ParseShelf::default();
        let (path, code) = (Path::new("/p/a.py"), "f(x\ndef g():\n    pass\n");
        let (tree, unclosed) = crate::engine::parse_finding_unclosed_brackets(code).expect("parses");
        assert_eq!(unclosed, [1], "the bracket left open");
        shelf.offer(path, code, &tree, &unclosed);
        assert_eq!(shelf.take(path, code).map(|(_, unclosed)| unclosed), Some(vec![1]));
        shelf.offer(path, code, &tree, &unclosed);
        assert!(shelf.take(path, code).is_none(), "offered after its lint began: not kept");
        // An editor's index (not lazy) keeps no parse.
        let mut editor = ProjectIndex::default();
        editor.update(&train, CALLER);
        editor.update(&callee, &text);
        editor.session(None).callee_returns(&train, Some("train"), "score");
        assert!(editor.take_parse(&callee, &text).is_none());
    }

    /// What a callee returns is worked out only when asked, and from then on a change of
    /// it alone counts as a change of what the file tells the project.
    #[test]
    fn a_changed_return_counts_once_a_rule_has_asked_for_it() {
        let (train, callee) = (Path::new("/p/train.py"), Path::new("/p/losses.py"));
        let mut index = ProjectIndex::default();
        index.update(train, CALLER);
        index.update(callee, &losses("loss"));
        // Nobody asked: the summaries alone (equal) decide.
        assert!(!index.update(callee, &losses("x")).changed);
        // A parameter handed back: nothing known.
        assert!(index.session(None).callee_returns(train, Some("train"), "score").is_none());
        let change = index.update(callee, &losses("loss"));
        assert!(change.changed);
        assert_eq!(index.dependents(callee, &change), [PathBuf::from("/p/train.py")]);
        let asked = index.session(None).callee_returns(train, Some("train"), "score");
        assert_eq!(asked.map(|(value, _)| value), Some(TensorValue::Attached));
        // The same text again (a document closed unchanged): nothing changed, and what
        // was worked out stays known.
        assert!(!index.update(callee, &losses("loss")).changed);
        assert!(index.files[&normalize(callee)].returns.get().is_some());
    }

    /// An import reaches a project file only through a first part that names one of its
    /// files or directories; a relative one may reach any. Paths that come and go count
    /// from then on.
    #[test]
    fn only_an_import_named_like_a_project_path_may_reach_a_project_file() {
        let mut index = ProjectIndex::default();
        index.update(Path::new("/p/lib/scoring.py"), &losses("loss"));
        index.update(Path::new("/p/train.py"), CALLER);
        let may = |index: &ProjectIndex, module: &str| index.may_import_project_file(module);
        for module in ["lib.scoring.score", "scoring.score", "lib", "train.main", ".anything", "..up.x"] {
            assert!(may(&index, module), "{module}");
        }
        for module in ["torch.nn.functional", "numpy", "scoring_utils.f", "ib.scoring"] {
            assert!(!may(&index, module), "{module}");
        }
        index.update(Path::new("/p/torch/__init__.py"), "");
        assert!(may(&index, "torch.nn.functional"));
        index.remove(Path::new("/p/torch/__init__.py"));
        assert!(!may(&index, "torch.nn.functional"));
    }

    /// An editor's index holds the texts of open files only; the rest come from the disk
    /// as summaries. A caller with a text that reaches a function only through a
    /// re-export known from its summary is still found.
    #[test]
    fn callers_are_found_through_a_re_export_known_only_from_its_summary() {
        let eval = Path::new("/p/pkg/evaluation.py");
        let init = Path::new("/p/pkg/__init__.py");
        let train = Path::new("/p/train.py");
        let mut index = ProjectIndex::default();
        index.update(eval, "def evaluate(model, x):\n    return model(x)\n");
        index.update(train, "import torch\nfrom pkg import evaluate\n\nwith torch.no_grad():\n    evaluate(m, x)\n");
        let reexport = summarize_text(init, "from .evaluation import evaluate\n").expect("summarised");
        index.insert(init.to_path_buf(), Indexed::new(content_hash("re-export"), Arc::new(reexport), None));
        index.forget_imports();
        let callers = index.session(None).callers(eval, "evaluate");
        assert_eq!((callers.disabled, callers.enabled.is_some()), (1, false), "{callers:?}");
    }

    /// An open buffer's tree is kept for its next version's summary, and let go with the
    /// buffer: a closed file's text comes from the disk again, the same text or not.
    #[test]
    fn a_buffer_keeps_its_tree_until_it_is_closed() {
        let path = Path::new("/p/train.py");
        let tree_kept = |index: &ProjectIndex| index.files[path].tree.is_some();
        let mut index = ProjectIndex::default();
        for closed in [CALLER.to_string(), format!("{CALLER}\nprint(total)\n")] {
            let tree = crate::engine::parse(CALLER).expect("parses");
            let prepared = index.prepare_buffer(path, Arc::from(CALLER), &tree);
            index.apply(prepared);
            assert!(tree_kept(&index));
            index.update(path, &closed);
            assert!(!tree_kept(&index), "{closed:?}");
        }
    }

    /// A file indexed from the disk, then opened unchanged, takes the buffer's text with
    /// its tree: the buffer's next version is summarised from them (`resummary`).
    #[test]
    fn a_buffer_opened_as_it_is_on_disk_is_resummarised_from_its_text() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("train.py");
        std::fs::write(&path, CALLER).expect("written");
        let (mut index, _) = ProjectIndex::build(std::slice::from_ref(&path));
        let tree = crate::engine::parse(CALLER).expect("parses");
        index.apply(index.prepare_buffer(&path, Arc::from(CALLER), &tree));
        let indexed = &index.files[&normalize(&path)];
        let edited = format!("{CALLER}    print(total)\n");
        let edited_tree = crate::engine::parse(&edited).expect("parses");
        let drawn = indexed.resummarize(&edited, &edited_tree);
        assert_eq!(drawn, Some(summary::summarize(&edited, edited_tree.root_node())));
    }

    /// The linted file's summary comes from its lint's tree only when that tree is of the
    /// text the index holds; any other text (an edit the index has not seen, a notebook's
    /// cells) leaves the summary to a parse of the index's own text.
    #[test]
    fn the_linted_tree_stands_in_only_for_the_same_text() {
        let path = Path::new("/p/losses.py");
        let text = losses("loss");
        let parse = |code: &str| crate::engine::parse(code).expect("parses");
        let from_parse = summarize_text(path, &text).expect("summarised");

        let same = Indexed::lazy(Arc::from(text.as_str()));
        let tree = parse(&text);
        let linted = ParsedFile { path, source: &text, root: tree.root_node() };
        assert_eq!(**same.summary_or_from(path, Some(linted), None), from_parse);

        let other_text = format!("{text}\n\ndef extra():\n    pass\n");
        let other_tree = parse(&other_text);
        let stale = Indexed::lazy(Arc::from(text.as_str()));
        let linted = ParsedFile { path, source: &other_text, root: other_tree.root_node() };
        let summary = stale.summary_or_from(path, Some(linted), None);
        assert_eq!(**summary, from_parse);
        assert!(summary.functions.iter().all(|f| &*f.name != "extra"));
    }
}
