//! LSP positions (line and character, counted in the negotiated encoding's code units)
//! to byte offsets and back. Tree-sitter speaks bytes; clients speak UTF-16 unless they
//! offer UTF-8 (or UTF-32).

use crate::source::LineIndex;
use tower_lsp_server::ls_types::{Position, PositionEncodingKind, Range};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// The best encoding both sides speak: UTF-8 when offered (no conversion), else UTF-16
    /// (which every client must support).
    pub fn negotiate(offered: Option<&[PositionEncodingKind]>) -> Encoding {
        let offered = offered.unwrap_or_default();
        if offered.contains(&PositionEncodingKind::UTF8) {
            Encoding::Utf8
        } else if offered.is_empty() || offered.contains(&PositionEncodingKind::UTF16) {
            Encoding::Utf16
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            Encoding::Utf32
        } else {
            Encoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
            Encoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    pub fn units(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
            Encoding::Utf32 => 1,
        }
    }
}

/// Byte offset → position.
pub fn to_position(text: &str, index: &LineIndex, offset: usize, encoding: Encoding) -> Position {
    let line = index.line_of(offset);
    let character: usize = text[index.line_start(line)..offset].chars().map(|c| encoding.units(c)).sum();
    Position { line: line as u32, character: character as u32 }
}

pub fn to_range(text: &str, index: &LineIndex, start: usize, end: usize, encoding: Encoding) -> Range {
    Range { start: to_position(text, index, start, encoding), end: to_position(text, index, end, encoding) }
}

/// Position → byte offset. A character past the end of its line means the line's end (as
/// the protocol says); a line past the end of the text is an error.
pub fn to_offset(text: &str, index: &LineIndex, position: Position, encoding: Encoding) -> Result<usize, String> {
    let line = position.line as usize;
    if line >= index.line_count() {
        return Err(format!("line {line} is past the end of the document ({} lines)", index.line_count()));
    }
    let start = index.line_start(line);
    let mut units = 0;
    for (i, c) in index.line_text(text, line).char_indices() {
        if units >= position.character as usize {
            return Ok(start + i);
        }
        units += encoding.units(c);
    }
    Ok(start + index.line_text(text, line).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_in_every_encoding() {
        let text = "a = 1\r\nb = 'é😀' + x\n";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        let at = |encoding| to_position(text, &index, x, encoding);
        assert_eq!(at(Encoding::Utf8), Position { line: 1, character: 15 });
        assert_eq!(at(Encoding::Utf16), Position { line: 1, character: 12 });
        assert_eq!(at(Encoding::Utf32), Position { line: 1, character: 11 });
        for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
            assert_eq!(to_offset(text, &index, at(encoding), encoding), Ok(x));
        }
        assert_eq!(to_offset(text, &index, Position { line: 0, character: 99 }, Encoding::Utf16), Ok(5));
        assert_eq!(to_offset(text, &index, Position { line: 2, character: 0 }, Encoding::Utf16), Ok(text.len()));
        assert!(to_offset(text, &index, Position { line: 7, character: 0 }, Encoding::Utf16).is_err());
    }
}
