//! IPython syntax in code cells (`%matplotlib inline`, `!pip install`, `files = !ls`,
//! `model?`, `%%time`) is not Python. Each such line is masked by a comment of the same
//! byte length, so the cell parses, every offset stays where it was, and the line can be
//! put back after fixing. Cells run by a non-Python cell magic (`%%bash`, `%%writefile`)
//! are not linted at all.

use regex::Regex;
use std::sync::OnceLock;

/// Cell magics whose body is still Python.
const PYTHON_CELL_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "memit", "debug", "pypy"];

/// The masking comment: `#` and this filler, to the length of the masked text.
const FILLER: char = '\u{1}';

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked {
    /// The cell with each IPython line masked.
    pub text: String,
    /// The masked lines' text after their indentation, in order.
    pub magics: Vec<String>,
}

/// Mask a cell's IPython lines; `None` when the cell is not Python at all.
pub fn mask(cell: &str) -> Option<Masked> {
    let first = cell.trim_start();
    if let Some(magic) = first.strip_prefix("%%") {
        let name = magic.split(|c: char| c.is_whitespace()).next().unwrap_or("");
        if !PYTHON_CELL_MAGICS.contains(&name) {
            return None;
        }
    }
    let mut text = String::with_capacity(cell.len());
    let mut magics = Vec::new();
    let mut state = LineState::default();
    // After an IPython line ending in `\`, IPython reads the next line as its continuation
    // (`!pip install torch \` then `    torchvision`): not Python either.
    let mut magic_continues = false;
    for line in cell.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let content = body.trim_start();
        let indent = &body[..body.len() - content.len()];
        let starts_magic = state.at_statement_start() && is_ipython(content);
        if content.len() > 1 && (magic_continues || starts_magic) {
            text.push_str(indent);
            text.push('#');
            text.extend(std::iter::repeat_n(FILLER, content.len() - 1));
            text.push_str(&line[body.len()..]);
            magics.push(content.to_string());
            magic_continues = escaped(body.as_bytes(), body.len());
            continue;
        }
        magic_continues = false;
        state.scan(body);
        text.push_str(line);
    }
    Some(Masked { text, magics })
}

/// Put the masked lines back into (possibly fixed) cell text; an error when fixing lost
/// or added a masked line.
pub fn unmask(text: &str, magics: &[String]) -> Result<String, String> {
    let mut restored = String::with_capacity(text.len());
    let mut next = magics.iter();
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let content = body.trim_start();
        let is_mask = content.len() > 1 && content.starts_with('#') && content[1..].chars().all(|c| c == FILLER);
        if is_mask {
            let magic = next.next().ok_or("a fix added a line that looks like a masked IPython line")?;
            restored.push_str(&body[..body.len() - content.len()]);
            restored.push_str(magic);
            restored.push_str(&line[body.len()..]);
        } else {
            restored.push_str(line);
        }
    }
    match next.next() {
        Some(magic) => Err(format!("a fix removed the IPython line `{magic}`")),
        None => Ok(restored),
    }
}

/// Whether a line that starts a statement is IPython rather than Python.
fn is_ipython(content: &str) -> bool {
    static ASSIGNED: OnceLock<Regex> = OnceLock::new();
    if content.starts_with(['%', '!', '?']) {
        return true;
    }
    // `model?` / `torch.cuda??`: help, never valid Python at the end of a code line.
    if content.ends_with('?') && !content.starts_with('#') && !content.contains(['#', '"', '\'']) {
        return true;
    }
    // `files = !ls`, `result = %timeit -o f()`: `!` and `%` cannot start a Python value.
    ASSIGNED
        .get_or_init(|| Regex::new(r"^[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]").expect("valid regex"))
        .is_match(content)
}

/// Where a line starts: inside brackets, a triple-quoted string or after a backslash the
/// line continues a statement and cannot be IPython.
#[derive(Default)]
struct LineState {
    depth: usize,
    triple: Option<&'static str>,
    continued: bool,
}

impl LineState {
    fn at_statement_start(&self) -> bool {
        self.depth == 0 && self.triple.is_none() && !self.continued
    }

    fn scan(&mut self, line: &str) {
        let bytes = line.as_bytes();
        let mut at = 0;
        self.continued = false;
        while at < bytes.len() {
            if let Some(quote) = self.triple {
                match line[at..].find(quote) {
                    Some(end) if !escaped(bytes, at + end) => {
                        at += end + 3;
                        self.triple = None;
                    }
                    Some(end) => at += end + 1,
                    None => return,
                }
                continue;
            }
            match bytes[at] {
                b'#' => return,
                b'(' | b'[' | b'{' => self.depth += 1,
                b')' | b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                b'\\' if at + 1 == bytes.len() => self.continued = true,
                quote @ (b'"' | b'\'') => {
                    let triple = if quote == b'"' { "\"\"\"" } else { "'''" };
                    if line[at..].starts_with(triple) {
                        self.triple = Some(triple);
                        at += 3;
                        continue;
                    }
                    // A one-line string: skip to its closing quote.
                    at += 1;
                    while at < bytes.len() && bytes[at] != quote {
                        at += if bytes[at] == b'\\' { 2 } else { 1 };
                    }
                }
                _ => {}
            }
            at += 1;
        }
    }
}

fn escaped(bytes: &[u8], at: usize) -> bool {
    bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipython_lines_are_masked_to_the_same_length_and_restored() {
        let cell = "%matplotlib inline\n!pip install timm\nfiles = !ls\nimport torch\nfor f in files:\n    !echo $f\ntorch.cuda?\nx = 10 % 3";
        let masked = mask(cell).unwrap();
        assert_eq!(masked.text.len(), cell.len());
        assert_eq!(
            masked.magics,
            ["%matplotlib inline", "!pip install timm", "files = !ls", "!echo $f", "torch.cuda?"]
        );
        assert!(masked.text.contains("import torch\nfor f in files:\n    #\u{1}"));
        assert!(masked.text.ends_with("x = 10 % 3"), "Python is left alone");
        let tree = crate::engine::parse(&masked.text).unwrap();
        assert!(!tree.root_node().has_error());
        assert_eq!(unmask(&masked.text, &masked.magics).unwrap(), cell);
        // Re-indented by a fix: the IPython line keeps the new indentation.
        let indented = masked.text.replace("    #", "        #");
        assert!(unmask(&indented, &masked.magics).unwrap().contains("        !echo $f"));
    }

    #[test]
    fn continuation_lines_and_strings_are_python() {
        let cell =
            "s = (\n    \"%d items\"\n    % count\n)\ndoc = \"\"\"\n!not a shell line\n\"\"\"\nq = 'why?'\n# really?\n";
        assert_eq!(mask(cell).unwrap(), Masked { text: cell.to_string(), magics: Vec::new() });
    }

    #[test]
    fn cell_magics_decide_whether_the_cell_is_python() {
        assert!(mask("%%bash\nnvidia-smi\n").is_none());
        assert!(mask("%%writefile train.py\nimport torch\n").is_none());
        let timed = mask("%%time\nmodel(x)\n").unwrap();
        assert_eq!(timed.magics, ["%%time"]);
    }

    #[test]
    fn a_shell_line_continued_with_a_backslash_is_masked_with_its_continuation() {
        let cell = "!pip install torch \\\n    torchvision \\\n    timm\nimport torch\nx = 1 + \\\n    2\n";
        let masked = mask(cell).unwrap();
        assert_eq!(masked.magics, ["!pip install torch \\", "torchvision \\", "timm"]);
        assert!(masked.text.ends_with("import torch\nx = 1 + \\\n    2\n"), "Python continuations stay");
        assert!(!crate::engine::parse(&masked.text).unwrap().root_node().has_error());
        assert_eq!(unmask(&masked.text, &masked.magics).unwrap(), cell);
    }

    #[test]
    fn losing_a_masked_line_is_an_error() {
        let masked = mask("!nvidia-smi\nx = 1\n").unwrap();
        assert!(unmask("x = 1\n", &masked.magics).is_err());
    }
}
