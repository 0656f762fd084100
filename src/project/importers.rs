//! Which files may import a given file, read from the texts alone, so that a question
//! about a function's callers parses only the files that can reach it.
//!
//! `check` indexes a project lazily: a file is parsed for the index only when a question
//! needs it. A caller in another file reaches a function only through imports (its own
//! `from … import`, `import a.b`, or a chain of re-exports), and every import names the
//! module it reaches as a word of the line of its `import` keyword, backslash-joined lines
//! included (`from utils.eval import evaluate` names `eval`), or, for a package's
//! `__init__.py`, as a relative import of the package itself (`from . import evaluate`).
//! So the files that can reach a file are those whose import lines name its module, or
//! name the module of a file that can. That is a superset of the real importers (a word in
//! a comment on such a line counts), never a subset: leaving a file out only saves parsing
//! it. Imports the index does not follow anyway (`importlib.import_module("m")`) are not
//! looked for.

use super::module_names;
use super::summary::FileSummary;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::Path;

/// A set of the index's files, by their numbers (see `ProjectIndex::insert`): a bit
/// each, so that the files that may reach a file in a large package (most of it) cost a
/// few hundred bytes to keep and nothing to ask about.
#[derive(Debug, Clone, Default)]
pub(super) struct FileSet(Vec<u64>);

impl FileSet {
    pub(super) fn contains(&self, file: u32) -> bool {
        self.0.get(file as usize / 64).is_some_and(|word| word & (1 << (file % 64)) != 0)
    }

    /// Whether `file` was not in the set.
    pub(super) fn insert(&mut self, file: u32) -> bool {
        let (word, bit) = (file as usize / 64, 1 << (file % 64));
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
    }
}

/// For each file of the project, the files whose text names its module.
#[derive(Default)]
pub(super) struct Mentions {
    /// Per file number: the files whose import lines name the module the file is
    /// imported as (an index into `namers`).
    module_of: Vec<Option<u32>>,
    /// Per module name: the files whose import lines have it as a word.
    namers: Vec<Vec<u32>>,
    /// The packages' `__init__.py` files.
    packages: FileSet,
    /// Files with a relative import of a package itself (`from . import x`,
    /// `from .. import x`): they may import any `__init__.py`.
    package_relative: Vec<u32>,
}

impl Mentions {
    /// Read `texts` (number and text) for the module names of `all_files` (number and
    /// path); a file indexed from its summary alone (no text at hand) names the modules
    /// its imports spell.
    pub(super) fn read<'a>(
        all_files: impl Iterator<Item = (u32, &'a Path)>,
        texts: Vec<(u32, &'a str)>,
        summarized: Vec<(u32, &'a FileSummary)>,
    ) -> Mentions {
        let mut mentions = Mentions::default();
        let mut modules: HashMap<String, u32> = HashMap::new();
        for (number, path) in all_files {
            let names = module_names(path);
            let Some(name) = names.into_iter().next() else { continue };
            let next = modules.len() as u32;
            let module = *modules.entry(name).or_insert(next);
            let number = number as usize;
            if mentions.module_of.len() <= number {
                mentions.module_of.resize(number + 1, None);
            }
            mentions.module_of[number] = Some(module);
            if path.file_name().is_some_and(|f| f == "__init__.py") {
                mentions.packages.insert(number as u32);
            }
        }
        mentions.namers = vec![Vec::new(); modules.len()];
        let named = |words: &mut dyn Iterator<Item = &'a str>| {
            let mut named: Vec<u32> = words.filter_map(|w| modules.get(w).copied()).collect();
            named.sort_unstable();
            named.dedup();
            named
        };
        let mut read: Vec<(u32, Vec<u32>, bool)> = texts
            .into_par_iter()
            .map(|(file, text)| (file, named(&mut import_line_words(text)), has_package_relative_import(text)))
            .collect();
        for (file, summary) in summarized {
            let mut spelled = summary.imports.iter().flat_map(|i| i.path.split('.'));
            // `from . import x` is recorded as `x` one package up: no module part.
            let package_relative = summary.imports.iter().any(|i| i.level > 0 && !i.path.contains('.'));
            read.push((file, named(&mut spelled), package_relative));
        }
        for (file, named, package_relative) in read {
            for module in named {
                mentions.namers[module as usize].push(file);
            }
            if package_relative {
                mentions.package_relative.push(file);
            }
        }
        mentions
    }

    /// `target` and every file that may reach it through a chain of imports.
    pub(super) fn importers(&self, target: u32) -> FileSet {
        let mut reach = FileSet::default();
        reach.insert(target);
        let mut pending = vec![target];
        while let Some(module) = pending.pop() {
            let module_of = self.module_of.get(module as usize).copied().flatten();
            let by_name = module_of.map(|m| &self.namers[m as usize]);
            let relative = self.packages.contains(module).then_some(&self.package_relative);
            for &file in by_name.into_iter().chain(relative).flatten() {
                if reach.insert(file) {
                    pending.push(file);
                }
            }
        }
        reach
    }
}

/// The identifier-like words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// The words of the lines of `text` that have the word `import`: an import statement
/// names its module on the line of its `import` keyword (`from a.b import (`, `import
/// a.b as c`, `x = 1; import m`), or on a line joined to it by a backslash. A script's
/// own module names appear in many other places (paths in strings, log messages,
/// variables named like the module), which are not imports.
fn import_line_words(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut lines: Vec<std::ops::Range<usize>> = Vec::new();
    for at in memchr::memmem::find_iter(bytes, b"import") {
        let before = text[..at].chars().next_back();
        let after = text[at + 6..].chars().next();
        if before.is_some_and(is_word_char) || after.is_some_and(is_word_char) {
            continue;
        }
        if lines.last().is_some_and(|line| line.contains(&at)) {
            continue;
        }
        lines.push(logical_line(bytes, at));
    }
    lines.into_iter().flat_map(move |line| words(&text[line]))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The line around `at`, with the lines a trailing backslash joins to it.
fn logical_line(bytes: &[u8], at: usize) -> std::ops::Range<usize> {
    let continued = |end: usize| bytes[..end].trim_ascii_end().ends_with(b"\\");
    let mut start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |n| n + 1);
    while start > 0 && continued(start - 1) {
        start = memchr::memrchr(b'\n', &bytes[..start - 1]).map_or(0, |n| n + 1);
    }
    let mut end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
    while end < bytes.len() && continued(end) {
        end = memchr::memchr(b'\n', &bytes[end + 1..]).map_or(bytes.len(), |n| end + 1 + n);
    }
    start..end
}

/// Whether `text` has `from .` (any number of dots) followed directly by `import`.
fn has_package_relative_import(text: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), b"from").any(|at| {
        let rest = text[at + 4..].trim_start();
        rest.starts_with('.') && rest.trim_start_matches(|c: char| c == '.' || c.is_whitespace()).starts_with("import")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: &[(&str, &str)] = &[
        ("/p/pkg/evaluation.py", "def evaluate(model): ...\n"),
        ("/p/pkg/__init__.py", "from .evaluation import evaluate\n"),
        ("/p/train.py", "from pkg import evaluate\nevaluate(model)\n"),
        ("/p/sibling.py", "from . import helpers\n"),
        ("/p/other.py", "import os  # evaluation helpers\ndef evaluate(model): ...\n"),
        ("/p/joined.py", "from pkg.evaluation \\\n    import evaluate\n"),
        ("/p/unrelated.py", "evaluate(model)  # an evaluator of its own\nevaluation = 'pkg/evaluation.py'\n"),
    ];

    /// The paths of the files (numbered in the order of `FILES`) that may reach `target`.
    fn importers(target: &str) -> Vec<&'static str> {
        let numbered = || FILES.iter().enumerate().map(|(n, (path, _))| (n as u32, Path::new(*path)));
        let texts = FILES.iter().enumerate().map(|(n, (_, text))| (n as u32, *text)).collect();
        let mentions = Mentions::read(numbered(), texts, Vec::new());
        let target = FILES.iter().position(|(path, _)| *path == target).expect("a file of FILES") as u32;
        let reach = mentions.importers(target);
        let mut all: Vec<&str> =
            numbered().filter(|(n, _)| reach.contains(*n)).map(|(n, _)| FILES[n as usize].0).collect();
        all.sort();
        all
    }

    #[test]
    fn a_file_is_reached_by_the_files_naming_its_module_and_by_their_importers() {
        // `other.py` names the module's word on an import line (a superset is fine);
        // `joined.py` names it on a line a backslash joins to one; `unrelated.py` names it
        // only outside imports, so it cannot reach it; `sibling.py` imports a package
        // relatively, so it may reach any `__init__.py`, among them the re-export.
        assert_eq!(
            importers("/p/pkg/evaluation.py"),
            [
                "/p/joined.py",
                "/p/other.py",
                "/p/pkg/__init__.py",
                "/p/pkg/evaluation.py",
                "/p/sibling.py",
                "/p/train.py"
            ]
        );
        assert_eq!(importers("/p/unrelated.py"), ["/p/unrelated.py"]);
    }

    #[test]
    fn a_file_set_holds_what_was_put_in_it() {
        let mut set = FileSet::default();
        assert!(set.insert(3) && set.insert(200) && !set.insert(3));
        assert!(set.contains(3) && set.contains(200));
        assert!(!set.contains(4) && !set.contains(64) && !set.contains(10_000));
    }

    #[test]
    fn only_a_relative_import_of_a_package_itself_counts_as_one() {
        assert!(has_package_relative_import("from . import x"));
        assert!(has_package_relative_import("from .. import (a,\n b)"));
        assert!(!has_package_relative_import("from .utils import x"));
        assert!(!has_package_relative_import("from .utils import x\nfrom torch import nn"));
    }
}
