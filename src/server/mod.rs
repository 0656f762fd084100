//! `oomlint server`: a language server over stdio on the same lint entry point
//! (`crate::lint`) and fix model as `oomlint check`. This module only routes each LSP
//! message to its handler, one file per request or notification family:
//!
//! - `initialize`: capabilities, position encoding, client settings, file watchers;
//! - `text_sync`, `notebook_sync`: open, change, save and close of files and notebooks;
//! - `configuration`: client settings and configuration files changing;
//! - `diagnostics`: linting in the background, pushed or pulled findings;
//! - `code_action`: quick fixes, "ignore on this line", fix-all; `hover`: rule and cost;
//! - `workspace`: the project index of the workspace folders, kept current;
//! - `inlay_hint`: a memory snapshot's heaviest lines, as inlay hints and hovers.
//!
//! Document state changes synchronously and in order inside the notification handlers
//! (nothing awaits before the change is applied); linting runs in the background per
//! (document, version), debounced, and a result for a version that is no longer current
//! is dropped.

mod background;
mod code_action;
mod configuration;
mod convert;
mod diagnostics;
mod document;
#[cfg(test)]
mod edit_sequences;
mod hover;
mod incremental;
mod initialize;
mod inlay_hint;
mod notebook_sync;
mod position;
mod rule_docs;
mod settings;
mod state;
mod text_sync;
mod transport;
mod workspace;

use state::State;
use std::sync::{Arc, Mutex, MutexGuard};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

pub fn run() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let lifecycle = Arc::new(transport::Lifecycle::default());
    let output = transport::SharedOutput(Arc::new(Mutex::new(std::io::stdout())));
    runtime.block_on(async {
        let (service, socket) = LspService::new(Backend::new);
        // The framework reads only the frames the transport found well-formed.
        let (forwarded, framework_input) = transport::ForwardedFrames::channel();
        let (seen, replies) = (lifecycle.clone(), output.clone());
        std::thread::spawn(move || transport::forward(std::io::stdin().lock(), forwarded, &seen, &replies));
        Server::new(framework_input, output, socket).serve(service).await;
    });
    // Do not wait for the thread blocked reading stdin: the client may keep it open.
    std::process::exit(lifecycle.exit_code())
}

/// Build the service, for embedding and for in-process tests.
pub fn service() -> (LspService<Backend>, tower_lsp_server::ClientSocket) {
    LspService::new(Backend::new)
}

pub struct Backend {
    client: Client,
    state: Arc<Mutex<State>>,
}

impl Backend {
    fn new(client: Client) -> Backend {
        Backend { client, state: Arc::new(Mutex::new(State::default())) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        state::lock(&self.state)
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        self.on_initialize(params).await
    }

    async fn initialized(&self, _: InitializedParams) {
        self.on_initialized().await
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.on_did_open(params).await
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.on_did_change(params).await
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.on_did_save(params).await
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.on_did_close(params).await
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        self.on_notebook_did_open(params).await
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        self.on_notebook_did_change(params).await
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        self.on_notebook_did_close(params).await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.on_did_change_configuration(params).await
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.on_did_change_watched_files(params).await
    }

    async fn diagnostic(&self, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
        self.pull_diagnostics(params).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.on_code_action(params).await
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.on_hover(params).await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.on_inlay_hint(params).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        self.on_execute_command(params).await
    }
}
