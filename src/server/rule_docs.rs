//! Links from each diagnostic to its rule's documentation (`codeDescription`). With the
//! client setting `docsUrl` (a template such as `https://example.org/rules/{code}-{slug}`)
//! the links go there; otherwise to the rule docs compiled into this binary, written once
//! to a local cache directory, so that any client can open them without a network.

use crate::rules::{RULES, Rule};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tower_lsp_server::ls_types::Uri;

/// The docs link for each rule code.
#[derive(Debug, Default, Clone)]
pub struct DocsLinks(HashMap<&'static str, Uri>);

impl DocsLinks {
    /// Links from `template` (`{code}` and `{slug}` replaced), else to the local copy.
    pub fn new(template: Option<&str>) -> DocsLinks {
        let link = |rule: &Rule| -> Option<Uri> {
            match template {
                Some(template) => expand(template, rule).parse().ok(),
                None => Uri::from_file_path(local_docs()?.join(file_name(rule))),
            }
        };
        DocsLinks(RULES.iter().filter_map(|rule| Some((rule.code, link(rule)?))).collect())
    }

    pub fn get(&self, code: &str) -> Option<&Uri> {
        self.0.get(code)
    }
}

/// Checks a `docsUrl` template: it must name the rule and give a valid URI.
pub fn validate_template(template: &str) -> Result<(), String> {
    if !template.contains("{code}") && !template.contains("{slug}") {
        return Err(format!("oomlint settings: docsUrl `{template}` names no rule (use {{code}} and/or {{slug}})"));
    }
    match expand(template, RULES[0]).parse::<Uri>() {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("oomlint settings: docsUrl `{template}` is not a valid URI: {e}")),
    }
}

fn expand(template: &str, rule: &Rule) -> String {
    template.replace("{code}", rule.code).replace("{slug}", rule.slug)
}

fn file_name(rule: &Rule) -> String {
    format!("{}-{}.md", rule.code, rule.slug)
}

/// The directory holding this version's rule docs, written on first use; `None` when no
/// cache directory is writable (then diagnostics carry no link).
fn local_docs() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join("oomlint/docs").join(env!("CARGO_PKG_VERSION"));
        match write_docs(&dir) {
            Ok(()) => Some(dir),
            Err(e) => {
                eprintln!("oomlint: cannot write the rule docs to {}: {e}", dir.display());
                None
            }
        }
    })
    .as_deref()
}

/// Writes each rule's docs where they differ, each file replaced whole.
fn write_docs(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for rule in RULES {
        let path = dir.join(file_name(rule));
        if std::fs::read_to_string(&path).is_ok_and(|text| text == rule.docs) {
            continue;
        }
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(rule.docs.as_bytes())?;
        file.persist(&path).map_err(|e| e.error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_links_every_rule_by_code_and_slug() {
        let links = DocsLinks::new(Some("https://docs.example.org/rules/{code}-{slug}/"));
        assert_eq!(
            links.get("OOM002").map(|u| u.as_str()),
            Some("https://docs.example.org/rules/OOM002-eval-without-no-grad/")
        );
        assert_eq!(links.0.len(), RULES.len());
        assert!(validate_template("https://docs.example.org/").unwrap_err().contains("names no rule"));
        assert!(validate_template("not a uri {code}").is_err());
        assert!(validate_template("https://docs.example.org/{code}").is_ok());
    }

    #[test]
    fn without_a_template_links_open_the_compiled_docs_on_disk() {
        let links = DocsLinks::new(None);
        for rule in RULES {
            let uri = links.get(rule.code).expect("a link");
            let path = uri.to_file_path().expect("a file link");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), rule.docs);
        }
    }
}
