//! SARIF 2.1.0, as GitHub code scanning and other CI systems read it: every rule with its
//! docs and measured cost, and each finding with its location and, where there is one,
//! its fix. Columns count Unicode characters (`columnKind: unicodeCodePoints`), as in the
//! other formats; relative paths resolve against `%SRCROOT%`, the working directory.

use super::{LintedFile, Place};
use crate::diagnostic::Severity;
use crate::rules::RULES;
use crate::source::LineIndex;
use serde_json::{Value, json};
use std::io::{self, Write};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn render(files: &[LintedFile], out: &mut dyn Write) -> io::Result<()> {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|rule| {
            json!({
                "id": rule.code,
                "name": rule.slug,
                "shortDescription": { "text": rule.summary },
                "fullDescription": { "text": rule.docs_section("## What it does").unwrap_or(rule.summary) },
                "help": { "text": rule.fix_title, "markdown": rule.docs },
                "defaultConfiguration": { "level": level(rule.default_severity) },
                "properties": { "measuredCost": rule.measured_cost(), "tags": ["memory", "pytorch"] },
            })
        })
        .collect();
    let mut results = Vec::new();
    for file in files {
        let index = LineIndex::new(&file.source);
        let at = |offset| file.place(&index, offset);
        for (diagnostic, start, end) in file.located(&index) {
            let artifact = artifact_location(&file.path);
            let mut result = json!({
                "ruleId": diagnostic.code,
                "ruleIndex": RULES.iter().position(|r| r.code == diagnostic.code),
                "level": level(diagnostic.severity),
                "message": { "text": format!("{}{} ({})", cell_prefix(start), diagnostic.message, diagnostic.help) },
                "locations": [{
                    "physicalLocation": { "artifactLocation": artifact.clone(), "region": region(start, end) }
                }],
            });
            // SARIF has no notebook cells: a region would point at a line of the JSON
            // text. A notebook's findings name the file, and the message the cell.
            if start.cell.is_some() {
                result["locations"][0]["physicalLocation"] = json!({ "artifactLocation": artifact });
                result["properties"] = json!({ "notebookCell": start.cell, "line": start.row, "column": start.column });
                results.push(result);
                continue;
            }
            if let Some(fix) = &diagnostic.fix {
                let replacements: Vec<Value> = fix
                    .edits()
                    .iter()
                    .map(|edit| {
                        json!({
                            "deletedRegion": region(at(edit.range.start), at(edit.range.end)),
                            "insertedContent": { "text": edit.content },
                        })
                    })
                    .collect();
                result["fixes"] = json!([{
                    "description": { "text": format!("{} ({} fix)", fix.title, fix.applicability.as_str()) },
                    "artifactChanges": [{ "artifactLocation": artifact, "replacements": replacements }],
                }]);
            }
            results.push(result);
        }
    }
    let cwd = std::env::current_dir().ok().map(|d| format!("file://{}/", encode_path(&d.to_string_lossy())));
    let mut run = json!({
        "tool": {
            "driver": {
                "name": "oomlint",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if let Some(cwd) = cwd {
        run["originalUriBaseIds"] = json!({ "%SRCROOT%": { "uri": cwd } });
    }
    let log = json!({ "$schema": SCHEMA, "version": "2.1.0", "runs": [run] });
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// SARIF regions: one-based lines and columns, the end column exclusive.
fn region(start: Place, end: Place) -> Value {
    json!({ "startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column })
}

/// `cell 3, line 4: ` in a notebook, nothing in a Python file.
fn cell_prefix(place: Place) -> String {
    place.cell.map(|cell| format!("cell {cell}, line {}: ", place.row)).unwrap_or_default()
}

/// A relative path against `%SRCROOT%`; an absolute one as a `file` URI.
fn artifact_location(path: &str) -> Value {
    if path.starts_with('/') {
        json!({ "uri": format!("file://{}", encode_path(path)) })
    } else {
        json!({ "uri": encode_path(path), "uriBaseId": "%SRCROOT%" })
    }
}

/// Percent-encodes what a URI path cannot hold as is.
fn encode_path(path: &str) -> String {
    let mut encoded = String::new();
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => encoded.push(byte as char),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(artifact_location("src/my train.py")["uri"], "src/my%20train.py");
        assert_eq!(artifact_location("src/my train.py")["uriBaseId"], "%SRCROOT%");
        assert_eq!(artifact_location("/abs/é.py")["uri"], "file:///abs/%C3%A9.py");
    }
}
