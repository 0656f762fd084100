//! `path:row:column: severity[CODE] message`, one line per finding.

use super::{LintedFile, Style};
use crate::source::LineIndex;
use std::io::{self, Write};

pub fn render(files: &[LintedFile], color: bool, out: &mut dyn Write) -> io::Result<()> {
    let style = Style { color };
    for file in files {
        let index = LineIndex::new(&file.source);
        for (diagnostic, start, _) in file.located(&index) {
            let label = format!("{}[{}]", diagnostic.severity, diagnostic.code);
            writeln!(
                out,
                "{}:{start}: {} {}",
                style.bold(&file.path),
                style.severity(diagnostic.severity, &label),
                diagnostic.message
            )?;
        }
    }
    Ok(())
}
