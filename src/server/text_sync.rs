//! `textDocument/didOpen`, `didChange`, `didSave`, `didClose`: each change is applied
//! synchronously, in order, before anything awaits; a stale or malformed change is
//! logged and ignored. Linting is then scheduled in the background, and the project
//! index takes the new text after it.

use super::Backend;
use super::document::Document;
use tower_lsp_server::ls_types::*;

impl Backend {
    pub(super) async fn on_did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        // Parsed before the state is locked: a large file's parse takes tens of
        // milliseconds, which other documents' lints would wait out.
        let opened = Document::new(document.text, document.version);
        self.state().documents.insert(document.uri.clone(), opened);
        // The project index takes the text once it is linted (`schedule_target`).
        self.schedule_opened(document.uri);
    }

    pub(super) async fn on_did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let version = params.text_document.version;
        let problem = {
            let mut state = self.state();
            let encoding = state.encoding();
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

    pub(super) async fn on_did_save(&self, params: DidSaveTextDocumentParams) {
        if super::configuration::is_config_file(&params.text_document.uri) {
            self.reload_configuration();
        }
        self.reindex_open(&params.text_document.uri);
    }

    pub(super) async fn on_did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        {
            let mut state = self.state();
            state.documents.remove(&uri);
            state.results.remove(&uri);
        }
        // Closed, the file on disk is the project's again.
        if let Some(path) = uri.to_file_path() {
            self.reindex(path.into_owned());
        }
        self.client.publish_diagnostics(uri, Vec::new(), None).await;
    }
}
