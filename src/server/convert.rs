//! oomlint's findings and fixes in LSP terms. A diagnostic carries its fix's edits in
//! `data`, computed with the finding, so the quick fix is exactly what the user saw.

use super::position::{Encoding, to_range};
use super::rule_docs::DocsLinks;
use crate::diagnostic::{Diagnostic, Severity};
use crate::fix::{Applicability, Fix};
use crate::rules;
use crate::source::LineIndex;
use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{self as lsp, NumberOrString, TextEdit};

/// What `Diagnostic.data` holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FixData {
    pub title: String,
    pub safe: bool,
    pub edits: Vec<TextEdit>,
}

pub fn fix_data(text: &str, index: &LineIndex, fix: &Fix, encoding: Encoding) -> Option<FixData> {
    if fix.applicability == Applicability::DisplayOnly {
        return None;
    }
    let line_ending = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let edits = fix
        .edits()
        .iter()
        .map(|e| TextEdit {
            range: to_range(text, index, e.range.start, e.range.end, encoding),
            new_text: e.content.replace('\n', line_ending),
        })
        .collect();
    Some(FixData { title: fix.title.clone(), safe: fix.applicability == Applicability::Safe, edits })
}

pub fn diagnostic(
    text: &str,
    index: &LineIndex,
    found: &Diagnostic,
    encoding: Encoding,
    docs: &DocsLinks,
) -> lsp::Diagnostic {
    let severity = match found.severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    };
    let deprecated = rules::find(found.code).is_some_and(|rule| rule.flags_deprecated_api());
    let tags = deprecated.then(|| vec![lsp::DiagnosticTag::DEPRECATED]);
    let data = found.fix.as_ref().and_then(|f| fix_data(text, index, f, encoding));
    lsp::Diagnostic {
        range: to_range(text, index, found.range.start, found.range.end, encoding),
        severity: Some(severity),
        code: Some(NumberOrString::String(found.code.to_string())),
        code_description: docs.get(found.code).map(|href| lsp::CodeDescription { href: href.clone() }),
        source: Some("oomlint".to_string()),
        message: format!("{} ({})", found.message, found.help),
        related_information: related_information(found),
        tags,
        data: data.and_then(|d| serde_json::to_value(d).ok()),
    }
}

/// The places in other files a finding rests on, as LSP locations (the whole line).
fn related_information(found: &Diagnostic) -> Option<Vec<lsp::DiagnosticRelatedInformation>> {
    let places: Vec<lsp::DiagnosticRelatedInformation> = found
        .related
        .iter()
        .filter_map(|related| {
            let uri = lsp::Uri::from_file_path(&related.path)?;
            let line = related.line.saturating_sub(1);
            let range = lsp::Range::new(lsp::Position::new(line, 0), lsp::Position::new(line + 1, 0));
            Some(lsp::DiagnosticRelatedInformation {
                location: lsp::Location { uri, range },
                message: related.message.clone(),
            })
        })
        .collect();
    (!places.is_empty()).then_some(places)
}

/// Hover text for a finding: what the rule finds, this finding, its measured cost, and
/// the fix.
pub fn hover_markdown(found: &Diagnostic) -> String {
    let Some(rule) = rules::find(found.code) else { return found.message.clone() };
    let mut text = format!("**{} {}**: {}\n\n{}\n\n", rule.code, rule.slug, rule.summary, found.message);
    if let Some(why) = rule.docs_section("## Why is this bad?") {
        text.push_str(&format!("{why}\n\n"));
    }
    text.push_str(&format!("**Measured cost**: {}\n\n**Fix**: {}", rule.measured_cost(), found.help));
    if let Some(fix) = &found.fix {
        text.push_str(&format!(" ({} fix available: {})", fix.applicability.as_str(), fix.title));
    }
    text
}
