//! Settings and configuration files: `workspace/didChangeConfiguration` (client
//! settings), `workspace/didChangeWatchedFiles` and saves of `pyproject.toml` /
//! `oomlint.toml`. Any change relints every open document.

use super::Backend;
use super::rule_docs::DocsLinks;
use std::sync::Arc;
use tower_lsp_server::ls_types::*;

pub fn is_config_file(uri: &Uri) -> bool {
    let path = uri.path().as_str();
    path.ends_with("/pyproject.toml") || path.ends_with("/oomlint.toml")
}

impl Backend {
    pub(super) async fn on_did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let result = {
            let mut state = self.state();
            let before = state.settings.snapshot.clone();
            state.settings.updated(&params.settings).map(|settings| {
                let snapshot_changed = settings.snapshot != before;
                state.settings = settings;
                // New settings may select preview rules anew: their warning is shown again.
                state.shown_errors.clear();
                snapshot_changed
            })
        };
        match result {
            Ok(snapshot_changed) => {
                self.update_docs_links();
                self.relint_all();
                if snapshot_changed {
                    self.load_snapshot_setting().await;
                }
            }
            Err(message) => self.client.show_message(MessageType::ERROR, message).await,
        }
    }

    pub(super) async fn on_did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        if params.changes.iter().any(|c| is_config_file(&c.uri)) {
            self.reload_configuration();
        }
        self.reindex_watched(&params.changes);
    }

    /// Load the snapshot the `snapshot` setting names (relative to the first workspace
    /// folder), or forget the one shown when the setting is empty.
    pub(super) async fn load_snapshot_setting(&self) {
        let (setting, folder) = {
            let state = self.state();
            (state.settings.snapshot.clone(), state.workspace.folders.first().cloned())
        };
        let path = setting.map(|s| folder.map(|f| f.join(&s)).unwrap_or_else(|| s.into()));
        if let Err(message) = self.show_snapshot(path).await {
            self.client.show_message(MessageType::ERROR, format!("oomlint: {message}")).await;
        }
    }

    /// Rebuild the rule docs links from the client's `docsUrl` (or the local copy).
    pub(super) fn update_docs_links(&self) {
        let mut state = self.state();
        state.docs_links = Arc::new(DocsLinks::new(state.settings.docs_url.as_deref()));
    }

    /// Re-read the configuration files (a broken one is reported and the last good one
    /// kept) and relint.
    pub(super) fn reload_configuration(&self) {
        self.state().reload_configuration();
        self.relint_all();
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
}
