//! Reading a query's text into patterns. Node kinds and field names are checked against
//! the grammar here, so a typo fails the rule's compile test.

use super::{Operand, Step, Test, TextPredicate};
use crate::engine::predicates::HostPredicate;
use crate::engine::tree::KindSet;

pub(super) type Parsed = (Step, Vec<TextPredicate>, Vec<HostPredicate>);

/// The patterns of one query, their capture names numbered in `capture_names` (shared
/// with the other queries of a set).
pub(super) fn patterns(query: &str, capture_names: &mut Vec<String>) -> Result<Vec<Parsed>, String> {
    let mut reader = Reader { text: query, at: 0, capture_names, predicates: Vec::new() };
    let mut found = Vec::new();
    loop {
        reader.skip_space();
        if reader.at == reader.text.len() {
            return Ok(found);
        }
        let root = reader.pattern()?;
        let mut text = Vec::new();
        let mut host = Vec::new();
        for (operator, capture, args) in std::mem::take(&mut reader.predicates) {
            match text_predicate(&operator, capture, &args)? {
                Some(predicate) => text.push(predicate),
                None => {
                    let kinds = strings(&operator, &args, "node kinds")?;
                    host.push(HostPredicate::compile(&operator, capture, kinds)?);
                }
            }
        }
        found.push((root, text, host));
    }
}

/// `None` when `operator` is not a text predicate (it may be a host predicate).
fn text_predicate(operator: &str, capture: u32, args: &[Operand]) -> Result<Option<TextPredicate>, String> {
    let (positive, name) = match operator.strip_prefix("not-") {
        Some(name) => (false, name),
        None => (true, operator),
    };
    let predicate = match name {
        "eq?" => match args {
            [to] => TextPredicate::Eq { capture, to: to.clone(), positive },
            _ => return Err(format!("#{operator} takes a capture and one more argument")),
        },
        "match?" => match strings(operator, args, "strings")?.as_slice() {
            [pattern] => {
                // Without the search for required literals the regex crate builds by default,
                // and without a fully compiled DFA (the lazy one stays): it is asked of one
                // capture's short text, never searched through a file. Building them was
                // more than half of compiling every pattern (OOM002's case-insensitive
                // alternation alone: 1.6 M instructions at every start).
                let regex = regex_automata::meta::Regex::builder()
                    .configure(regex_automata::meta::Config::new().auto_prefilter(false).dfa(false))
                    .build(pattern)
                    .map_err(|e| format!("#{operator}: {e}"))?;
                TextPredicate::Match { capture, regex, positive }
            }
            _ => return Err(format!("#{operator} takes a capture and a regex")),
        },
        "any-of?" => TextPredicate::AnyOf { capture, values: strings(operator, args, "strings")?, positive },
        _ => return Ok(None),
    };
    Ok(Some(predicate))
}

/// A predicate's arguments after its capture, all strings (`what` they stand for is
/// named in the error).
fn strings(operator: &str, args: &[Operand], what: &str) -> Result<Vec<String>, String> {
    args.iter()
        .map(|arg| match arg {
            Operand::Text(text) => Ok(text.clone()),
            Operand::Capture(_) => Err(format!("#{operator} takes {what} after the capture")),
        })
        .collect()
}

struct Reader<'q, 'n> {
    text: &'q str,
    at: usize,
    capture_names: &'n mut Vec<String>,
    /// The predicates of the pattern being read, wherever in it they stand: (operator
    /// without `#`, first capture, the other arguments).
    predicates: Vec<(String, u32, Vec<Operand>)>,
}

impl Reader<'_, '_> {
    fn error(&self, what: &str) -> String {
        let line = self.text[..self.at].matches('\n').count() + 1;
        format!("line {line}: {what}")
    }

    fn skip_space(&mut self) {
        loop {
            let rest = &self.text[self.at..];
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if trimmed.starts_with(';') {
                self.at += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.text[self.at..].chars().next()
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        match self.peek() {
            Some(c) if c == wanted => {
                self.at += 1;
                Ok(())
            }
            Some(c) => Err(self.error(&format!("expected `{wanted}`, found `{c}`"))),
            None => Err(self.error(&format!("expected `{wanted}`, found the end"))),
        }
    }

    /// A name: a node kind, field, capture or predicate (after its sigil).
    fn name(&mut self) -> &str {
        let rest = &self.text[self.at..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '?' | '!')))
            .unwrap_or(rest.len());
        self.at += end;
        &rest[..end]
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect('"')?;
        let mut value = String::new();
        let mut chars = self.text[self.at..].char_indices();
        while let Some((offset, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += offset + 1;
                    return Ok(value);
                }
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, 'r')) => value.push('\r'),
                    Some((_, '0')) => value.push('\0'),
                    Some((_, other)) => value.push(other),
                    None => break,
                },
                c => value.push(c),
            }
        }
        Err(self.error("unterminated string"))
    }

    fn capture_number(&mut self, name: &str) -> u32 {
        let names = &mut *self.capture_names;
        match names.iter().position(|n| n == name) {
            Some(at) => at as u32,
            None => {
                names.push(name.to_string());
                (names.len() - 1) as u32
            }
        }
    }

    /// One pattern and the captures after it.
    fn pattern(&mut self) -> Result<Step, String> {
        let mut step = match self.peek() {
            Some('(') => self.node()?,
            Some('[') => {
                self.at += 1;
                let mut alternatives = Vec::new();
                while self.peek() != Some(']') {
                    if self.peek().is_none() {
                        return Err(self.error("unclosed `[`"));
                    }
                    alternatives.push(self.pattern()?);
                }
                self.at += 1;
                if alternatives.is_empty() {
                    return Err(self.error("empty alternation"));
                }
                plain(Test::Alternatives(alternatives))
            }
            Some('"') => {
                let kind = self.string()?;
                plain(Test::Kinds(KindSet::named(&[kind], false).map_err(|e| self.error(&e))?))
            }
            Some('_') => {
                self.at += 1;
                plain(Test::Any)
            }
            Some(c) => return Err(self.error(&format!("unexpected `{c}`"))),
            None => return Err(self.error("expected a pattern, found the end")),
        };
        while self.peek() == Some('@') {
            self.at += 1;
            let name = self.name().to_string();
            if name.is_empty() {
                return Err(self.error("a capture needs a name"));
            }
            step.captures.push(self.capture_number(&name));
        }
        if let Some(c @ ('*' | '+' | '?')) = self.peek() {
            return Err(self.error(&format!("quantifier `{c}` is not supported")));
        }
        Ok(step)
    }

    /// `( ... )`: a node with its children, a grouping, or (in a child list) a predicate.
    fn node(&mut self) -> Result<Step, String> {
        self.expect('(')?;
        match self.peek() {
            // A grouping: one pattern with predicates around it.
            Some('(' | '[' | '"') => {
                let mut inner = None;
                while self.peek() != Some(')') {
                    if self.predicate()? {
                        continue;
                    }
                    if inner.is_some() {
                        return Err(self.error("a sequence of sibling patterns is not supported"));
                    }
                    inner = Some(self.pattern()?);
                }
                self.at += 1;
                inner.ok_or_else(|| self.error("empty grouping"))
            }
            Some(_) => {
                let kind = self.name().to_string();
                let test = match kind.as_str() {
                    "_" => Test::Named,
                    "" => return Err(self.error("expected a node kind")),
                    _ => Test::Kinds(KindSet::named(&[&kind], true).map_err(|e| self.error(&e))?),
                };
                let mut step = plain(test);
                let mut anchored = false;
                loop {
                    match self.peek() {
                        Some(')') => {
                            self.at += 1;
                            if anchored {
                                match step.children.last_mut() {
                                    Some(last) => last.last = true,
                                    None => return Err(self.error("an anchor needs a child pattern")),
                                }
                            }
                            return Ok(step);
                        }
                        Some('.') => {
                            self.at += 1;
                            anchored = true;
                        }
                        Some('!') => return Err(self.error("negated fields are not supported")),
                        None => return Err(self.error("unclosed `(`")),
                        Some(_) => {
                            if self.predicate()? {
                                continue;
                            }
                            let field = self.field()?;
                            let mut child = self.pattern()?;
                            child.field = field;
                            child.immediate = std::mem::take(&mut anchored);
                            step.children.push(child);
                        }
                    }
                }
            }
            None => Err(self.error("unclosed `(`")),
        }
    }

    /// `name:` before a child pattern, if there.
    fn field(&mut self) -> Result<Option<std::num::NonZeroU16>, String> {
        let start = self.at;
        let name = self.name().to_string();
        if name.is_empty() || !self.text[self.at..].starts_with(':') {
            self.at = start;
            return Ok(None);
        }
        self.at += 1;
        match crate::engine::language().field_id_for_name(&name) {
            Some(id) => Ok(Some(id)),
            None => Err(self.error(&format!("no field `{name}` in the Python grammar"))),
        }
    }

    /// `(#name? @capture args...)`, kept for the pattern; false (nothing read) when what
    /// follows is not a predicate.
    fn predicate(&mut self) -> Result<bool, String> {
        let start = self.at;
        if self.peek() != Some('(') {
            return Ok(false);
        }
        self.at += 1;
        if self.peek() != Some('#') {
            self.at = start;
            return Ok(false);
        }
        self.at += 1;
        let operator = self.name().to_string();
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Some(')') => {
                    self.at += 1;
                    break;
                }
                Some('@') => {
                    self.at += 1;
                    let name = self.name().to_string();
                    args.push(Operand::Capture(self.capture_number(&name)));
                }
                Some('"') => args.push(Operand::Text(self.string()?)),
                Some(c) => return Err(self.error(&format!("unexpected `{c}` in #{operator}"))),
                None => return Err(self.error(&format!("unclosed #{operator}"))),
            }
        }
        match args.first() {
            Some(&Operand::Capture(capture)) => {
                args.remove(0);
                self.predicates.push((operator, capture, args));
                Ok(true)
            }
            _ => Err(self.error(&format!("#{operator} needs a capture as its first argument"))),
        }
    }
}

fn plain(test: Test) -> Step {
    Step { test, field: None, captures: Vec::new(), children: Vec::new(), immediate: false, last: false }
}
