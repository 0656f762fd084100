//! What the client says about linting (`initializationOptions` and
//! `workspace/didChangeConfiguration`), under an `oomlint` key or at the top level:
//! `{"enable": true, "select": ["OOM001"], "ignore": ["OOM003"], "preview": true, "debounceMs": 0,
//! "docsUrl": "https://example.org/rules/{code}-{slug}", "snapshot": "oom_snapshot.pickle"}`.

use crate::config::{Overrides, validate_selectors};
use serde::Deserialize;
use std::time::Duration;

/// How long a change waits for the next before it is linted: not at all, by default. A
/// relint of the statements a change touched takes a few milliseconds, and the changes
/// that come while a lint runs are folded into the next pass (`Backend::schedule_target`),
/// so a burst of typing costs a lint or two without a delay; a delay would be added to
/// every keystroke's diagnostics (50 ms made them ten times slower than the lint). A
/// client may still ask for one (`debounceMs`).
const DEFAULT_DEBOUNCE: Duration = Duration::ZERO;

#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub enable: bool,
    pub overrides: Overrides,
    pub debounce: Duration,
    /// Where diagnostics link for a rule's docs (`{code}`, `{slug}`); `None`: the local copy.
    pub docs_url: Option<String>,
    /// A memory snapshot whose heaviest lines get inlay hints (`""`: none).
    pub snapshot: Option<String>,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            enable: true,
            overrides: Overrides::default(),
            debounce: DEFAULT_DEBOUNCE,
            docs_url: None,
            snapshot: None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    enable: Option<bool>,
    select: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    preview: Option<bool>,
    debounce_ms: Option<u64>,
    docs_url: Option<String>,
    snapshot: Option<String>,
}

impl ClientSettings {
    /// Read settings from a client's JSON; what it does not mention keeps `self`'s value.
    pub fn updated(&self, value: &serde_json::Value) -> Result<ClientSettings, String> {
        let value = value.get("oomlint").unwrap_or(value);
        // Lua clients send an empty table as `[]`.
        if value.is_null() || value.as_array().is_some_and(Vec::is_empty) {
            return Ok(self.clone());
        }
        let raw: Raw = serde_json::from_value(value.clone()).map_err(|e| format!("oomlint settings: {e}"))?;
        let mut next = self.clone();
        if let Some(enable) = raw.enable {
            next.enable = enable;
        }
        if let Some(select) = raw.select {
            next.overrides.select = Some(validate_selectors("select", select)?);
        }
        if let Some(ignore) = raw.ignore {
            next.overrides.ignore = validate_selectors("ignore", ignore)?;
        }
        if raw.preview.is_some() {
            next.overrides.preview = raw.preview;
        }
        if let Some(ms) = raw.debounce_ms {
            next.debounce = Duration::from_millis(ms);
        }
        if let Some(url) = raw.docs_url {
            // An empty string goes back to the local docs.
            if !url.is_empty() {
                super::rule_docs::validate_template(&url)?;
            }
            next.docs_url = Some(url).filter(|u| !u.is_empty());
        }
        if let Some(snapshot) = raw.snapshot {
            next.snapshot = Some(snapshot).filter(|s| !s.is_empty());
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_client_settings_and_keeps_what_is_unsaid() {
        let base = ClientSettings::default();
        // Changes are linted at once unless the client asks for a delay.
        assert!(base.debounce.is_zero());
        let next = base.updated(&json!({"oomlint": {"select": ["OOM00"], "debounceMs": 40}})).unwrap();
        assert_eq!(next.overrides.select, Some(vec!["OOM00".to_string()]));
        assert!(next.debounce == Duration::from_millis(40) && next.enable);
        let same = next.updated(&json!({"oomlint": []})).unwrap();
        assert_eq!(same.overrides.select, next.overrides.select, "an empty Lua table changes nothing");
        assert!(base.updated(&json!({"ignore": ["OOM999"]})).unwrap_err().contains("OOM999"));
        assert!(base.updated(&json!({"enable": "yes"})).is_err());
    }

    #[test]
    fn preview_is_left_to_the_configuration_until_the_client_sets_it() {
        let base = ClientSettings::default();
        assert_eq!(base.overrides.preview, None);
        let on = base.updated(&json!({"oomlint": {"preview": true}})).unwrap();
        assert_eq!(on.overrides.preview, Some(true));
        assert_eq!(on.updated(&json!({"select": ["OOM001"]})).unwrap().overrides.preview, Some(true));
        assert_eq!(on.updated(&json!({"preview": false})).unwrap().overrides.preview, Some(false));
        assert!(base.updated(&json!({"preview": "yes"})).is_err());
    }
}
