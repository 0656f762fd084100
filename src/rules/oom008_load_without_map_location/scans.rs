//! Scans of the code above a load that tell where the loaded file came from. Each answers
//! exactly as the regex in its comment would, with ASCII `\s`, `\b` and `\w` (the tests hold
//! each to its regex), but without building a regex around the load's own names: one such
//! regex took longer to build than the rest of the rule took to run, and a load needed up
//! to four.

use std::ops::Range;

/// ASCII `\s` as regexes read it: space, tab, newline, vertical tab, form feed, return.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// ASCII `\w`.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// ASCII `\b` at `at`: a word byte on one side only.
fn boundary(text: &[u8], at: usize) -> bool {
    (at > 0 && is_word(text[at - 1])) != (at < text.len() && is_word(text[at]))
}

/// Where the spaces that start at `from` end.
fn spaces(text: &[u8], from: usize) -> usize {
    from + text[from..].iter().take_while(|&&b| is_space(b)).count()
}

/// Where the line that holds `at` ends (its `\n`, or the end of the text).
fn line_end(text: &[u8], at: usize) -> usize {
    memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |end| at + end)
}

/// Every place `needle` starts in `text` at or after `from`.
fn places<'a>(text: &'a [u8], needle: &'a [u8], from: usize) -> impl Iterator<Item = usize> + 'a {
    memchr::memmem::find_iter(&text[from.min(text.len())..], needle).map(move |at| from + at)
}

/// `\s+as\s+{name}\b` at `from`: where it ends.
fn as_name(text: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let at = spaces(text, from);
    if at == from || !text[at..].starts_with(b"as") {
        return None;
    }
    let named = spaces(text, at + 2);
    if named == at + 2 || !text[named..].starts_with(name) {
        return None;
    }
    let end = named + name.len();
    boundary(text, end).then_some(end)
}

/// Whether `text` imports `load` from torch (`from\s+torch\s+import\s[^\n]*\bload\b`) or
/// imports torch under a name `T` whose `T.load` it spells (`import\s+torch\s+as\s+(\w+)`),
/// taking the regex's matches one after another as it would.
pub fn imports_torch_load(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (mut froms, mut imports) = (places(bytes, b"from", 0).peekable(), places(bytes, b"import", 0).peekable());
    // Where the next match may start: past the end of the last.
    let mut cursor = 0;
    loop {
        // The next place either alternative can start at, in order.
        let at = match (froms.peek(), imports.peek()) {
            (Some(&from), Some(&import)) => from.min(import),
            (Some(&at), None) | (None, Some(&at)) => at,
            (None, None) => return false,
        };
        if froms.peek() == Some(&at) {
            froms.next();
        } else {
            imports.next();
        }
        if at < cursor {
            continue;
        }
        if bytes[at..].starts_with(b"from") {
            if loads_from_torch(bytes, at + "from".len()) {
                return true;
            }
        } else if let Some(alias) = torch_alias(bytes, at + "import".len()) {
            if memchr::memmem::find(bytes, format!("{}.load", &text[alias.clone()]).as_bytes()).is_some() {
                return true;
            }
            cursor = alias.end;
        }
    }
}

/// `\s+{word}` at `from`: where it ends.
fn spaced_word(text: &[u8], from: usize, word: &[u8]) -> Option<usize> {
    let at = spaces(text, from);
    (at > from && text[at..].starts_with(word)).then_some(at + word.len())
}

/// `\s+torch\s+import\s[^\n]*\bload\b` at `from`.
fn loads_from_torch(text: &[u8], from: usize) -> bool {
    let Some(imported) = spaced_word(text, from, b"torch").and_then(|at| spaced_word(text, at, b"import")) else {
        return false;
    };
    if !text.get(imported).copied().is_some_and(is_space) {
        return false;
    }
    let names = imported + 1;
    let end = line_end(text, names);
    places(text, b"load", names)
        .take_while(|&at| at < end)
        .any(|at| boundary(text, at) && boundary(text, at + "load".len()))
}

/// `\s+torch\s+as\s+(\w+)` at `from`: where the name given to torch lies.
fn torch_alias(text: &[u8], from: usize) -> Option<Range<usize>> {
    let named = spaced_word(text, from, b"torch").and_then(|at| spaced_word(text, at, b"as"))?;
    let start = spaces(text, named);
    let end = start + text[start..].iter().take_while(|&&b| is_word(b)).count();
    (start > named && end > start).then_some(start..end)
}

/// `(?:{makers})\([^\n]*\)\s+as\s+{name}\b` anywhere in `text`: `with open(p, "wb") as f`.
pub fn made_as(text: &str, makers: &[&str], name: &str) -> bool {
    let bytes = text.as_bytes();
    makers.iter().any(|maker| {
        places(bytes, maker.as_bytes(), 0).any(|at| {
            let open = at + maker.len();
            bytes.get(open) == Some(&b'(') && {
                let line = open + 1..line_end(bytes, open + 1);
                memchr::memrchr_iter(b')', &bytes[line.clone()]).any(|close| {
                    as_name(bytes, line.start + close + 1, name.as_bytes()).is_some()
                })
            }
        })
    })
}

/// `\b{name}\s*=\s*(?:{prefixes})?(?:{makers})\(` anywhere in `text`: `d = tempfile.mkdtemp()`.
pub fn assigned_from(text: &str, name: &str, prefixes: &[&str], makers: &[&str]) -> bool {
    let bytes = text.as_bytes();
    places(bytes, name.as_bytes(), 0).any(|at| {
        if !boundary(bytes, at) {
            return false;
        }
        let equals = spaces(bytes, at + name.len());
        if bytes.get(equals) != Some(&b'=') {
            return false;
        }
        let value = &bytes[spaces(bytes, equals + 1)..];
        let called = |rest: &[u8]| {
            makers.iter().any(|maker| rest.starts_with(maker.as_bytes()) && rest.get(maker.len()) == Some(&b'('))
        };
        called(value)
            || prefixes.iter().any(|prefix| value.starts_with(prefix.as_bytes()) && called(&value[prefix.len()..]))
    })
}

/// `\b{name}\.seek\(` anywhere in `text`.
pub fn rewound(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    places(bytes, name.as_bytes(), 0)
        .any(|at| boundary(bytes, at) && bytes[at + name.len()..].starts_with(b".seek("))
}

/// `\b{name}\s*:\s*(?:io\.)?BytesIO\b` anywhere in `text`: a parameter typed `BytesIO`.
pub fn typed_bytes_io(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    places(bytes, name.as_bytes(), 0).any(|at| {
        let colon = spaces(bytes, at + name.len());
        if !boundary(bytes, at) || bytes.get(colon) != Some(&b':') {
            return false;
        }
        let mut annotation = spaces(bytes, colon + 1);
        if bytes[annotation..].starts_with(b"io.BytesIO") {
            annotation += 3;
        }
        bytes[annotation..].starts_with(b"BytesIO") && boundary(bytes, annotation + "BytesIO".len())
    })
}

/// The last of the matches of `open\(\s*([^,\n]+?)\s*,[^\n]*\)\s+as\s+{name}\b` in
/// `text`, found one after another as a regex finds them: its group, the path a file
/// object `name` was opened from.
pub fn last_opened_as<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let bytes = text.as_bytes();
    let mut from = 0;
    let mut last = None;
    while let Some(at) = places(bytes, b"open(", from).next() {
        match opened_at(bytes, at + "open(".len(), name.as_bytes()) {
            Some((path, end)) => {
                last = Some(&text[path]);
                from = end;
            }
            None => from = at + 1,
        }
    }
    last
}

/// The match of `last_opened_as`'s regex whose `open(` ends at `after`: its group and
/// where it ends.
fn opened_at(text: &[u8], after: usize, name: &[u8]) -> Option<(Range<usize>, usize)> {
    // The group holds no comma, so the one after it is the first after `open(`.
    let comma = after + memchr::memchr(b',', &text[after..])?;
    // The group is lazy: it ends where the spaces before the comma start, past one
    // character at least, and holds no line break. The spaces before it are greedy: the
    // longest run is tried first.
    let mut trailing = comma;
    while trailing > after && is_space(text[trailing - 1]) {
        trailing -= 1;
    }
    let leading = spaces(text, after).min(comma);
    let group = (after..=leading).rev().find_map(|start| {
        let end = trailing.max(start + 1);
        (end <= comma && !text[start..end].contains(&b'\n')).then_some(start..end)
    })?;
    // The greedy `[^\n]*` tries the last `)` of the comma's line first.
    let line = comma + 1..line_end(text, comma + 1);
    let end = memchr::memrchr_iter(b')', &text[line.clone()]).find_map(|close| as_name(text, line.start + close + 1, name))?;
    Some((group, end))
}

/// `\bsave\([^\n]*{path}\s*\)` or `open\(\s*{path}\s*,\s*['"]wb` in `text` at or after
/// `from`: `path` written there (`torch.save(model, path)`, `open(path, "wb")`).
pub fn writes(text: &str, from: usize, path: &str) -> bool {
    let (bytes, path) = (text.as_bytes(), path.as_bytes());
    let closed = |at: usize| bytes.get(spaces(bytes, at)) == Some(&b')');
    let saved = places(bytes, b"save(", from).any(|at| {
        let arguments = at + "save(".len();
        boundary(bytes, at) && {
            let line = line_end(bytes, arguments);
            places(bytes, path, arguments).take_while(|&p| p <= line).any(|p| closed(p + path.len()))
        }
    });
    saved
        || places(bytes, b"open(", from).any(|at| {
            let named = spaces(bytes, at + "open(".len());
            bytes[named..].starts_with(path) && {
                let comma = spaces(bytes, named + path.len());
                bytes.get(comma) == Some(&b',') && {
                    let mode = spaces(bytes, comma + 1);
                    matches!(bytes.get(mode), Some(b'\'' | b'"')) && bytes[mode + 1..].starts_with(b"wb")
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    /// Pieces of code joined at random into texts where the scans and their regexes could
    /// disagree: names inside other words, spaces of every kind (line breaks among them)
    /// between the parts, commas and parentheses where the lazy and greedy parts of the
    /// regexes must choose, non-ASCII text next to names.
    const PIECES: &[&str] = &[
        "open(", "open( ", "open(\n", "reopen(", "path", " path ", "p", "path2", "_path", "é", "f", "fh", " ",
        "\t", "\n", "\x0b", ",", " ,", "\n,", ")", " ) ", ") as f", ")as f", ") as  fh", ") as\nf", "as", " as ",
        "with ", "torch.save(", "save(", "saves(", "x.save(", "'wb'", "\"wb\"", "'rb'", "wb", "=", " = ", ":",
        ": io.BytesIO", ":BytesIO", "BytesIO", "BytesIOx", "io.", "tempfile.", "mkdtemp(", "gettempdir", "(",
        "TemporaryDirectory()", "NamedTemporaryFile(", "TemporaryFile(", ".seek(", ".seek", "d", "d =", "#",
        "open(a, 'rb') as f ", "open(p, x) as fh", "save(x, p)", "save(p )", "from", "from torch import",
        "import torch as T", "import  torch\tas\nnn", "import torch", "T.load", "nn.load", "load", " load,", "loads",
        "from\ttorch import\n", "import",
    ];

    fn texts() -> Vec<String> {
        // A fixed generator: the same texts every run.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..40_000)
            .map(|_| {
                let pieces = 1 + next() % 16;
                (0..pieces).map(|_| PIECES[(next() % PIECES.len() as u64) as usize]).collect()
            })
            .collect()
    }

    const NAMES: &[&str] = &["f", "fh", "path", "d", "p", "é", "\"a.pt\""];

    #[test]
    fn each_scan_answers_as_its_regex() {
        let texts = texts();
        let mut matched = [0usize; 6];
        for name in NAMES {
            let escaped = regex::escape(name);
            let opened =
                Regex::new(&format!(r"open\((?-u:\s*)([^,\n]+?)(?-u:\s*),[^\n]*(?-u:\)\s+as\s+{escaped}\b)")).unwrap();
            let written =
                Regex::new(&format!(r"(?-u:\bsave\()[^\n]*(?-u:{escaped}\s*\))|(?-u:open\(\s*{escaped}\s*,\s*['\x22]wb)"))
                    .unwrap();
            let made = Regex::new(&format!(r"(?:mkdtemp|TemporaryDirectory)\([^\n]*(?-u:\)\s+as\s+{escaped}\b)")).unwrap();
            let assigned =
                Regex::new(&format!(r"(?-u:\b{escaped}\s*=\s*(?:tempfile\.)?(?:mkdtemp|gettempdir|TemporaryDirectory)\()"))
                    .unwrap();
            let seek = Regex::new(&format!(r"(?-u:\b{escaped}\.seek\()")).unwrap();
            let typed = Regex::new(&format!(r"(?-u:\b{escaped}\s*:\s*(?:io\.)?BytesIO\b)")).unwrap();
            for text in &texts {
                let expected = opened.captures_iter(text).last().map(|c| c.get(1).unwrap().as_str());
                assert_eq!(last_opened_as(text, name), expected, "opened as {name:?} in {text:?}");
                for from in [0, text.len() / 2] {
                    let from = (0..=from).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
                    assert_eq!(writes(text, from, name), written.is_match_at(text, from), "{name:?} in {text:?} @{from}");
                }
                let makers = ["mkdtemp", "TemporaryDirectory"];
                assert_eq!(made_as(text, &makers, name), made.is_match(text), "made as {name:?} in {text:?}");
                let makers = ["mkdtemp", "gettempdir", "TemporaryDirectory"];
                let found = assigned_from(text, name, &["tempfile."], &makers);
                assert_eq!(found, assigned.is_match(text), "assigned {name:?} in {text:?}");
                assert_eq!(rewound(text, name), seek.is_match(text), "seek of {name:?} in {text:?}");
                assert_eq!(typed_bytes_io(text, name), typed.is_match(text), "{name:?}: BytesIO in {text:?}");
                for (count, regex) in matched.iter_mut().zip([&opened, &written, &made, &assigned, &seek, &typed]) {
                    *count += usize::from(regex.is_match(text));
                }
            }
        }
        let imports = Regex::new(r"(?-u:from\s+torch\s+import\s)[^\n]*(?-u:\bload\b)|(?-u:import\s+torch\s+as\s+(\w+))").unwrap();
        let mut imported = 0;
        for text in &texts {
            let expected = imports.captures_iter(text).any(|found| match found.get(1) {
                Some(alias) => text.contains(&format!("{}.load", alias.as_str())),
                None => true,
            });
            assert_eq!(imports_torch_load(text), expected, "torch's load imported in {text:?}");
            imported += usize::from(expected);
        }
        assert!(imported > 50, "{imported}");
        // Each regex matched often enough for the comparison to mean something.
        assert!(matched.iter().all(|&count| count > 50), "{matched:?}");
    }
}
