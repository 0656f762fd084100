//! Where each cell's `source` value is written in a notebook's JSON text, so a fixed cell
//! can be spliced in while every other byte (outputs, metadata, key order, indentation)
//! stays as it was. A JSON parser that keeps no spans cannot do that; this scanner only
//! finds spans and leaves validation to `serde_json`, which has already read the text.

use std::ops::Range;

/// The span of `cells[i].source` for each cell (`None` for a cell without one).
pub fn source_spans(raw: &str) -> Result<Vec<Option<Range<usize>>>, String> {
    let mut scanner = Scanner { bytes: raw.as_bytes(), at: 0 };
    let mut spans = Vec::new();
    scanner.object(|scanner, key| {
        if key != "cells" {
            return scanner.value();
        }
        scanner.array(|scanner| {
            let mut span = None;
            if scanner.peek() == Some(b'{') {
                scanner.object(|scanner, key| {
                    let start = scanner.at;
                    scanner.value()?;
                    if key == "source" {
                        span = Some(start..scanner.at);
                    }
                    Ok(())
                })?;
            } else {
                scanner.value()?;
            }
            spans.push(span);
            Ok(())
        })
    })?;
    Ok(spans)
}

/// The span of each string in `array` (a JSON array of strings).
pub fn string_spans(array: &str) -> Result<Vec<Range<usize>>, String> {
    let mut scanner = Scanner { bytes: array.as_bytes(), at: 0 };
    let mut spans = Vec::new();
    scanner.array(|scanner| {
        let start = scanner.at;
        scanner.string()?;
        spans.push(start..scanner.at);
        Ok(())
    })?;
    Ok(spans)
}

struct Scanner<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl Scanner<'_> {
    fn skip_blanks(&mut self) {
        while self.bytes.get(self.at).is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_blanks();
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        match self.peek() {
            Some(b) if b == byte => {
                self.at += 1;
                Ok(())
            }
            _ => Err(format!("expected `{}` at byte {}", byte as char, self.at)),
        }
    }

    /// An object, calling `member` with the scanner before each member's value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &str) -> Result<(), String>) -> Result<(), String> {
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            self.skip_blanks();
            member(self, &key)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(format!("expected `,` or `}}` at byte {}", self.at)),
            }
        }
    }

    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Result<(), String>) -> Result<(), String> {
        self.expect(b'[')?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.skip_blanks();
            element(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(format!("expected `,` or `]` at byte {}", self.at)),
            }
        }
    }

    /// A string, decoded.
    fn string(&mut self) -> Result<String, String> {
        self.skip_blanks();
        let start = self.at;
        self.expect(b'"')?;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            match b {
                b'\\' => self.at += 1,
                b'"' => {
                    let text = std::str::from_utf8(&self.bytes[start..self.at]).map_err(|e| e.to_string())?;
                    return serde_json::from_str(text).map_err(|e| e.to_string());
                }
                _ => {}
            }
        }
        Err("unterminated string".into())
    }

    /// Any value, skipped.
    fn value(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'{') => self.object(|scanner, _| scanner.value()),
            Some(b'[') => self.array(|scanner| scanner.value()),
            Some(b'"') => self.string().map(drop),
            Some(_) => {
                let start = self.at;
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                if self.at == start { Err(format!("expected a value at byte {start}")) } else { Ok(()) }
            }
            None => Err("unexpected end of the notebook".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_cells_source_and_nothing_else() {
        let raw = r##"{"metadata": {"source": 1}, "cells": [
 {"cell_type": "markdown", "source": "# Title"},
 {"source": ["a = \"]\"\n", "b"], "outputs": [{"text": ["source"]}]},
 {"cell_type": "raw"}
], "nbformat": 4}"##;
        let spans = source_spans(raw).unwrap();
        assert_eq!(spans.len(), 3);
        assert_eq!(&raw[spans[0].clone().unwrap()], "\"# Title\"");
        assert_eq!(&raw[spans[1].clone().unwrap()], r#"["a = \"]\"\n", "b"]"#);
        assert_eq!(spans[2], None);
    }

    #[test]
    fn truncated_text_is_an_error() {
        assert!(source_spans(r#"{"cells": [{"source": ["a"#).is_err());
    }
}
