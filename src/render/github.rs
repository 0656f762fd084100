//! GitHub Actions workflow commands: one `::error` / `::warning` / `::notice` line per
//! finding, which GitHub shows as an annotation on the line in the pull request.

use super::LintedFile;
use crate::diagnostic::Severity;
use crate::source::LineIndex;
use std::io::{self, Write};

pub fn render(files: &[LintedFile], out: &mut dyn Write) -> io::Result<()> {
    for file in files {
        let index = LineIndex::new(&file.source);
        for (diagnostic, start, end) in file.located(&index) {
            let command = match diagnostic.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            // In a notebook a line would point into the JSON text: the annotation goes on
            // the file, and the message names the cell.
            let lines = match start.cell {
                Some(_) => String::new(),
                None => {
                    format!(",line={},col={},endLine={},endColumn={}", start.row, start.column, end.row, end.column)
                }
            };
            writeln!(
                out,
                "::{command} title={},file={}{lines}::{}",
                property(&format!("oomlint ({})", diagnostic.code)),
                property(&file.path),
                data(&format!(
                    "{}:{start}: {} {} ({})",
                    file.path, diagnostic.code, diagnostic.message, diagnostic.help
                ))
            )?;
        }
    }
    Ok(())
}

/// A command's message: `%`, CR and LF escaped so that it stays one line.
fn data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A command property: also `:` and `,`, which separate properties.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_what_would_end_the_command() {
        assert_eq!(super::data("50% of\nmemory"), "50%25 of%0Amemory");
        assert_eq!(super::property("a,b:c.py"), "a%2Cb%3Ac.py");
    }
}
