//! Text positions: byte offsets (what tree-sitter speaks) to one-based rows and
//! character columns (what people and the JSON output read), and line endings: Python
//! ends a line at `\n`, `\r\n` or a lone `\r`.

use std::borrow::Cow;

/// A file's text without the byte-order mark it may open with: the code the engine lints
/// and the project index reads.
pub fn without_byte_order_mark(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The text with every lone `\r` (one not followed by `\n`) written as `\n`: the same
/// length and offsets, with the lines Python sees. tree-sitter-python ends lines only at
/// `\n`, so it is handed this (a file with `\r` endings would otherwise be one line).
pub fn lone_carriage_returns_as_newlines(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let lone = |i: usize| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n');
    // Asked of every version of an open document: most texts have no `\r`, which one
    // search (`memchr`) tells faster than a test of each byte.
    if !text.contains('\r') || !(0..bytes.len()).any(lone) {
        return Cow::Borrowed(text);
    }
    let mut out = bytes.to_vec();
    for (i, byte) in out.iter_mut().enumerate() {
        if lone(i) {
            *byte = b'\n';
        }
    }
    Cow::Owned(String::from_utf8(out).expect("one ASCII byte replaced by another keeps UTF-8 valid"))
}

/// The line ending new lines get: the file's most common one (`\n` in a file without any).
pub fn dominant_line_ending(text: &str) -> &'static str {
    let bytes = text.as_bytes();
    let (mut lf, mut crlf, mut cr) = (0usize, 0usize, 0usize);
    for (i, &byte) in bytes.iter().enumerate() {
        match byte {
            b'\n' if i > 0 && bytes[i - 1] == b'\r' => crlf += 1,
            b'\n' => lf += 1,
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => cr += 1,
            _ => {}
        }
    }
    if crlf > lf && crlf >= cr {
        "\r\n"
    } else if cr > lf && cr > crlf {
        "\r"
    } else {
        "\n"
    }
}

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
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        for (i, &byte) in bytes.iter().enumerate() {
            if byte == b'\n' || byte == b'\r' && bytes.get(i + 1) != Some(&b'\n') {
                line_starts.push(i + 1);
            }
        }
        LineIndex { line_starts }
    }

    /// The index after the bytes `start..old_end` were replaced by `start..new_end` of
    /// `text` (the new text): only the lines the edit touches are scanned again, so an
    /// edit to a large document costs little more than the edit.
    pub fn edit(&mut self, text: &str, start: usize, old_end: usize, new_end: usize) {
        let bytes = text.as_bytes();
        // A line start depends on the byte before it and, after a `\r`, on its own byte.
        let first = start.max(1);
        let keep = self.line_starts.partition_point(|&s| s < first);
        let tail = self.line_starts.partition_point(|&s| s <= old_end + 1);
        let rescanned: Vec<usize> = (first - 1..(new_end + 1).min(bytes.len()))
            .filter(|&i| bytes[i] == b'\n' || bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
            .map(|i| i + 1)
            .collect();
        let added = rescanned.len();
        self.line_starts.splice(keep..tail, rescanned);
        for s in &mut self.line_starts[keep + added..] {
            *s = *s + new_end - old_end;
        }
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

    /// Where `offset` is as tree-sitter counts it: zero-based row, column in bytes.
    pub fn point(&self, offset: usize) -> tree_sitter::Point {
        let row = self.line_of(offset);
        tree_sitter::Point { row, column: offset - self.line_start(row) }
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

    #[test]
    fn an_edited_index_equals_a_fresh_one() {
        let texts = ["a\nb\r\nc\rd\n", "\r\n\r\n", "x", "\n\n\r\r\n"];
        let inserts = ["", "\n", "\r", "z\r\nq\n", "\r\n"];
        for text in texts {
            for start in 0..=text.len() {
                for old_end in start..=text.len() {
                    for insert in inserts {
                        let mut new = text.to_string();
                        new.replace_range(start..old_end, insert);
                        let mut index = LineIndex::new(text);
                        index.edit(&new, start, old_end, start + insert.len());
                        assert_eq!(
                            index.line_starts,
                            LineIndex::new(&new).line_starts,
                            "{text:?} {start}..{old_end} {insert:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line() {
        let text = "a = 1\rb = 2\r\r\nc";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        assert_eq!(index.line_text(text, 1), "b = 2");
        assert_eq!(index.line_text(text, 2), "");
        assert_eq!(index.location(text, text.find('c').unwrap()), Location { row: 4, column: 1 });
        assert_eq!(lone_carriage_returns_as_newlines(text), "a = 1\nb = 2\n\r\nc");
        assert!(matches!(lone_carriage_returns_as_newlines("a\r\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn new_lines_follow_the_most_common_ending() {
        assert_eq!(dominant_line_ending("a\rb\rc\r\n"), "\r");
        assert_eq!(dominant_line_ending("a\r\nb\r\nc\n"), "\r\n");
        assert_eq!(dominant_line_ending("a\nb"), "\n");
        assert_eq!(dominant_line_ending("one line"), "\n");
    }
}
