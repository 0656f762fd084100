//! Jupyter notebooks: the code cells are joined in order (so a model defined in one cell
//! is known in the next) with IPython lines masked, linted as one Python file, and
//! findings are reported by cell and line within the cell. Fixing rewrites only the
//! `source` of the cells that changed and leaves every other byte of the notebook as it
//! was: outputs, metadata, key order and indentation.

mod json_spans;
mod magics;

use crate::diagnostic::{Diagnostic, TextRange};
use crate::source::{LineIndex, Location};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;

/// Ends each cell in the joined text: a comment no notebook writes, so fixes never
/// touch it and the fixed text splits back into the same cells.
const CELL_END: &str = "#\u{2}\n";

/// A Jupyter notebook file: its JSON text and its code cells.
#[derive(Debug)]
pub struct Notebook {
    raw: String,
    /// The code cells that are Python, joined: what the engine lints.
    pub cells: Cells,
    /// Where each cell of `cells` has its `source` value in `raw`, in the same order.
    spans: Vec<Range<usize>>,
    /// Why the notebook is not linted (a kernel in another language).
    pub skipped: Option<String>,
}

/// Code cells joined in order, IPython lines masked, so that they lint as one file: the
/// cells of a notebook file, or those an editor holds.
#[derive(Debug, Default)]
pub struct Cells {
    cells: Vec<CodeCell>,
    /// The cells joined, IPython lines masked: what the engine lints.
    pub source: String,
}

#[derive(Debug)]
struct CodeCell {
    /// One-based position among all cells (markdown included in a notebook file; among
    /// the texts given to `Cells::from_texts`).
    number: usize,
    /// Where the cell starts in the joined source.
    start: usize,
    text: String,
    magics: Vec<String>,
}

/// Where each cell starts in a joined text, for reporting positions within cells.
#[derive(Debug, Clone, Default)]
pub struct CellIndex {
    /// (offset in the joined text, one-based cell number), in order.
    starts: Vec<(usize, usize)>,
}

impl CellIndex {
    /// The cell holding `offset` and the position inside it (one-based row and column).
    pub fn locate(&self, source: &str, index: &LineIndex, offset: usize) -> (usize, Location) {
        let at = self.starts.partition_point(|&(start, _)| start <= offset).saturating_sub(1);
        let (start, number) = self.starts.get(at).copied().unwrap_or((0, 1));
        let location = index.location(source, offset);
        (number, Location { row: location.row - index.line_of(start), column: location.column })
    }
}

impl Notebook {
    pub fn parse(raw: &str) -> Result<Notebook, String> {
        let value: Value = serde_json::from_str(raw).map_err(|e| format!("not a valid notebook: {e}"))?;
        let format = value.get("nbformat").and_then(Value::as_u64);
        let cells_value = match (value.get("cells").and_then(Value::as_array), format) {
            (Some(cells), _) => cells,
            (None, Some(major)) if major < 4 => {
                return Err(format!(
                    "nbformat {major} notebooks are not supported (convert with `jupyter nbconvert --to notebook`)"
                ));
            }
            _ => return Err("not a valid notebook: no `cells` list".into()),
        };
        let skipped = kernel_language(&value)
            .filter(|language| !language.eq_ignore_ascii_case("python"))
            .map(|language| format!("not linted: the notebook's kernel runs {language}, not Python"));
        let json_spans = json_spans::source_spans(raw).map_err(|e| format!("not a valid notebook: {e}"))?;
        let mut cells = Cells::default();
        let mut spans = Vec::new();
        for (at, cell) in cells_value.iter().enumerate() {
            if cell.get("cell_type").and_then(Value::as_str) != Some("code") {
                continue;
            }
            let text = match cell.get("source") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(lines)) => lines
                    .iter()
                    .map(|line| line.as_str().ok_or_else(|| format!("cell {}: a source line is not a string", at + 1)))
                    .collect::<Result<String, String>>()?,
                _ => return Err(format!("not a valid notebook: cell {} has no source", at + 1)),
            };
            let span = json_spans.get(at).cloned().flatten().ok_or("not a valid notebook: cells out of step")?;
            if cells.push(at + 1, text) {
                spans.push(span);
            }
        }
        Ok(Notebook { raw: raw.to_string(), cells, spans, skipped })
    }

    /// The notebook with its cells replaced by those of `fixed` (the joined text after
    /// fixing): only changed cells' `source` values are rewritten.
    pub fn with_fixed_source(&self, fixed: &str) -> Result<String, String> {
        let changed = self.cells.changed(fixed)?;
        let style = ListStyle::of_notebook(&self.raw, &self.spans);
        let mut raw = self.raw.clone();
        for (at, new_text) in changed.into_iter().rev() {
            let span = self.spans[at].clone();
            let encoded = encode_source(&new_text, &self.raw[span.clone()], &style);
            raw.replace_range(span, &encoded);
        }
        serde_json::from_str::<Value>(&raw).map_err(|e| format!("the fixed notebook would not be valid JSON: {e}"))?;
        Ok(raw)
    }
}

impl Cells {
    /// Cells an editor holds (their texts in notebook order), joined as a notebook
    /// file's are; a cell that is not Python (`%%bash`) is left out.
    pub fn from_texts(texts: &[&str]) -> Cells {
        let mut cells = Cells::default();
        for (at, text) in texts.iter().enumerate() {
            cells.push(at + 1, text.to_string());
        }
        cells
    }

    /// Join one more cell, masked; `false` when it is not Python and was left out.
    fn push(&mut self, number: usize, text: String) -> bool {
        // A cell run by `%%bash` and the like is not Python: not linted, never rewritten.
        let Some(masked) = magics::mask(&text) else { return false };
        let start = self.source.len();
        push_cell(&mut self.source, &masked.text);
        self.cells.push(CodeCell { number, start, text, magics: masked.magics });
        true
    }

    /// Every cell's masked IPython lines, in order, as `magics::unmask` takes them.
    fn magics(&self) -> Vec<String> {
        self.cells.iter().flat_map(|c| c.magics.iter().cloned()).collect()
    }

    /// The joined cells as written (IPython lines back in place), with where each cell
    /// starts; offsets are those of `source`.
    pub fn shown(&self, joined: &str) -> (String, CellIndex) {
        let text = magics::unmask(joined, &self.magics()).unwrap_or_else(|_| joined.to_string());
        let mut starts = Vec::new();
        let mut offset = 0;
        for (cell, chunk) in self.cells.iter().zip(text.split_inclusive(CELL_END)) {
            starts.push((offset, cell.number));
            offset += chunk.len();
        }
        (text, CellIndex { starts })
    }

    /// The cells whose text `fixed` (the joined text after fixing) changes: each one's
    /// place among the joined cells and its new text.
    fn changed(&self, fixed: &str) -> Result<Vec<(usize, String)>, String> {
        let text = magics::unmask(fixed, &self.magics())?;
        let chunks: Vec<&str> = text.split(CELL_END).collect();
        if chunks.len() != self.cells.len() + 1 || !chunks[self.cells.len()].is_empty() {
            return Err("a fix reached across cells".into());
        }
        let mut changed = Vec::new();
        for (at, (cell, chunk)) in self.cells.iter().zip(&chunks).enumerate() {
            // Joining ended every cell with a newline; a cell written without one keeps it off.
            let new_text = match chunk.strip_suffix('\n') {
                Some(trimmed) if !cell.text.ends_with('\n') => trimmed,
                _ => chunk,
            };
            if new_text != cell.text {
                changed.push((at, new_text.to_string()));
            }
        }
        Ok(changed)
    }

    /// The cells whose text `fixed` changes, by cell number, with their new text.
    pub fn changed_cells(&self, fixed: &str) -> Result<Vec<(usize, String)>, String> {
        Ok(self.changed(fixed)?.into_iter().map(|(at, text)| (self.cells[at].number, text)).collect())
    }

    /// Findings of the joined cells by cell number, each in its cell's own offsets. A
    /// fix that would also edit another cell is dropped: it cannot be shown in one cell.
    pub fn split_findings(&self, found: Vec<Diagnostic>) -> HashMap<usize, Vec<Diagnostic>> {
        let mut by_cell: HashMap<usize, Vec<Diagnostic>> = HashMap::new();
        for mut diagnostic in found {
            let Some(cell) = self
                .cells
                .iter()
                .find(|c| c.start <= diagnostic.range.start && diagnostic.range.end <= c.start + c.text.len())
            else {
                continue;
            };
            let (start, end) = (cell.start, cell.start + cell.text.len());
            let inside = |range: TextRange| start <= range.start && range.end <= end;
            let back = |range: TextRange| TextRange { start: range.start - start, end: range.end - start };
            diagnostic.range = TextRange { start: diagnostic.range.start - start, end: diagnostic.range.end - start };
            diagnostic.fix = match diagnostic.fix.take() {
                Some(fix) if fix.edits().iter().all(|e| inside(e.range)) => Some(fix.map_ranges(back)),
                _ => None,
            };
            by_cell.entry(cell.number).or_default().push(diagnostic);
        }
        by_cell
    }
}

/// Whether each edit of `diagnostic`'s fix lies inside a cell of `joined` (the cells
/// joined, at any round of fixing). A statement left open at the end of a cell runs on
/// into the next in the joined text, and a fix placed by it can land between cells, in
/// no cell at all.
pub fn fix_edits_only_cells(joined: &str, diagnostic: &Diagnostic) -> bool {
    let Some(fix) = &diagnostic.fix else { return true };
    let mut cells = Vec::new();
    let mut start = 0;
    for chunk in joined.split_inclusive(CELL_END) {
        cells.push(start..=start + chunk.strip_suffix(CELL_END).unwrap_or(chunk).len());
        start += chunk.len();
    }
    fix.edits().iter().all(|e| cells.iter().any(|cell| cell.contains(&e.range.start) && cell.contains(&e.range.end)))
}

/// Append one (masked) cell to the joined text, ended by a newline and `CELL_END`.
fn push_cell(joined: &mut String, text: &str) {
    joined.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        joined.push('\n');
    }
    joined.push_str(CELL_END);
}

fn kernel_language(notebook: &Value) -> Option<&str> {
    let metadata = notebook.get("metadata")?;
    metadata.pointer("/kernelspec/language").or_else(|| metadata.pointer("/language_info/name")).and_then(Value::as_str)
}

/// How a notebook writes a source list: what comes after `[`, between lines, and before `]`.
struct ListStyle {
    open: String,
    between: String,
    close: String,
}

impl ListStyle {
    /// The style of `value` (a JSON array of strings), if it has a line to learn from.
    fn of(value: &str) -> Option<ListStyle> {
        let spans = json_spans::string_spans(value).ok()?;
        let (first, last) = (spans.first()?, spans.last()?);
        let open = value[1..first.start].to_string();
        let close = value[last.end..value.len() - 1].to_string();
        let between = match spans.get(1) {
            Some(second) => value[first.end..second.start].to_string(),
            None => format!(",{open}"),
        };
        Some(ListStyle { open, between, close })
    }

    /// The first cell's style the notebook shows, else nbformat's own (`indent=1`).
    fn of_notebook(raw: &str, spans: &[Range<usize>]) -> ListStyle {
        spans
            .iter()
            .find_map(|span| ListStyle::of(&raw[span.clone()]).filter(|_| raw[span.clone()].starts_with('[')))
            .unwrap_or_else(|| ListStyle { open: "\n    ".into(), between: ",\n    ".into(), close: "\n   ".into() })
    }
}

/// A cell's new source, written as the old one was: one string, or a list of lines.
fn encode_source(text: &str, original: &str, notebook_style: &ListStyle) -> String {
    let quote = |line: &str| serde_json::to_string(line).expect("a string serializes");
    if original.starts_with('"') {
        return quote(text);
    }
    let lines: Vec<String> = text.split_inclusive('\n').map(quote).collect();
    if lines.is_empty() {
        return "[]".into();
    }
    let style = ListStyle::of(original).unwrap_or_else(|| ListStyle {
        open: notebook_style.open.clone(),
        between: notebook_style.between.clone(),
        close: notebook_style.close.clone(),
    });
    format!("[{}{}{}]", style.open, lines.join(&style.between), style.close)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": [
    "# Training"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
   "source": [
    "%matplotlib inline\n",
    "import torch"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": "x = torch.ones(2)\ny = x * 2"
  }
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn cells_join_in_order_and_locate_by_cell() {
        let notebook = Notebook::parse(NOTEBOOK).unwrap();
        assert!(notebook.cells.source.contains("import torch\n#\u{2}\nx = torch.ones(2)"));
        let (shown, cells) = notebook.cells.shown(&notebook.cells.source);
        assert!(shown.starts_with("%matplotlib inline\nimport torch\n"));
        let index = LineIndex::new(&shown);
        let y = shown.find("y = ").unwrap();
        assert_eq!(cells.locate(&shown, &index, y), (3, Location { row: 2, column: 1 }));
    }

    #[test]
    fn an_unchanged_source_gives_back_the_same_bytes_and_a_change_touches_one_cell() {
        let notebook = Notebook::parse(NOTEBOOK).unwrap();
        assert_eq!(notebook.with_fixed_source(&notebook.cells.source).unwrap(), NOTEBOOK);
        let fixed = notebook.cells.source.replace("import torch\n", "import torch\nimport os\n");
        let written = notebook.with_fixed_source(&fixed).unwrap();
        assert_eq!(
            written,
            NOTEBOOK.replace("    \"import torch\"\n", "    \"import torch\\n\",\n    \"import os\"\n")
        );
        let fixed = notebook.cells.source.replace("y = x * 2", "y = x * 3");
        let written = notebook.with_fixed_source(&fixed).unwrap();
        assert_eq!(written, NOTEBOOK.replace("y = x * 2", "y = x * 3"));
    }

    #[test]
    fn a_fix_across_cells_is_refused() {
        let notebook = Notebook::parse(NOTEBOOK).unwrap();
        let crossed = notebook.cells.source.replacen(CELL_END, "", 1);
        assert!(notebook.with_fixed_source(&crossed).is_err());
    }

    #[test]
    fn other_kernels_and_old_formats_are_not_linted() {
        let r = NOTEBOOK.replace("\"language\": \"python\"", "\"language\": \"R\"");
        assert!(Notebook::parse(&r).unwrap().skipped.unwrap().contains("R"));
        assert!(Notebook::parse(r#"{"nbformat": 3, "worksheets": []}"#).unwrap_err().contains("nbformat 3"));
        assert!(Notebook::parse("{\"cells\": [").unwrap_err().starts_with("not a valid notebook"));
    }
}
