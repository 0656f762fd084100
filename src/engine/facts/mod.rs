//! Facts about a file that several rules share, computed lazily and at most once per
//! file: name bindings and imports, grad mode, and which names hold graph-attached tensors.

pub mod cross_file;
pub mod grad_mode;
pub mod heuristics;
pub mod index;
pub mod names;
pub mod out_of_memory;
pub mod tensors;
pub mod version_guard;

use crate::diagnostic::Related;
use crate::engine::field;
use crate::engine::tree::KindName;
use cross_file::{ParsedFile, ProjectFacts, ProjectSession};
use foldhash::{HashMap, HashMapExt};
use index::FileIndex;
use std::any::Any;
use std::cell::{OnceCell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use tree_sitter::Node;

/// A memo's key and the node it is about (`usize::MAX`: the whole file).
type MemoSlot = (&'static str, usize);

pub struct Facts<'t> {
    pub source: &'t str,
    pub root: Node<'t>,
    pub path: &'t Path,
    index: OnceCell<FileIndex<'t>>,
    /// Per function node: whether its body runs with gradients disabled.
    grad_disabled_functions: RefCell<HashMap<usize, bool>>,
    /// The quote character the file mostly uses (counted once: fixes ask per finding).
    quote: OnceCell<char>,
    /// What the rest of the project says about this file's functions, when it is known.
    project: Option<Box<dyn ProjectSession + 't>>,
    /// Per function node: the place in another file that decided its grad mode.
    grad_reasons: RefCell<HashMap<usize, Related>>,
    /// Answers a rule works out over the whole file but asks once per finding, kept for
    /// the rest of this file's lint (see [`Facts::memo`]).
    memos: RefCell<HashMap<MemoSlot, Rc<dyn Any>>>,
    /// The same for answers that are nodes of this file's tree (see [`Facts::memo_nodes`]).
    node_memos: RefCell<HashMap<MemoSlot, Rc<[Node<'t>]>>>,
    /// Per node: whether it sits under a version test or an old-release fallback.
    under_version_guard: RefCell<HashMap<usize, bool>>,
    /// Whole-file answers kept from an earlier lint of the file (see [`FileWideFacts`]).
    file_wide: Option<&'t FileWideFacts>,
}

/// Answers a lint draws from the whole file that name no tree node (the receivers it
/// moves to an accelerator, as spelled), kept by the language server with a document's
/// findings. A partial relint runs only where the edits since leave every such answer as
/// it was (their words are among `crate::rules::file_wide_words`, which make an edit
/// relint the whole file, and so start a new store): it reuses them instead of reading
/// the whole file again for one statement.
///
/// The parts of a lint split between cores share one store: an answer is worked out
/// once, by the first part to ask, and a part that asks meanwhile waits for it.
#[derive(Default)]
pub struct FileWideFacts(Mutex<HashMap<&'static str, Arc<FileWideAnswer>>>);

type FileWideAnswer = std::sync::OnceLock<Arc<dyn Any + Send + Sync>>;

impl FileWideFacts {
    /// The slot of `key`'s answer, made empty when first asked for.
    fn slot(&self, key: &'static str) -> Arc<FileWideAnswer> {
        let mut map = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        map.entry(key).or_default().clone()
    }
}

/// The quote character `source` mostly uses for strings (fixes write theirs in it).
pub fn preferred_quote(source: &str) -> char {
    let single = source.matches('\'').count();
    let double = source.matches('"').count();
    if single > double { '\'' } else { '"' }
}

impl<'t> Facts<'t> {
    pub fn new(source: &'t str, root: Node<'t>, path: &'t Path) -> Facts<'t> {
        Facts {
            source,
            root,
            path,
            index: OnceCell::new(),
            grad_disabled_functions: RefCell::new(HashMap::new()),
            quote: OnceCell::new(),
            project: None,
            grad_reasons: RefCell::new(HashMap::new()),
            memos: RefCell::new(HashMap::new()),
            node_memos: RefCell::new(HashMap::new()),
            under_version_guard: RefCell::new(HashMap::new()),
            file_wide: None,
        }
    }

    /// Keep whole-file answers in `store`, and reuse those it holds from earlier lints.
    pub fn with_file_wide(mut self, store: Option<&'t FileWideFacts>) -> Facts<'t> {
        self.file_wide = store;
        self
    }

    /// `compute()`'s answer for `key`, drawn from the whole file and naming no tree node:
    /// taken from the file-wide store when it holds one (see [`FileWideFacts`]), else
    /// worked out once in this lint and kept there.
    pub fn file_wide<T: Send + Sync + 'static>(&self, key: &'static str, compute: impl FnOnce() -> T) -> Arc<T> {
        let Some(store) = self.file_wide else {
            return self.memo(key, None, || Arc::new(compute())).as_ref().clone();
        };
        // Worked out outside the store's lock, which other keys' answers need; an answer
        // must not ask for its own key.
        let answer = store.slot(key).get_or_init(|| Arc::new(compute())).clone();
        answer.downcast::<T>().expect("one type per file-wide key")
    }

    /// `compute()`'s answer for `key` (and `node`, for an answer per node), worked out the
    /// first time it is asked in this file. A rule keeps what it computes in its own
    /// module and memoizes it here, so that an answer drawn from the whole file is not
    /// recomputed for every finding: that makes a file's time grow with the square of
    /// its length.
    pub fn memo<T: 'static>(&self, key: &'static str, node: Option<Node>, compute: impl FnOnce() -> T) -> Rc<T> {
        let slot = (key, node.map_or(usize::MAX, |n| n.id()));
        if let Some(known) = self.memos.borrow().get(&slot) {
            return Rc::clone(known).downcast::<T>().expect("one type per memo key");
        }
        // Computed outside the borrow: it may ask other memos.
        let value = Rc::new(compute());
        self.memos.borrow_mut().insert(slot, value.clone());
        value
    }

    /// As [`Facts::memo`], for an answer that is a list of the file's nodes (which a
    /// memo of any type cannot hold: they borrow the tree).
    pub fn memo_nodes(&self, key: &'static str, node: Node, compute: impl FnOnce() -> Vec<Node<'t>>) -> Rc<[Node<'t>]> {
        let slot = (key, node.id());
        if let Some(known) = self.node_memos.borrow().get(&slot) {
            return known.clone();
        }
        let value: Rc<[Node<'t>]> = compute().into();
        self.node_memos.borrow_mut().insert(slot, value.clone());
        value
    }

    /// Look names up among `identifiers`, every identifier of the tree, when a walk of
    /// the whole tree gathered them (`pattern::Matches::for_each`).
    pub fn with_identifiers(self, identifiers: Option<std::sync::Arc<index::WalkedIdentifiers<'t>>>) -> Facts<'t> {
        if let Some(identifiers) = identifiers {
            let index = FileIndex::new(self.root, self.source).with_identifiers(identifiers);
            // A fresh `Facts` has no index yet.
            let _ = self.index.set(index);
        }
        self
    }

    /// Let the facts ask the project about callers, decorators and callees elsewhere.
    pub fn with_project(mut self, project: Option<&'t dyn ProjectFacts>) -> Facts<'t> {
        let linted = ParsedFile { path: self.path, source: self.source, root: self.root };
        self.project = project.map(|p| p.session(Some(linted)));
        self
    }

    pub fn index(&self) -> &FileIndex<'t> {
        self.index.get_or_init(|| FileIndex::new(self.root, self.source))
    }

    /// The quote character the file mostly uses for strings.
    pub fn preferred_quote(&self) -> char {
        *self.quote.get_or_init(|| preferred_quote(self.source))
    }

    pub fn text(&self, node: Node) -> &'t str {
        crate::engine::tree::text(node, self.source)
    }

    pub fn qualified_name(&self, node: Node<'t>) -> Option<String> {
        names::qualified_name(self.index(), node, self.source)
    }

    /// Which of `apis` (dotted `torch.` paths) `node` stands for: through the file's
    /// imports, or spelled out in full where nothing in the file binds `torch` (its
    /// import out of sight).
    pub fn resolves_to(&self, node: Node<'t>, apis: &[&'static str]) -> Option<&'static str> {
        // `a.b.name` stands for something ending in `.name` however `a` resolves: most
        // attributes are ruled out here, without resolving their object.
        if node.kind_name() == "attribute"
            && let Some(attribute) = node.child_by_field_id(field::ATTRIBUTE)
        {
            let name = self.text(attribute);
            if !apis.iter().any(|api| api.strip_suffix(name).is_some_and(|rest| rest.ends_with('.'))) {
                return None;
            }
        }
        match self.qualified_name(node) {
            Some(name) => apis.iter().copied().find(|api| *api == name),
            None => {
                let text = self.text(node);
                apis.iter().copied().find(|api| *api == text && self.index().lookup("torch", node).is_none())
            }
        }
    }

    /// Calls made through any of `names` (`backward(...)`, `x.backward(...)`) inside
    /// `within`, in document order.
    pub fn calls_named(&self, names: &[&str], within: Node<'t>) -> Vec<Node<'t>> {
        let mut calls: Vec<Node<'t>> =
            names.iter().flat_map(|name| self.index().calls_named_in(name, within.byte_range())).collect();
        calls.sort_by_key(|c| c.start_byte());
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole-file answer is worked out once per store, whichever lint asks first; a lint
    /// without a store works it out for itself.
    #[test]
    fn file_wide_answers_are_kept_in_the_store_across_lints() {
        let source = "model.to(device)\n";
        let tree = crate::engine::parse(source).unwrap();
        let path = Path::new("train.py");
        let computed = std::cell::Cell::new(0);
        let answer = |facts: &Facts| {
            *facts.file_wide("test answer", || {
                computed.set(computed.get() + 1);
                computed.get()
            })
        };
        let store = FileWideFacts::default();
        let first = Facts::new(source, tree.root_node(), path).with_file_wide(Some(&store));
        assert_eq!((answer(&first), answer(&first)), (1, 1));
        let next = Facts::new(source, tree.root_node(), path).with_file_wide(Some(&store));
        assert_eq!(answer(&next), 1);
        let alone = Facts::new(source, tree.root_node(), path);
        assert_eq!((answer(&alone), answer(&alone)), (2, 2));
        assert_eq!(computed.get(), 2);
    }

    /// The parts of a lint split between cores ask for the same answer at the same time:
    /// the first works it out and the others wait for it, instead of each working it out.
    #[test]
    fn a_file_wide_answer_asked_by_parts_at_once_is_worked_out_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let source = "model.to(device)\n";
        let tree = crate::engine::parse(source).unwrap();
        let path = Path::new("train.py");
        let store = FileWideFacts::default();
        let computed = AtomicUsize::new(0);
        let started = std::sync::Barrier::new(4);
        let answers: Vec<usize> = std::thread::scope(|scope| {
            let part = || {
                let facts = Facts::new(source, tree.root_node(), path).with_file_wide(Some(&store));
                started.wait();
                *facts.file_wide("test answer", || {
                    // Long enough for every other part to ask meanwhile.
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    computed.fetch_add(1, Ordering::SeqCst) + 1
                })
            };
            let parts: Vec<_> = (0..4).map(|_| scope.spawn(part)).collect();
            parts.into_iter().map(|p| p.join().unwrap()).collect()
        });
        assert_eq!(answers, [1, 1, 1, 1]);
        assert_eq!(computed.load(Ordering::SeqCst), 1);
    }
}
