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
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// For each module name of the project, the files whose text has it as a word.
#[derive(Default)]
pub(super) struct Mentions {
    by_module: HashMap<String, Vec<PathBuf>>,
    /// Files with a relative import of a package itself (`from . import x`,
    /// `from .. import x`): they may import any `__init__.py`.
    package_relative: Vec<PathBuf>,
}

impl Mentions {
    /// Read `texts` (path and text) for the module names of `all_files`; a file indexed
    /// from its summary alone (no text at hand) names the modules its imports spell.
    pub(super) fn read<'a>(
        all_files: impl Iterator<Item = &'a Path>,
        texts: Vec<(&'a Path, &'a str)>,
        summarized: Vec<(&'a Path, &'a FileSummary)>,
    ) -> Mentions {
        let modules: HashSet<String> = all_files.flat_map(module_names).collect();
        let named = |words: &mut dyn Iterator<Item = &'a str>| {
            let mut named: Vec<&str> = words.filter(|w| modules.contains(*w)).collect();
            named.sort_unstable();
            named.dedup();
            named
        };
        let mut read: Vec<(&Path, Vec<&str>, bool)> = texts
            .into_par_iter()
            .map(|(path, text)| (path, named(&mut import_line_words(text)), has_package_relative_import(text)))
            .collect();
        for (path, summary) in summarized {
            let mut spelled = summary.imports.iter().flat_map(|i| i.path.split('.'));
            // `from . import x` is recorded as `x` one package up: no module part.
            let package_relative = summary.imports.iter().any(|i| i.level > 0 && !i.path.contains('.'));
            read.push((path, named(&mut spelled), package_relative));
        }
        let mut mentions = Mentions::default();
        for (path, named, package_relative) in read {
            for module in named {
                mentions.by_module.entry(module.to_string()).or_default().push(path.to_path_buf());
            }
            if package_relative {
                mentions.package_relative.push(path.to_path_buf());
            }
        }
        mentions
    }

    /// `target` and every file that may reach it through a chain of imports.
    pub(super) fn importers(&self, target: &Path) -> HashSet<PathBuf> {
        let mut reach = HashSet::from([target.to_path_buf()]);
        let mut pending = vec![target.to_path_buf()];
        while let Some(module) = pending.pop() {
            let is_package = module.file_name().is_some_and(|f| f == "__init__.py");
            let by_name = module_names(&module).into_iter().filter_map(|name| self.by_module.get(&name));
            let relative = is_package.then_some(&self.package_relative);
            for file in by_name.chain(relative).flatten() {
                if reach.insert(file.clone()) {
                    pending.push(file.clone());
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

    fn mentions(files: &[(&str, &str)]) -> Mentions {
        let paths: Vec<PathBuf> = files.iter().map(|(p, _)| PathBuf::from(p)).collect();
        let texts = paths.iter().zip(files).map(|(p, (_, t))| (p.as_path(), *t)).collect();
        Mentions::read(paths.iter().map(PathBuf::as_path), texts, Vec::new())
    }

    fn sorted(set: &HashSet<PathBuf>) -> Vec<&str> {
        let mut all: Vec<&str> = set.iter().map(|p| p.to_str().unwrap()).collect();
        all.sort();
        all
    }

    #[test]
    fn a_file_is_reached_by_the_files_naming_its_module_and_by_their_importers() {
        let index = mentions(&[
            ("/p/pkg/evaluation.py", "def evaluate(model): ...\n"),
            ("/p/pkg/__init__.py", "from .evaluation import evaluate\n"),
            ("/p/train.py", "from pkg import evaluate\nevaluate(model)\n"),
            ("/p/sibling.py", "from . import helpers\n"),
            ("/p/other.py", "import os  # evaluation helpers\ndef evaluate(model): ...\n"),
            ("/p/joined.py", "from pkg.evaluation \\\n    import evaluate\n"),
            ("/p/unrelated.py", "evaluate(model)  # an evaluator of its own\nevaluation = 'pkg/evaluation.py'\n"),
        ]);
        // `other.py` names the module's word on an import line (a superset is fine);
        // `joined.py` names it on a line a backslash joins to one; `unrelated.py` names it
        // only outside imports, so it cannot reach it; `sibling.py` imports a package
        // relatively, so it may reach any `__init__.py`, among them the re-export.
        assert_eq!(
            sorted(&index.importers(Path::new("/p/pkg/evaluation.py"))),
            [
                "/p/joined.py",
                "/p/other.py",
                "/p/pkg/__init__.py",
                "/p/pkg/evaluation.py",
                "/p/sibling.py",
                "/p/train.py"
            ]
        );
        assert_eq!(sorted(&index.importers(Path::new("/p/unrelated.py"))), ["/p/unrelated.py"]);
    }

    #[test]
    fn only_a_relative_import_of_a_package_itself_counts_as_one() {
        assert!(has_package_relative_import("from . import x"));
        assert!(has_package_relative_import("from .. import (a,\n b)"));
        assert!(!has_package_relative_import("from .utils import x"));
        assert!(!has_package_relative_import("from .utils import x\nfrom torch import nn"));
    }
}
