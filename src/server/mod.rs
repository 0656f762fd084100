//! `oomlint server`: a language server over stdio on the same engine and fix model as
//! `oomlint check`. Document state changes synchronously and in order inside the
//! notification handlers (nothing awaits before the change is applied); linting runs in
//! the background per (document, version), debounced, and a result for a version that is
//! no longer current is dropped.

mod convert;
mod document;
mod incremental;
mod notebook_sync;
mod position;
mod rule_docs;
mod settings;

use crate::config::{Config, ConfigResolver};
use crate::diagnostic::Diagnostic;
use crate::engine::{Engine, RuleSettings};
use crate::fix::Applicability;
use crate::fix::apply::fix_source;
use convert::FixData;
use document::Document;
use notebook_sync::OpenNotebook;
use position::{Encoding, to_offset, to_range};
use rule_docs::DocsLinks;
use settings::ClientSettings;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

const FIX_ALL: &str = "source.fixAll.oomlint";

pub fn run() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let (service, socket) = LspService::new(Backend::new);
        Server::new(tokio::io::stdin(), tokio::io::stdout(), socket).serve(service).await;
    });
    // Do not wait for the thread blocked reading stdin: the client may keep it open.
    std::process::exit(0)
}

/// Build the service, for embedding and for in-process tests.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    LspService::new(Backend::new)
}

pub struct Backend {
    client: Client,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    documents: HashMap<Uri, Document>,
    encoding: Option<Encoding>,
    settings: ClientSettings,
    /// Configuration files, found per directory; rebuilt when one changes.
    resolver: ConfigResolver,
    /// The last configuration that loaded, per directory: in force while a broken
    /// edit of it is being fixed.
    last_good: HashMap<PathBuf, Arc<Config>>,
    /// Configuration errors already shown, so each is shown once.
    shown_errors: HashSet<String>,
    pull_diagnostics: bool,
    /// The client accepts a registration for config file changes.
    watch_files: bool,
    /// The latest findings per document, with the version they belong to.
    results: HashMap<Uri, (i32, Vec<Diagnostic>)>,
    /// Each rule's docs link, from the client settings.
    docs_links: Arc<DocsLinks>,
    /// Open notebooks by URI; their cells are in `documents`, each mapped back here.
    notebooks: HashMap<Uri, OpenNotebook>,
    cell_notebook: HashMap<Uri, Uri>,
}

impl State {
    /// A notebook cell's text document, opened as part of `notebook`.
    fn open_cell(&mut self, notebook: &Uri, cell: TextDocumentItem) {
        self.cell_notebook.insert(cell.uri.clone(), notebook.clone());
        self.documents.insert(cell.uri, Document::new(cell.text, cell.version));
    }

    /// Forget a notebook cell's text and findings.
    fn close_cell(&mut self, cell: &Uri) {
        self.cell_notebook.remove(cell);
        self.documents.remove(cell);
        self.results.remove(cell);
    }
}

/// What linting one version of a document needs, taken under the lock.
struct Snapshot {
    uri: Uri,
    version: i32,
    text: String,
    tree: Option<tree_sitter::Tree>,
    path: PathBuf,
    settings: Option<RuleSettings>,
    encoding: Encoding,
    docs_links: Arc<DocsLinks>,
    /// When only one top-level statement changed since the stored findings: its span
    /// now, how much longer the text became, and those findings.
    incremental: Option<(std::ops::Range<usize>, isize, Vec<Diagnostic>)>,
}

impl Backend {
    fn new(client: Client) -> Backend {
        Backend { client, state: Arc::new(Mutex::new(State::default())) }
    }

    /// Rebuild the rule docs links from the client's `docsUrl` (or the local copy).
    fn update_docs_links(&self) {
        let mut state = self.state();
        state.docs_links = Arc::new(DocsLinks::new(state.settings.docs_url.as_deref()));
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not take the server down with a poisoned lock.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lint a notebook's cells after the debounce delay and publish each cell's findings,
    /// unless the notebook changed meanwhile.
    fn schedule_notebook(&self, notebook: Uri) {
        let client = self.client.clone();
        let state = self.state.clone();
        let Some(version) = self.state().notebooks.get(&notebook).map(|n| n.version) else { return };
        tokio::spawn(async move {
            let delay = lock(&state).settings.debounce;
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if lock(&state).notebooks.get(&notebook).is_none_or(|n| n.version != version) {
                return;
            }
            // Pushed even to a client that pulls: clients pull for the documents their
            // selector names, and notebook cells are synced by the notebook's instead.
            let linted = lint_notebook(&client, &state, &notebook).await;
            for (cell, version, diagnostics) in linted.into_iter().flatten() {
                client.publish_diagnostics(cell, diagnostics, Some(version)).await;
            }
        });
    }

    /// Lint the current version of `uri` after the debounce delay and publish, unless a
    /// newer version arrived meanwhile.
    fn schedule(&self, uri: Uri, version: i32) {
        if let Some(notebook) = self.state().cell_notebook.get(&uri).cloned() {
            return self.schedule_notebook(notebook);
        }
        let client = self.client.clone();
        let state = self.state.clone();
        tokio::spawn(async move {
            let delay = lock(&state).settings.debounce;
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let linted = lint(&client, &state, &uri, Some(version)).await;
            let push = !lock(&state).pull_diagnostics;
            if let Some((version, diagnostics)) = linted.filter(|_| push) {
                client.publish_diagnostics(uri, diagnostics, Some(version)).await;
            }
        });
    }

    async fn report_problems(&self, problems: Vec<String>) {
        for message in problems {
            self.client.log_message(MessageType::WARNING, message).await;
        }
    }

    fn relint_all(&self) {
        // Settings or configuration changed: no stored finding can be reused.
        self.state().results.clear();
        let open: Vec<(Uri, i32)> = self.state().documents.iter().map(|(u, d)| (u.clone(), d.version)).collect();
        for (uri, version) in open {
            self.schedule(uri, version);
        }
        if self.state().pull_diagnostics {
            let client = self.client.clone();
            tokio::spawn(async move {
                let _ = client.workspace_diagnostic_refresh().await;
            });
        }
    }

    /// Re-read configuration files; a broken one is reported and the last good one kept.
    fn reload_configuration(&self) {
        let mut state = self.state();
        state.resolver = ConfigResolver::default();
        state.shown_errors.clear();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Lint the current version of `uri` (only if it is still `expected`), store the result,
/// and return it in LSP form.
async fn lint(
    client: &Client,
    state: &Arc<Mutex<State>>,
    uri: &Uri,
    expected: Option<i32>,
) -> Option<(i32, Vec<tower_lsp_server::ls_types::Diagnostic>)> {
    let notebook = lock(state).cell_notebook.get(uri).cloned();
    if let Some(notebook) = notebook {
        let cells = lint_notebook(client, state, &notebook).await?;
        return cells.into_iter().find(|(cell, _, _)| cell == uri).map(|(_, version, found)| (version, found));
    }
    let (snapshot, error) = {
        let mut state = lock(state);
        let document = state.documents.get(uri)?;
        if expected.is_some_and(|v| v != document.version) {
            return None;
        }
        let (text, tree, version) = (document.text.clone(), document.tree.clone(), document.version);
        let path = uri.to_file_path().map(|p| p.into_owned()).unwrap_or_else(|| PathBuf::from("untitled.py"));
        let (settings, error) = rule_settings(&mut state, &path);
        let encoding = state.encoding.unwrap_or(Encoding::Utf16);
        let incremental = incremental_plan(&state, uri);
        let docs_links = state.docs_links.clone();
        (Snapshot { uri: uri.clone(), version, text, tree, path, settings, encoding, docs_links, incremental }, error)
    };
    if let Some(message) = error {
        client.show_message(MessageType::ERROR, message).await;
    }
    let Snapshot { uri, version, text, tree, path, settings, encoding, docs_links, incremental } = snapshot;
    let found = match settings {
        Some(settings) => {
            let text = text.clone();
            let linted = tokio::task::spawn_blocking(move || match incremental {
                Some((unit, delta, previous)) => {
                    let engine = Engine::get();
                    let local = engine.lint_range(&text, tree.as_ref(), &path, &settings, Some(unit.clone()));
                    incremental::merge(previous, local.diagnostics, &unit, delta)
                }
                None => Engine::get().lint_parsed(&text, tree.as_ref(), &path, &settings).diagnostics,
            });
            linted.await.ok()?
        }
        None => Vec::new(),
    };
    let index = crate::source::LineIndex::new(&text);
    let converted = found.iter().map(|d| convert::diagnostic(&text, &index, d, encoding, &docs_links)).collect();
    let mut state = lock(state);
    // Drop a result for a version that is no longer current.
    if state.documents.get(&uri).is_none_or(|d| d.version != version) {
        return None;
    }
    if let Some(document) = state.documents.get_mut(&uri) {
        document.edits.retain(|e| e.version > version);
    }
    state.results.insert(uri, (version, found));
    Some((version, converted))
}

/// Lint a notebook's Python cells joined, store each cell's findings in its own
/// coordinates, and return them in LSP form per cell (`None` when a cell changed
/// meanwhile).
async fn lint_notebook(
    client: &Client,
    state: &Arc<Mutex<State>>,
    notebook: &Uri,
) -> Option<Vec<(Uri, i32, Vec<tower_lsp_server::ls_types::Diagnostic>)>> {
    let (cells, texts, versions, path, settings, error, encoding, docs_links) = {
        let mut state = lock(state);
        let cells: Vec<Uri> = state.notebooks.get(notebook)?.code_cells().cloned().collect();
        let documents: Vec<&Document> = cells.iter().map(|c| state.documents.get(c)).collect::<Option<_>>()?;
        let texts: Vec<String> = documents.iter().map(|d| d.text.clone()).collect();
        let versions: Vec<i32> = documents.iter().map(|d| d.version).collect();
        let path = notebook.to_file_path().map(|p| p.into_owned()).unwrap_or_else(|| PathBuf::from("untitled.ipynb"));
        let (settings, error) = rule_settings(&mut state, &path);
        let encoding = state.encoding.unwrap_or(Encoding::Utf16);
        (cells, texts, versions, path, settings, error, encoding, state.docs_links.clone())
    };
    if let Some(message) = error {
        client.show_message(MessageType::ERROR, message).await;
    }
    let (source, starts) = crate::notebook::join_cell_texts(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    let found = match settings {
        Some(settings) => {
            tokio::task::spawn_blocking(move || Engine::get().lint(&source, &path, &settings).diagnostics).await.ok()?
        }
        None => Vec::new(),
    };
    let lengths: Vec<usize> = texts.iter().map(String::len).collect();
    let mut by_cell = notebook_sync::split_by_cell(found, &starts, &lengths);
    let mut state = lock(state);
    let current = state.notebooks.get(notebook).map(|n| n.code_cells().cloned().collect::<Vec<_>>());
    let unchanged = current.as_ref() == Some(&cells)
        && cells.iter().zip(&versions).all(|(c, v)| state.documents.get(c).is_some_and(|d| d.version == *v));
    if !unchanged {
        return None;
    }
    let mut published = Vec::new();
    for (at, cell) in cells.into_iter().enumerate() {
        let found = by_cell.remove(&at).unwrap_or_default();
        let index = crate::source::LineIndex::new(&texts[at]);
        let converted =
            found.iter().map(|d| convert::diagnostic(&texts[at], &index, d, encoding, &docs_links)).collect();
        if let Some(document) = state.documents.get_mut(&cell) {
            document.edits.clear();
        }
        state.results.insert(cell.clone(), (versions[at], found));
        published.push((cell, versions[at], converted));
    }
    Some(published)
}

/// Relint one statement instead of the file when every change since the stored
/// findings stayed inside one top-level `def` or `class` and touched nothing that other
/// statements depend on.
fn incremental_plan(state: &State, uri: &Uri) -> Option<(std::ops::Range<usize>, isize, Vec<Diagnostic>)> {
    let (_, previous) = state.results.get(uri)?;
    let document = state.documents.get(uri)?;
    if document.edits.is_empty() || document.edits.iter().any(|e| e.risky) {
        return None;
    }
    let (span, delta) = incremental::dirty_span(&document.edits)?;
    let unit = incremental::enclosing_unit(document.tree.as_ref()?, &span)?;
    Some((unit, delta, previous.clone()))
}

/// The rule settings for `path` (`None` when the client disabled linting), and a
/// configuration error to show once.
fn rule_settings(state: &mut State, path: &Path) -> (Option<RuleSettings>, Option<String>) {
    if !state.settings.enable {
        return (None, None);
    }
    let directory = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let (config, error) = match state.resolver.for_directory(&directory) {
        Ok(config) => {
            state.last_good.insert(directory, config.clone());
            (config, None)
        }
        Err(e) => {
            let message = format!("oomlint: {e} (the last good configuration stays in force)");
            let fresh = state.shown_errors.insert(message.clone());
            let config = state.last_good.get(&directory).cloned().unwrap_or_default();
            (config, fresh.then_some(message))
        }
    };
    (Some(config.settings_for(path, &state.settings.overrides)), error)
}

fn is_config_file(uri: &Uri) -> bool {
    let path = uri.path().as_str();
    path.ends_with("/pyproject.toml") || path.ends_with("/oomlint.toml")
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let capabilities = &params.capabilities;
        let encoding = Encoding::negotiate(capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref()));
        let pull = capabilities.text_document.as_ref().is_some_and(|t| t.diagnostic.is_some());
        let watch_files = capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .is_some_and(|w| w.dynamic_registration == Some(true));
        let settings_error = {
            let mut state = self.state();
            state.encoding = Some(encoding);
            state.pull_diagnostics = pull;
            state.watch_files = watch_files;
            match params.initialization_options.as_ref().map(|o| state.settings.updated(o)) {
                Some(Ok(settings)) => {
                    state.settings = settings;
                    None
                }
                Some(Err(e)) => Some(e),
                None => None,
            }
        };
        self.update_docs_links();
        if let Some(message) = settings_error {
            self.client.show_message(MessageType::ERROR, message).await;
        }
        let diagnostic_provider = pull.then(|| {
            DiagnosticServerCapabilities::Options(DiagnosticOptions {
                identifier: Some("oomlint".to_string()),
                inter_file_dependencies: false,
                workspace_diagnostics: false,
                work_done_progress_options: WorkDoneProgressOptions::default(),
            })
        });
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(encoding.kind()),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..TextDocumentSyncOptions::default()
                })),
                code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                    code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, CodeActionKind::new(FIX_ALL)]),
                    ..CodeActionOptions::default()
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                diagnostic_provider,
                notebook_document_sync: Some(OneOf::Left(NotebookDocumentSyncOptions {
                    notebook_selector: vec![NotebookSelector::ByCells {
                        notebook: Some(Notebook::String("jupyter-notebook".to_string())),
                        cells: vec![NotebookCellSelector { language: "python".to_string() }],
                    }],
                    save: None,
                })),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "oomlint".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Without the registration, saving a config file in the editor still reloads it.
        if !self.state().watch_files {
            return;
        }
        let watchers = ["**/pyproject.toml", "**/oomlint.toml"]
            .into_iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String(glob.to_string()), kind: None })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "oomlint-config-files".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(options).ok(),
        };
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            self.client.log_message(MessageType::WARNING, format!("cannot watch config files: {e}")).await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        let version = document.version;
        self.state().documents.insert(document.uri.clone(), Document::new(document.text, version));
        self.schedule(document.uri, version);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let version = params.text_document.version;
        let problem = {
            let mut state = self.state();
            let encoding = state.encoding.unwrap_or(Encoding::Utf16);
            match state.documents.get_mut(&uri) {
                None => Some(format!("change for a document that is not open: {}", uri.as_str())),
                Some(document) if version <= document.version => {
                    Some(format!("stale change (version {version} after {}) ignored", document.version))
                }
                Some(document) => document
                    .apply_all(&params.content_changes, encoding, version)
                    .err()
                    .map(|e| format!("edit refused for {}: {e}", uri.as_str())),
            }
        };
        if let Some(message) = problem {
            self.client.log_message(MessageType::WARNING, message).await;
        }
        self.schedule(uri, version);
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        let notebook = params.notebook_document;
        {
            let mut state = self.state();
            for cell in params.cell_text_documents {
                state.open_cell(&notebook.uri, cell);
            }
            state.notebooks.insert(notebook.uri.clone(), OpenNotebook::new(notebook.version, &notebook.cells));
        }
        self.schedule_notebook(notebook.uri);
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        let uri = params.notebook_document.uri.clone();
        let mut problems = Vec::new();
        let closed = 'apply: {
            let mut state = self.state();
            let encoding = state.encoding.unwrap_or(Encoding::Utf16);
            let Some(open) = state.notebooks.get_mut(&uri) else {
                problems.push(format!("change for a notebook that is not open: {}", uri.as_str()));
                break 'apply None;
            };
            let (opened, closed) = open.apply_structure(&params);
            for cell in opened {
                state.open_cell(&uri, cell);
            }
            for cell in &closed {
                state.close_cell(cell);
            }
            let contents = params.change.cells.as_ref().and_then(|c| c.text_content.as_ref());
            for content in contents.into_iter().flatten() {
                let Some(document) = state.documents.get_mut(&content.document.uri) else { continue };
                if let Err(e) = document.apply_all(&content.changes, encoding, content.document.version) {
                    problems.push(format!("edit refused for {}: {e}", content.document.uri.as_str()));
                }
            }
            Some(closed)
        };
        self.report_problems(problems).await;
        let Some(closed) = closed else { return };
        for cell in closed {
            self.client.publish_diagnostics(cell, Vec::new(), None).await;
        }
        self.schedule_notebook(uri);
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        let cells = {
            let mut state = self.state();
            let open = state.notebooks.remove(&params.notebook_document.uri);
            let mut cells: Vec<Uri> = params.cell_text_documents.into_iter().map(|d| d.uri).collect();
            cells.extend(open.into_iter().flat_map(|o| o.cells.into_iter().map(|(uri, _)| uri)));
            cells.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            cells.dedup();
            for cell in &cells {
                state.close_cell(cell);
            }
            cells
        };
        for cell in cells {
            self.client.publish_diagnostics(cell, Vec::new(), None).await;
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if is_config_file(&params.text_document.uri) {
            self.reload_configuration();
            self.relint_all();
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        {
            let mut state = self.state();
            state.documents.remove(&uri);
            state.results.remove(&uri);
        }
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let result = {
            let mut state = self.state();
            state.settings.updated(&params.settings).map(|settings| state.settings = settings)
        };
        match result {
            Ok(()) => {
                self.update_docs_links();
                self.relint_all();
            }
            Err(message) => self.client.show_message(MessageType::ERROR, message).await,
        }
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        if params.changes.iter().any(|c| is_config_file(&c.uri)) {
            self.reload_configuration();
            self.relint_all();
        }
    }

    async fn diagnostic(&self, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
        let items = lint(&self.client, &self.state, &params.text_document.uri, None).await.map(|(_, d)| d);
        Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
            RelatedFullDocumentDiagnosticReport {
                related_documents: None,
                full_document_diagnostic_report: FullDocumentDiagnosticReport {
                    result_id: None,
                    items: items.unwrap_or_default(),
                },
            },
        )))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let wants = |kind: &str| {
            params.context.only.as_ref().is_none_or(|only| only.iter().any(|k| kind.starts_with(k.as_str())))
        };
        let mut actions = Vec::new();
        if wants(CodeActionKind::QUICKFIX.as_str()) {
            let state = self.state();
            let Some(document) = state.documents.get(&uri) else { return Ok(None) };
            for diagnostic in params.context.diagnostics.iter().filter(|d| d.source.as_deref() == Some("oomlint")) {
                let data = diagnostic.data.clone().and_then(|d| serde_json::from_value::<FixData>(d).ok());
                if let Some(fix) = data {
                    actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: format!("oomlint: {}", fix.title),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        edit: Some(workspace_edit(&uri, fix.edits)),
                        is_preferred: Some(fix.safe),
                        ..CodeAction::default()
                    }));
                }
                if let Some(NumberOrString::String(code)) = &diagnostic.code {
                    let encoding = state.encoding.unwrap_or(Encoding::Utf16);
                    if let Some(edit) = ignore_edit(document, diagnostic.range.start.line as usize, code, encoding) {
                        actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                            title: format!("oomlint: Ignore {code} on this line"),
                            kind: Some(CodeActionKind::QUICKFIX),
                            diagnostics: Some(vec![diagnostic.clone()]),
                            edit: Some(workspace_edit(&uri, vec![edit])),
                            ..CodeAction::default()
                        }));
                    }
                }
            }
        }
        let wants_fix_all =
            params.context.only.as_ref().is_some_and(|only| only.iter().any(|k| FIX_ALL.starts_with(k.as_str())));
        if wants_fix_all {
            actions.extend(self.fix_all(&uri));
        }
        Ok(Some(actions))
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let uri = params.text_document_position_params.text_document.uri;
        let position = params.text_document_position_params.position;
        let current = {
            let state = self.state();
            let document = state.documents.get(&uri);
            document.map(|d| state.results.get(&uri).is_some_and(|(v, _)| *v == d.version))
        };
        match current {
            None => return Ok(None),
            Some(false) => {
                lint(&self.client, &self.state, &uri, None).await;
            }
            Some(true) => {}
        }
        let state = self.state();
        let (Some(document), Some((_, found))) = (state.documents.get(&uri), state.results.get(&uri)) else {
            return Ok(None);
        };
        let encoding = state.encoding.unwrap_or(Encoding::Utf16);
        let Ok(offset) = to_offset(&document.text, &document.index, position, encoding) else { return Ok(None) };
        let hits: Vec<&Diagnostic> =
            found.iter().filter(|d| d.range.start <= offset && offset <= d.range.end).collect();
        let Some(first) = hits.first() else { return Ok(None) };
        let value = hits.iter().map(|d| convert::hover_markdown(d)).collect::<Vec<_>>().join("\n\n---\n\n");
        Ok(Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
            range: Some(to_range(&document.text, &document.index, first.range.start, first.range.end, encoding)),
        }))
    }
}

impl Backend {
    /// Every safe fix in the document, as one edit of the whole text.
    fn fix_all(&self, uri: &Uri) -> Option<CodeActionOrCommand> {
        let mut state = self.state();
        let path = uri.to_file_path().map(|p| p.into_owned()).unwrap_or_else(|| PathBuf::from("untitled.py"));
        let (settings, _) = rule_settings(&mut state, &path);
        let encoding = state.encoding.unwrap_or(Encoding::Utf16);
        let document = state.documents.get(uri)?;
        let fixed = fix_source(Engine::get(), &document.text, &path, &settings?, Applicability::Safe);
        if fixed.applied == 0 {
            return None;
        }
        let whole = to_range(&document.text, &document.index, 0, document.text.len(), encoding);
        Some(CodeActionOrCommand::CodeAction(CodeAction {
            title: "oomlint: Fix all safe fixes".to_string(),
            kind: Some(CodeActionKind::new(FIX_ALL)),
            edit: Some(workspace_edit(uri, vec![TextEdit { range: whole, new_text: fixed.text }])),
            ..CodeAction::default()
        }))
    }
}

fn workspace_edit(uri: &Uri, edits: Vec<TextEdit>) -> WorkspaceEdit {
    WorkspaceEdit { changes: Some(HashMap::from([(uri.clone(), edits)])), ..WorkspaceEdit::default() }
}

/// `  # oomlint: ignore[CODE]` at the end of the line, or the code added to the line's
/// existing `# oomlint: ignore[...]`.
fn ignore_edit(document: &Document, line: usize, code: &str, encoding: Encoding) -> Option<TextEdit> {
    if line >= document.index.line_count() {
        return None;
    }
    let text = document.index.line_text(&document.text, line);
    let start = document.index.line_start(line);
    let (at, insert) = match text.find("# oomlint: ignore[").and_then(|i| text[i..].find(']').map(|j| i + j)) {
        Some(close) => (start + close, format!(", {code}")),
        None => (start + text.len(), format!("  # oomlint: ignore[{code}]")),
    };
    Some(TextEdit { range: to_range(&document.text, &document.index, at, at, encoding), new_text: insert })
}
