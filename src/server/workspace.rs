//! The project index of the workspace folders (`crate::project`): built in the
//! background at start with `$/progress` work-done reports, kept current from open,
//! changed, saved and closed documents (an open document wins over the disk) and from
//! watched-file events, and read by every lint. When an update changes what a file
//! tells the project, the open files whose findings may read it are linted again (and a
//! pulling client is asked to refresh). A lint never waits for the index: until it is
//! built, facts stop at the file's edge.

use super::state::{State, lock};
use super::{Backend, background};
use crate::config::ConfigResolver;
use crate::discover;
use crate::notebook::Cells;
use crate::project::{self, Change, ProjectIndex};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use tower_lsp_server::ls_types::notification::Progress;
use tower_lsp_server::ls_types::request::WorkDoneProgressCreate;
use tower_lsp_server::ls_types::*;

/// How many parts the first index is built in, one progress report each.
const PARTS: usize = 10;

const PROGRESS_TOKEN: &str = "oomlint/index";

#[derive(Default)]
pub struct Workspace {
    pub index: Arc<RwLock<ProjectIndex>>,
    pub folders: Vec<PathBuf>,
    /// The latest update asked for each file, by ticket: updates are summarised in the
    /// background, in parallel, and may finish out of order (the open's text after the
    /// first edit's); only the latest one asked for is put into the index.
    latest: HashMap<PathBuf, u64>,
    tickets: u64,
    /// The files whose update runs now, each with the latest update asked for meanwhile
    /// (what to read, and its ticket).
    running: HashMap<PathBuf, Option<(Content, u64)>>,
}

/// What an index update reads for a file.
enum Content {
    /// The file on disk.
    Disk,
    /// An editor's buffer: the file's text (a notebook's JSON), parsed for the index.
    Text(String),
    /// An editor's buffer as the engine reads it (a notebook's code cells joined), with
    /// the syntax tree linting parsed it to when there is one, which the index reuses.
    Code(Arc<str>, Option<tree_sitter::Tree>),
}

impl Workspace {
    /// A ticket for a new update of `path`, which supersedes those issued before.
    fn ticket(&mut self, path: &Path) -> u64 {
        self.tickets += 1;
        self.latest.insert(path.to_path_buf(), self.tickets);
        self.tickets
    }

    /// Whether `ticket` is still the latest update of `path`; it is then no longer
    /// pending.
    fn take_if_latest(&mut self, path: &Path, ticket: u64) -> bool {
        let latest = self.latest.get(path) == Some(&ticket);
        if latest {
            self.latest.remove(path);
        }
        latest
    }
}

/// The workspace folders a client names at `initialize` (or its root).
pub fn folders_of(params: &InitializeParams) -> Vec<PathBuf> {
    #[allow(deprecated)] // `root_uri`: older clients send only it
    let uris: Vec<&Uri> = match &params.workspace_folders {
        Some(folders) if !folders.is_empty() => folders.iter().map(|f| &f.uri).collect(),
        _ => params.root_uri.iter().collect(),
    };
    uris.into_iter().filter_map(|uri| uri.to_file_path().map(|p| p.into_owned())).collect()
}

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py" || e == "ipynb")
}

impl Backend {
    fn sharing(&self) -> Backend {
        Backend { client: self.client.clone(), state: self.state.clone() }
    }

    /// Build the index of the workspace folders in the background, reporting progress.
    pub(super) fn index_workspace(&self) {
        let backend = self.sharing();
        tokio::spawn(async move {
            let folders = backend.state().workspace.folders.clone();
            if folders.is_empty() {
                return;
            }
            let token = NumberOrString::String(PROGRESS_TOKEN.to_string());
            let created = backend
                .client
                .send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams { token: token.clone() })
                .await
                .is_ok();
            let report = |progress: WorkDoneProgress| {
                let client = backend.client.clone();
                let token = token.clone();
                async move {
                    if created {
                        let value = ProgressParamsValue::WorkDone(progress);
                        client.send_notification::<Progress>(ProgressParams { token, value }).await;
                    }
                }
            };
            report(WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "oomlint: indexing the workspace".to_string(),
                cancellable: Some(false),
                message: None,
                percentage: Some(0),
            }))
            .await;
            let files = tokio::task::spawn_blocking(move || {
                let mut resolver = ConfigResolver::default();
                discover::python_files(&folders, &mut resolver).files
            })
            .await
            .unwrap_or_default();
            let mut built = ProjectIndex::default();
            let part = files.len().div_ceil(PARTS).max(1);
            let mut done = 0;
            for chunk in files.chunks(part) {
                let chunk = chunk.to_vec();
                let Ok((index, skipped)) = tokio::task::spawn_blocking(move || ProjectIndex::build(&chunk)).await
                else {
                    continue;
                };
                for file in skipped {
                    let message = format!("oomlint: {} not indexed: {}", file.path.display(), file.reason);
                    backend.client.log_message(MessageType::WARNING, message).await;
                }
                done += index.len();
                built.merge(index);
                report(WorkDoneProgress::Report(WorkDoneProgressReport {
                    cancellable: Some(false),
                    message: Some(format!("{done}/{} files", files.len())),
                    percentage: Some((done * 100 / files.len().max(1)) as u32),
                }))
                .await;
            }
            // Open documents win over the disk: apply them to the new index under the
            // state lock, so no edit made meanwhile is lost, then put it in place.
            {
                let state = backend.state();
                for (path, text) in open_files(&state) {
                    built.update(&path, &text);
                }
                *project::write(&state.workspace.index) = built;
            }
            report(WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(format!("{} files indexed", files.len())),
            }))
            .await;
            // What the files on disk say may change the findings of the open documents.
            if !files.is_empty() {
                backend.relint_open_files();
            }
        });
    }

    /// Take the open document `uri`'s current text into the index, with the syntax tree
    /// the lint parsed it to (called once its findings are out, so that indexing never
    /// delays them).
    pub(super) fn reindex_open(&self, uri: &Uri) {
        let Some(path) = file_path(uri).filter(|p| is_python(p)) else { return };
        let taken = {
            let mut state = self.state();
            let content = state.documents.get_mut(uri).map(|document| {
                // A byte-order mark is not code: the index reads the text without it.
                let parsed = !crate::lint::is_notebook(&path) && !document.text.starts_with('\u{feff}');
                match document.tree().cloned().filter(|_| parsed) {
                    Some(tree) => Content::Code(document.shared_text(), Some(tree)),
                    None => Content::Text(document.text.clone()),
                }
            });
            content.map(|content| (content, state.workspace.ticket(&path)))
        };
        if let Some((content, ticket)) = taken {
            self.update_index(path, content, ticket);
        }
    }

    /// Take an open notebook's code cells, joined as they are linted, into the index in
    /// place of the notebook file on disk (as `check` indexes a notebook: its code).
    pub(super) fn reindex_notebook(&self, notebook: &Uri) {
        let Some(path) = file_path(notebook).filter(|p| is_python(p)) else { return };
        let taken = {
            let mut state = self.state();
            let cells = state.notebooks.get(notebook).map(|open| {
                let texts: Vec<&str> =
                    open.code_cells().filter_map(|cell| state.documents.get(cell).map(|d| d.text.as_str())).collect();
                Cells::from_texts(&texts)
            });
            cells.map(|cells| (Arc::<str>::from(cells.source), state.workspace.ticket(&path)))
        };
        if let Some((code, ticket)) = taken {
            self.update_index(path, Content::Code(code, None), ticket);
        }
    }

    /// Take `path`'s text on disk into the index (or forget it when it is gone), and
    /// relint the open files that depend on what changed.
    pub(super) fn reindex(&self, path: PathBuf) {
        if !is_python(&path) {
            return;
        }
        let ticket = self.state().workspace.ticket(&path);
        self.update_index(path, Content::Disk, ticket);
    }

    /// Summarise `content` in the background (`background`, at a lower priority than the
    /// lints) and put it into the index if `ticket` is
    /// still the file's latest update; relint the dependents. One update of a file runs
    /// at a time: those asked for meanwhile wait, and only the latest of them runs next,
    /// so a burst of edits to a large document is not summarised once per edit.
    fn update_index(&self, path: PathBuf, content: Content, ticket: u64) {
        {
            let mut state = self.state();
            if let Some(next) = state.workspace.running.get_mut(&path) {
                *next = Some((content, ticket));
                return;
            }
            state.workspace.running.insert(path.clone(), None);
        }
        let backend = self.sharing();
        let index = self.state().workspace.index.clone();
        tokio::spawn(async move {
            let state = backend.state.clone();
            let (mut content, mut ticket) = (content, ticket);
            loop {
                let (index, shared, file) = (index.clone(), state.clone(), path.clone());
                let found = background::run(move || {
                    // Summarised without holding a lock; put in only if no later update
                    // of the file was asked for meanwhile (under the state lock, so that
                    // the check and the update are one step).
                    let prepared = match content {
                        Content::Disk => {
                            std::fs::read_to_string(&file).ok().map(|text| project::read(&index).prepare(&file, &text))
                        }
                        Content::Text(text) => Some(project::read(&index).prepare(&file, &text)),
                        Content::Code(code, tree) => tree
                            .or_else(|| crate::engine::parse(&code))
                            .map(|tree| project::read(&index).prepare_buffer(&file, code, &tree)),
                    };
                    let change = {
                        let mut state = lock(&shared);
                        if !state.workspace.take_if_latest(&file, ticket) {
                            return None;
                        }
                        match prepared {
                            Some(prepared) => project::write(&index).apply(prepared),
                            None => project::write(&index).remove(&file),
                        }
                    };
                    change.changed.then(|| dependents(&index, &file, &change))
                })
                .await;
                if let Some(Some(dependents)) = found {
                    backend.relint_dependents(dependents);
                }
                let next = {
                    let mut state = lock(&state);
                    let next = state.workspace.running.get_mut(&path).and_then(Option::take);
                    if next.is_none() {
                        state.workspace.running.remove(&path);
                    }
                    next
                };
                match next {
                    Some(next) => (content, ticket) = next,
                    None => return,
                }
            }
        });
    }

    /// The watched Python files that changed on disk and are not open (an open
    /// document's text wins).
    pub(super) fn reindex_watched(&self, changes: &[FileEvent]) {
        for change in changes {
            let Some(path) = file_path(&change.uri).filter(|p| is_python(p)) else { continue };
            if self.state().documents.contains_key(&change.uri) {
                continue;
            }
            self.reindex(path);
        }
    }

    fn relint_dependents(&self, dependents: Vec<PathBuf>) {
        let open: Vec<(Uri, i32)> = {
            let mut state = self.state();
            let open: Vec<(Uri, i32)> = dependents
                .iter()
                .filter_map(Uri::from_file_path)
                .filter_map(|uri| state.documents.get(&uri).map(|d| (uri, d.version)))
                .collect();
            for (uri, _) in &open {
                state.results.remove(uri);
            }
            open
        };
        for (uri, version) in open {
            self.schedule(uri, version);
        }
        self.refresh_pulled();
    }

    /// Lint every open document again (the index they read was replaced).
    fn relint_open_files(&self) {
        let open: Vec<(Uri, i32)> = {
            let mut state = self.state();
            state.results.clear();
            state.documents.iter().map(|(u, d)| (u.clone(), d.version)).collect()
        };
        for (uri, version) in open {
            self.schedule(uri, version);
        }
        self.refresh_pulled();
    }

    /// Ask a client that pulls diagnostics to pull again.
    fn refresh_pulled(&self) {
        if self.state().pull_diagnostics {
            let client = self.client.clone();
            tokio::spawn(async move {
                let _ = client.workspace_diagnostic_refresh().await;
            });
        }
    }
}

fn dependents(index: &RwLock<ProjectIndex>, path: &Path, change: &Change) -> Vec<PathBuf> {
    project::read(index).dependents(path, change)
}

fn file_path(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

/// The open documents that are files on disk, with their text.
fn open_files(state: &State) -> Vec<(PathBuf, String)> {
    state
        .documents
        .iter()
        .filter_map(|(uri, document)| Some((file_path(uri)?, document.text.clone())))
        .filter(|(path, _)| is_python(path))
        .collect()
}
