//! A JSON array of findings, in file then position order. The schema is documented in
//! docs/json-output.md and is part of the public interface: add fields, never rename.

use super::{LintedFile, Place};
use crate::rules;
use crate::source::LineIndex;
use serde::Serialize;
use std::io::{self, Write};

#[derive(Serialize)]
struct JsonLocation {
    /// In a notebook: the one-based cell, and `row` counts within it.
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<usize>,
    row: usize,
    column: usize,
}

impl From<Place> for JsonLocation {
    fn from(place: Place) -> Self {
        JsonLocation { cell: place.cell, row: place.row, column: place.column }
    }
}

#[derive(Serialize)]
struct JsonEdit<'a> {
    content: &'a str,
    location: JsonLocation,
    end_location: JsonLocation,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    applicability: &'a str,
    message: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    name: &'a str,
    severity: &'a str,
    message: &'a str,
    help: &'a str,
    filename: &'a str,
    location: JsonLocation,
    end_location: JsonLocation,
    fix: Option<JsonFix<'a>>,
    /// Places in other files the finding rests on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related: Vec<JsonRelated<'a>>,
}

#[derive(Serialize)]
struct JsonRelated<'a> {
    filename: String,
    row: u32,
    message: &'a str,
}

pub fn render(files: &[LintedFile], out: &mut dyn Write) -> io::Result<()> {
    let mut all = Vec::new();
    for file in files {
        let index = LineIndex::new(&file.source);
        let at = |offset| JsonLocation::from(file.place(&index, offset));
        for (diagnostic, start, end) in file.located(&index) {
            let fix = diagnostic.fix.as_ref().map(|fix| JsonFix {
                applicability: fix.applicability.as_str(),
                message: &fix.title,
                edits: fix
                    .edits()
                    .iter()
                    .map(|e| JsonEdit {
                        content: &e.content,
                        location: at(e.range.start),
                        end_location: at(e.range.end),
                    })
                    .collect(),
            });
            all.push(JsonDiagnostic {
                code: diagnostic.code,
                name: rules::find(diagnostic.code).map_or("", |r| r.slug),
                severity: diagnostic.severity.as_str(),
                message: &diagnostic.message,
                help: &diagnostic.help,
                filename: &file.path,
                location: start.into(),
                end_location: end.into(),
                fix,
                related: diagnostic
                    .related
                    .iter()
                    .map(|r| JsonRelated { filename: super::shown_path(&r.path), row: r.line, message: &r.message })
                    .collect(),
            });
        }
    }
    serde_json::to_writer_pretty(&mut *out, &all)?;
    writeln!(out)
}
