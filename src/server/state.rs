//! What the server knows between requests: the open documents and notebooks, the
//! findings last published for each, the client's settings and the configuration files.
//! Handlers change it synchronously under one lock; nothing awaits while holding it.

use super::document::Document;
use super::notebook_sync::OpenNotebook;
use super::position::Encoding;
use super::rule_docs::DocsLinks;
use super::settings::ClientSettings;
use super::workspace::Workspace;
use crate::config::{Config, ConfigResolver, InertSelection};
use crate::diagnostic::Diagnostic;
use crate::engine::{Project, RuleSettings};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tower_lsp_server::ls_types::{MessageType, TextDocumentItem, Uri};

#[derive(Default)]
pub struct State {
    pub documents: HashMap<Uri, Document>,
    pub encoding: Option<Encoding>,
    pub settings: ClientSettings,
    /// Configuration files, found per directory; rebuilt when one changes.
    pub resolver: ConfigResolver,
    /// The last configuration that loaded, per directory: in force while a broken
    /// edit of it is being fixed.
    last_good: HashMap<PathBuf, Arc<Config>>,
    /// Configuration errors and warnings already shown, so each is shown once until the
    /// configuration or the client's settings change.
    pub shown_errors: HashSet<String>,
    pub pull_diagnostics: bool,
    /// The client accepts a registration for config file changes.
    pub watch_files: bool,
    /// The latest findings per document, with the version they belong to.
    pub results: HashMap<Uri, (i32, Vec<Diagnostic>)>,
    /// Each rule's docs link, from the client settings.
    pub docs_links: Arc<DocsLinks>,
    /// Open notebooks by URI; their cells are in `documents`, each mapped back here.
    pub notebooks: HashMap<Uri, OpenNotebook>,
    cell_notebook: HashMap<Uri, Uri>,
    /// The project index of the workspace folders, read by every lint.
    pub workspace: Workspace,
    /// The targets being linted now, each with whether a change arrived meanwhile (it
    /// is linted again once the running lint ends).
    pub linting: HashMap<Target, bool>,
    /// The memory snapshot whose heaviest lines get inlay hints.
    pub snapshot: Option<super::inlay_hint::LoadedSnapshot>,
    /// The client redraws inlay hints when asked (`workspace/inlayHint/refresh`).
    pub inlay_hint_refresh: bool,
}

/// What is linted together: a file alone, or a notebook's code cells joined.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    File(Uri),
    Notebook(Uri),
}

impl Target {
    /// The file name rules and configuration see (an unsaved document gets a stand-in).
    pub fn path(&self) -> PathBuf {
        let (uri, untitled) = match self {
            Target::File(uri) => (uri, "untitled.py"),
            Target::Notebook(uri) => (uri, "untitled.ipynb"),
        };
        uri.to_file_path().map(|p| p.into_owned()).unwrap_or_else(|| PathBuf::from(untitled))
    }
}

pub fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere must not take the server down with a poisoned lock.
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    pub fn encoding(&self) -> Encoding {
        self.encoding.unwrap_or(Encoding::Utf16)
    }

    /// What linting `uri` means: the document itself, or the notebook it is a cell of.
    pub fn target_of(&self, uri: &Uri) -> Target {
        match self.cell_notebook.get(uri) {
            Some(notebook) => Target::Notebook(notebook.clone()),
            None => Target::File(uri.clone()),
        }
    }

    /// The target's current version: the file's, or the notebook's.
    pub fn version_of(&self, target: &Target) -> Option<i32> {
        match target {
            Target::File(uri) => self.documents.get(uri).map(|d| d.version),
            Target::Notebook(uri) => self.notebooks.get(uri).map(|n| n.version),
        }
    }

    /// The documents linted together for `target`, in order.
    pub fn members(&self, target: &Target) -> Option<Vec<Uri>> {
        match target {
            Target::File(uri) => self.documents.contains_key(uri).then(|| vec![uri.clone()]),
            Target::Notebook(uri) => Some(self.notebooks.get(uri)?.code_cells().cloned().collect()),
        }
    }

    /// A notebook cell's text document, opened as part of `notebook`.
    pub fn open_cell(&mut self, notebook: &Uri, cell: TextDocumentItem) {
        self.cell_notebook.insert(cell.uri.clone(), notebook.clone());
        self.documents.insert(cell.uri, Document::new(cell.text, cell.version));
    }

    /// Forget a notebook cell's text and findings.
    pub fn close_cell(&mut self, cell: &Uri) {
        self.cell_notebook.remove(cell);
        self.documents.remove(cell);
        self.results.remove(cell);
    }

    /// Re-read configuration files; a broken one is reported and the last good one kept.
    pub fn reload_configuration(&mut self) {
        self.resolver = ConfigResolver::default();
        self.shown_errors.clear();
    }

    /// The rule settings for `path` (`None` when the client disabled linting), and what to
    /// tell the user about the configuration, each message once: an error in a
    /// configuration file, or a preview rule that `select` names while preview is off.
    pub fn rule_settings(&mut self, path: &Path) -> (Option<RuleSettings>, Vec<(MessageType, String)>) {
        if !self.settings.enable {
            return (None, Vec::new());
        }
        let directory = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut notices = Vec::new();
        let config = match self.resolver.for_directory(&directory) {
            Ok(config) => {
                self.last_good.insert(directory, config.clone());
                config
            }
            Err(e) => {
                let message = format!("oomlint: {e} (the last good configuration stays in force)");
                notices.push((MessageType::ERROR, message));
                self.last_good.get(&directory).cloned().unwrap_or_default()
            }
        };
        for inert in config.inert_preview_selections(&self.settings.overrides) {
            notices.push((MessageType::WARNING, inert_selection_message(&inert)));
        }
        notices.retain(|(_, message)| self.shown_errors.insert(message.clone()));
        let mut settings = config.settings_for(path, &self.settings.overrides);
        settings.project = Some(Project(self.workspace.index.clone()));
        (Some(settings), notices)
    }
}

/// A preview rule selected while preview is off runs nothing: say where it is selected and
/// how to turn preview on.
fn inert_selection_message(inert: &InertSelection) -> String {
    let code = inert.code;
    match inert.file {
        None => format!(
            "oomlint: the `select` setting names {code}, which has no effect: {code} is a preview rule; \
             set `preview` to true in the oomlint settings to run it"
        ),
        Some(file) => format!(
            "oomlint: `select` in {} names {code}, which has no effect: {code} is a preview rule; \
             add `preview = true` there (or set `preview` in the oomlint settings) to run it",
            file.display()
        ),
    }
}
