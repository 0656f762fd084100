//! What the client says about linting (`initializationOptions` and
//! `workspace/didChangeConfiguration`), under an `oomlint` key or at the top level:
//! `{"enable": true, "select": ["OOM001"], "ignore": ["OOM003"], "debounceMs": 50}`.

use crate::config::{Overrides, validate_selectors};
use serde::Deserialize;
use std::time::Duration;

/// How long a change waits for the next before it is linted.
const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub struct ClientSettings {
    pub enable: bool,
    pub overrides: Overrides,
    pub debounce: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings { enable: true, overrides: Overrides::default(), debounce: DEFAULT_DEBOUNCE }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    enable: Option<bool>,
    select: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    debounce_ms: Option<u64>,
}

impl ClientSettings {
    /// Read settings from a client's JSON; what it does not mention keeps `self`'s value.
    pub fn updated(&self, value: &serde_json::Value) -> Result<ClientSettings, String> {
        let value = value.get("oomlint").unwrap_or(value);
        if value.is_null() {
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
        if let Some(ms) = raw.debounce_ms {
            next.debounce = Duration::from_millis(ms);
        }
        Ok(next)
    }
}
