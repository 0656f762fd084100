//! Each finding with a code frame: the line before for context, the flagged line with
//! the range underlined, the help text, the rule's measured cost and the fix.

use super::{LintedFile, Style};
use crate::source::LineIndex;
use std::io::{self, Write};

pub fn render(files: &[LintedFile], color: bool, out: &mut dyn Write) -> io::Result<()> {
    let style = Style { color };
    for file in files {
        let index = LineIndex::new(&file.source);
        for (diagnostic, start, end) in file.located(&index) {
            let label = format!("{}[{}]", diagnostic.severity, diagnostic.code);
            writeln!(out, "{}: {}", style.severity(diagnostic.severity, &label), style.bold(&diagnostic.message))?;
            // `line` indexes the text; `start.row` is what is shown (within the cell in a notebook).
            let line = index.line_of(diagnostic.range.start);
            let gutter = start.row.to_string().len();
            let pad = " ".repeat(gutter);
            writeln!(out, "{pad}{} {}:{start}", style.dim("-->"), file.path)?;
            writeln!(out, "{pad} {}", style.dim("|"))?;
            if start.row > 1 {
                let before = index.line_text(&file.source, line - 1);
                if !before.trim().is_empty() {
                    let shown = style.dim(&format!("{:>gutter$}", start.row - 1));
                    writeln!(out, "{shown} {} {before}", style.dim("|"))?;
                }
            }
            let text = index.line_text(&file.source, line);
            writeln!(out, "{} {} {}", style.dim(&format!("{:>gutter$}", start.row)), style.dim("|"), text)?;
            // Underline to the range's end, or to the end of the line for multi-line ranges.
            let line_chars = text.chars().count();
            let last = if (end.cell, end.row) == (start.cell, start.row) { end.column } else { line_chars + 1 };
            let width = last.saturating_sub(start.column).max(1);
            // Tabs before the range keep their width so the carets line up.
            let lead: String =
                text.chars().take(start.column - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            let carets = style.severity(diagnostic.severity, &"^".repeat(width));
            writeln!(out, "{pad} {} {lead}{carets}", style.dim("|"))?;
            writeln!(out, "{pad} {}", style.dim("|"))?;
            writeln!(out, "{pad} {} {}", style.dim("="), format_args!("help: {}", diagnostic.help))?;
            for related in &diagnostic.related {
                let place = format!("{}:{}", super::shown_path(&related.path), related.line);
                writeln!(out, "{pad} {} note: {place}: {}", style.dim("="), related.message)?;
            }
            if let Some(rule) = crate::rules::find(diagnostic.code) {
                writeln!(out, "{pad} {} cost: {}", style.dim("="), rule.measured_cost())?;
            }
            if let Some(fix) = &diagnostic.fix {
                writeln!(out, "{pad} {} fix ({}): {}", style.dim("="), fix.applicability.as_str(), fix.title)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
