//! `initialize` and `initialized`: negotiate the position encoding and how diagnostics
//! travel (pushed, or pulled by clients that support it), read the client's settings, and
//! register for changes of configuration and Python files; start indexing the workspace.

use super::Backend;
use super::code_action::FIX_ALL;
use super::position::Encoding;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

impl Backend {
    pub(super) async fn on_initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
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
            state.workspace.folders = super::workspace::folders_of(&params);
            state.inlay_hint_refresh = capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.inlay_hint.as_ref())
                .is_some_and(|h| h.refresh_support == Some(true));
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
                // Another file's callers and decorators decide some findings.
                inter_file_dependencies: true,
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
                inlay_hint_provider: Some(OneOf::Left(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![super::inlay_hint::SHOW_SNAPSHOT.to_string()],
                    ..ExecuteCommandOptions::default()
                }),
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

    pub(super) async fn on_initialized(&self) {
        self.index_workspace();
        if self.state().settings.snapshot.is_some() {
            self.load_snapshot_setting().await;
        }
        // Without the registration, saving a config file in the editor still reloads it
        // (and saving a Python file still updates the index).
        if !self.state().watch_files {
            return;
        }
        let watchers = ["**/pyproject.toml", "**/oomlint.toml", "**/*.py", "**/*.ipynb"]
            .into_iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String(glob.to_string()), kind: None })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "oomlint-watched-files".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(options).ok(),
        };
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            self.client.log_message(MessageType::WARNING, format!("cannot watch files: {e}")).await;
        }
    }
}
