//! The oomlint findings on the lines that held memory: a snapshot names the line that
//! kept the memory, a finding says why it was kept.

use super::model::Frame;
use super::report::LineUse;
use crate::config::{ConfigResolver, Overrides};
use crate::engine::Engine;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A finding on a line of a stack that held memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFinding {
    pub code: &'static str,
    /// The file as the snapshot names it, and the 1-based line of the finding.
    pub file: String,
    pub line: u32,
    pub message: String,
}

/// Where a snapshot's file is on disk: as written, or relative to one of `roots` (the
/// profiler writes paths relative to the script's directory). `None` when not found.
pub fn locate(file: &str, roots: &[PathBuf]) -> Option<PathBuf> {
    let path = Path::new(file);
    if path.is_absolute() {
        return path.is_file().then(|| path.to_path_buf());
    }
    roots.iter().map(|root| root.join(path)).find(|p| p.is_file())
}

/// A file's findings `(line, code, message)` and its lines.
type Linted = (Vec<(u32, &'static str, String)>, Vec<String>);

/// For each line (by its index in `lines`), the findings on it or on the lines of its
/// callers. Every file is linted once, with the preview rules on (they are the ones
/// about memory kept alive) unless the configuration turns preview off. With
/// `whole_functions` (profiler snapshots, whose frames give each function's `def` line)
/// a finding anywhere in the function counts.
pub fn findings_on(lines: &[LineUse], roots: &[PathBuf], whole_functions: bool) -> Vec<Vec<LineFinding>> {
    let mut linted: HashMap<String, Linted> = HashMap::new();
    let mut resolver = ConfigResolver::new(None).ok();
    let mut lint = |file: &str| -> Linted {
        let Some(path) = locate(file, roots) else { return Default::default() };
        let Ok(text) = std::fs::read_to_string(&path) else { return Default::default() };
        let overrides = Overrides { preview: Some(true), ..Overrides::default() };
        let settings = match resolver.as_mut().map(|r| r.for_file(&path)) {
            Some(Ok((config, absolute))) => config.settings_for(&absolute, &overrides),
            _ => crate::engine::RuleSettings::default(),
        };
        let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let findings = Engine::get()
            .lint(&text, &path, &settings)
            .diagnostics
            .into_iter()
            .map(|d| {
                let line = starts.partition_point(|&s| s <= d.range.start) as u32;
                (line, d.code, d.message)
            })
            .collect();
        (findings, text.lines().map(str::to_string).collect())
    };
    lines
        .iter()
        .map(|l| {
            let here = Frame { file: l.file.clone(), line: l.line, function: l.function.clone() };
            let mut found = Vec::new();
            for frame in std::iter::once(&here).chain(&l.callers) {
                let (findings, text) = linted.entry(frame.file.clone()).or_insert_with(|| lint(&frame.file));
                let last = if whole_functions { function_end(text, frame.line) } else { frame.line };
                for (line, code, message) in findings.iter() {
                    if (frame.line..=last).contains(line) {
                        found.push(LineFinding {
                            code,
                            file: frame.file.clone(),
                            line: *line,
                            message: message.clone(),
                        });
                    }
                }
            }
            found
        })
        .collect()
}

/// The last line of the function whose `def` is on `line` (1-based): the lines after it
/// that are blank or indented deeper. `line` itself when it is not a `def`.
fn function_end(lines: &[String], line: u32) -> u32 {
    let Some(def) = lines.get(line as usize - 1) else { return line };
    let trimmed = def.trim_start();
    if !(trimmed.starts_with("def ") || trimmed.starts_with("async def ")) {
        return line;
    }
    let indent = def.len() - trimmed.len();
    let mut last = line;
    for (i, text) in lines.iter().enumerate().skip(line as usize) {
        let body = text.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        if text.len() - body.len() <= indent && !body.starts_with(')') {
            break;
        }
        last = i as u32 + 1;
    }
    last
}

#[cfg(test)]
mod tests {
    use super::function_end;

    #[test]
    fn a_function_ends_where_its_indentation_does() {
        let text: Vec<String> = "def f(x):\n    y = x\n\n    return y\n\nz = 1\n".lines().map(str::to_string).collect();
        assert_eq!(function_end(&text, 1), 4);
        assert_eq!(function_end(&text, 6), 6);
    }
}
