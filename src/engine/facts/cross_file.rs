//! What the facts of one file may ask about the rest of the project: who calls a
//! function and under which grad mode, whether a decorator disables autograd, what a
//! callee returns. The project index (`crate::project`) answers; without one (a file
//! linted on its own) every answer is "nothing known" and the facts stop at the file's
//! edge, as they always did.

use super::Facts;
use super::index::BindingKind;
use super::tensors::TensorValue;
use crate::diagnostic::Related;
use crate::engine::field;
use crate::engine::tree::{self, KindName};
use std::path::Path;
use tree_sitter::Node;

/// Calls of one function made from other files of the project.
#[derive(Debug, Clone, Default)]
pub struct Callers {
    /// How many of them run with autograd disabled.
    pub disabled: usize,
    /// One that does, for the explanation.
    pub first_disabled: Option<Related>,
    /// A call with autograd on, or a use of the function as a value (it may be called
    /// anywhere): either proves that the function can run with autograd on.
    pub enabled: Option<Related>,
}

pub trait ProjectFacts: Send + Sync {
    /// Someone to ask the questions of one file's lint. A session may keep what one
    /// question worked out (who imports whom, which functions run with autograd
    /// disabled) for the next: the questions of one file are about the same few
    /// functions and their callers.
    ///
    /// `linted` is that file as its lint parsed it: most questions are about the linted
    /// file's own functions, and its summary drawn from this tree spares a second parse
    /// of the same text.
    fn session<'s>(&'s self, linted: Option<ParsedFile<'s>>) -> Box<dyn ProjectSession + 's>;

    /// A parse of `code`, the file at `path` that is about to be linted, made earlier to
    /// answer another file's question, with where its unclosed brackets are
    /// (`engine::parse_finding_unclosed_brackets`): the lint reads it instead of parsing
    /// the same text again. Handed over once; `None` when there is none.
    fn take_parse(&self, path: &Path, code: &str) -> Option<(tree_sitter::Tree, Vec<usize>)> {
        let _ = (path, code);
        None
    }
}

/// A file's code as its lint parsed it.
#[derive(Clone, Copy)]
pub struct ParsedFile<'t> {
    pub path: &'t Path,
    pub source: &'t str,
    pub root: Node<'t>,
}

/// The questions the facts of one file ask about the rest of the project.
pub trait ProjectSession {
    /// Calls, from files other than `path`, of the function `qualname` (`evaluate`,
    /// `Trainer.evaluate`) defined at `path`.
    fn callers(&self, path: &Path, qualname: &str) -> Callers;

    /// Whether the decorator spelled `dotted` (`no_grad_eval`, `utils.inference`), used in
    /// `path` inside the function `scope` (for imports made in a function), is a project
    /// function that runs what it decorates with autograd disabled: its definition.
    fn decorator_disables_grad(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<Related>;

    /// What the function of another project file called as `dotted` returns, with its
    /// definition.
    fn callee_returns(&self, path: &Path, scope: Option<&str>, dotted: &str) -> Option<(TensorValue, Related)>;

    /// Whether an import of `module` (`torch.nn.functional`, `utils.evaluate`, `.losses.dice`)
    /// may reach a file of the project. False only where it cannot: an absolute import
    /// whose first part names no file or directory of the project (`torch`, `numpy`).
    /// Cheap, where `callee_returns` first summarises the linted file to read its imports:
    /// scripts call library functions through imports all the time.
    fn may_import_project_file(&self, module: &str) -> bool {
        let _ = module;
        true
    }
}

impl<'t> Facts<'t> {
    /// The name the project knows `function` by: `f` for a top-level function,
    /// `Class.f` for a method of a top-level class; `None` for nested functions.
    pub fn project_name(&self, function: Node<'t>) -> Option<String> {
        let name = self.text(function.child_by_field_id(field::NAME)?);
        let outer = tree::ancestors(function).filter(|a| tree::is_scope(a.kind_name())).collect::<Vec<_>>();
        match outer.as_slice() {
            [] => Some(name.to_string()),
            [class] if class.kind_name() == "class_definition" => {
                Some(format!("{}.{name}", self.text(class.child_by_field_id(field::NAME)?)))
            }
            _ => None,
        }
    }

    /// The project name of the top-level function or method around `node`, for
    /// resolving imports made inside it.
    pub(super) fn project_scope(&self, node: Node<'t>) -> Option<String> {
        let function = tree::ancestors(node).filter(|a| a.kind_name() == "function_definition").last()?;
        self.project_name(function)
    }

    /// What a call of a project function returns, and where that function is.
    pub fn project_callee(&self, call: Node<'t>) -> Option<(TensorValue, Related)> {
        let project = self.project.as_deref()?;
        let function = call.child_by_field_id(field::FUNCTION)?;
        if !matches!(function.kind_name(), "identifier" | "attribute") {
            return None;
        }
        let dotted = self.text(function);
        if dotted.contains(|c: char| c.is_whitespace() || c == '(' || c == '[') {
            return None;
        }
        // Only an import leads to another file: `self.f`, a local definition or a name
        // this file never imports resolves here, and the file's own facts judge it. Asked
        // for most calls of a script, so answered from this file before the project.
        let head = dotted.split('.').next().unwrap_or(dotted);
        let imported_from_project = || {
            self.index().bindings(head).iter().any(|b| {
                matches!(b.kind, BindingKind::Import)
                    && b.import_path.as_deref().is_none_or(|module| project.may_import_project_file(module))
            })
        };
        if matches!(head, "self" | "cls") || !imported_from_project() {
            return None;
        }
        project.callee_returns(self.path, self.project_scope(call).as_deref(), dotted)
    }

    /// The place in another file that decided `function`'s grad mode, when it was the
    /// project that decided it (a caller with autograd on).
    pub fn cross_file_reason(&self, function: Node<'t>) -> Option<Related> {
        self.grad_reasons.borrow().get(&function.id()).cloned()
    }
}
