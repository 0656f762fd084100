//! Text positions: byte offsets (what tree-sitter speaks) to one-based rows and
//! character columns (what people and the JSON output read).

/// Start offset of every line, computed once per file.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

/// A one-based row and one-based column counted in Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub row: usize,
    pub column: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { line_starts }
    }

    /// Zero-based line containing `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts[line]
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The text of zero-based `line`, without its line ending.
    pub fn line_text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let start = self.line_starts[line];
        let end = self.line_starts.get(line + 1).copied().unwrap_or(text.len());
        text[start..end].trim_end_matches(['\n', '\r'])
    }

    pub fn location(&self, text: &str, offset: usize) -> Location {
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let column = text[start..offset].chars().count() + 1;
        Location { row: line + 1, column }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        let text = "a = 1\nprint('é', x)\r\nlast";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(index.location(text, x), Location { row: 2, column: 12 });
        assert_eq!(index.line_text(text, 1), "print('é', x)");
        assert_eq!(index.location(text, text.len()), Location { row: 3, column: 5 });
        assert_eq!(index.line_text(text, 2), "last");
    }
}
