//! Tests of a file's whole text that decide whether a rule could match it
//! (`Rule::could_match`) before anything is parsed: does it call something named like a
//! network, name a loss, mention evaluation.
//!
//! Each test answers exactly as a case-insensitive Unicode regex would (`(?i)` with
//! Unicode's `\w` and `\s`; the tests below hold each to its regex), but is a scan of the
//! text. Compiling the regexes took longer than running them: 1.3 ms for the three of
//! `facts::heuristics` at every start of `oomlint check` or the server, 2.1 ms more for
//! their Unicode forms at the first non-ASCII file. The scans also run faster than the
//! regexes did: over diffusers' `examples/`, 1.5 ms against 2.1 for a call named like a
//! network, 2.0 against 4.8 for a graph's source.

/// Whether `text` holds `needle`: the rules' first tests of a whole file. A vectorised
/// search reads a file several times faster than `str::contains`, and every file meets a
/// dozen of these before anything is parsed.
pub fn contains(text: &str, needle: &str) -> bool {
    memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some()
}

/// Whether `text` holds one of `needles` (`contains` of each, in turn).
pub fn contains_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|needle| contains(text, needle))
}

/// Whether `test`, a scan that compares ASCII letters case aside, holds of `text` as a
/// case-insensitive Unicode regex would: Unicode's simple case folding also maps two
/// characters to ASCII letters, the Kelvin sign to `k` and the long s to `s`. The text is
/// scanned as it is first: a match there is a match (both are word characters, as their
/// letters are), and most texts match early, where looking for the two first would read
/// the whole text. Only a text without a match that holds one of them is scanned again
/// with them replaced.
pub fn case_aside(text: &str, test: impl Fn(&str) -> bool) -> bool {
    const KELVIN: char = '\u{212A}';
    const LONG_S: char = '\u{17F}';
    if test(text) {
        return true;
    }
    // Searched for as bytes: a search by `char` decodes the whole text.
    let holds = |c: char| memchr::memmem::find(text.as_bytes(), c.encode_utf8(&mut [0; 4]).as_bytes()).is_some();
    !text.is_ascii() && (holds(KELVIN) || holds(LONG_S)) && test(&text.replace(KELVIN, "k").replace(LONG_S, "s"))
}

/// Whether some `(` in `text` has, past the spaces before it, text that `before` accepts
/// (all the text up to there; `last_word` of it is the callee's name, if any).
pub fn some_call(text: &str, before: impl Fn(&str) -> bool) -> bool {
    memchr::memchr_iter(b'(', text.as_bytes()).any(|open| before(&text[..space_before(text, open)]))
}

/// Where the spaces (Unicode's `\s`) that end `text[..at]` start.
fn space_before(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut start = at;
    while start > 0 && bytes[start - 1].is_ascii_whitespace() {
        start -= 1;
    }
    // `\s` also takes the vertical tab and Unicode's spaces.
    if start > 0 && (!bytes[start - 1].is_ascii() || bytes[start - 1] == 0x0b) {
        start = text[..start].trim_end_matches(char::is_whitespace).len();
    }
    start
}

/// The run of word characters (`\w`) that ends `text`: the name a call's `(` follows.
pub fn last_word(text: &str) -> &str {
    let bytes = text.as_bytes();
    let at = text.len();
    let mut start = at;
    // Byte by byte while ASCII (most code); by character past anything else.
    while start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
        start -= 1;
    }
    if start > 0 && !bytes[start - 1].is_ascii() {
        start = text[..start].trim_end_matches(is_word_character).len();
    }
    &text[start..at]
}

/// Unicode's `\w`, as regexes read it.
pub fn is_word_character(c: char) -> bool {
    if c.is_ascii() { c.is_ascii_alphanumeric() || c == '_' } else { regex_syntax::is_word_character(c) }
}

/// Whether `word`, a short text, holds one of `needles` (lowercase ASCII, not empty),
/// case-insensitively. One pass over the word, comparing a needle only where its first
/// letter is: asked of every spelling of a file, where trying each needle at each place
/// cost four times as much.
pub fn holds_ignore_case(word: &str, needles: &[&str]) -> bool {
    let bytes = word.as_bytes();
    (0..bytes.len()).any(|at| {
        let (first, rest) = (bytes[at].to_ascii_lowercase(), &bytes[at..]);
        needles.iter().any(|needle| {
            let needle = needle.as_bytes();
            needle.first() == Some(&first)
                && rest.len() >= needle.len()
                && rest[..needle.len()].eq_ignore_ascii_case(needle)
        })
    })
}

/// A search for any of `needles` (ASCII), case-insensitively: a few microseconds to
/// build, where a regex of the same words takes a few hundred.
pub fn ignoring_case(needles: &[&str]) -> aho_corasick::AhoCorasick {
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(needles)
        .expect("a few short needles make a small automaton")
}

/// Whether `text` ends with one of `suffixes` (lowercase ASCII), case-insensitively.
pub fn ends_with_any_ignore_case(text: &str, suffixes: &[&str]) -> bool {
    suffixes.iter().any(|suffix| {
        text.len() >= suffix.len()
            && text.as_bytes()[text.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
    })
}

/// Whether `text` has one of `words` (lowercase ASCII) right after `prefix`
/// and before a word boundary (`.loss` in `out.loss,` but not in `out.losses`),
/// case-insensitively.
pub fn word_after(text: &str, prefix: u8, words: &[&str]) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(prefix, bytes).any(|at| {
        let after = at + 1;
        words.iter().any(|word| {
            let end = after + word.len();
            bytes.get(after..end).is_some_and(|found| found.eq_ignore_ascii_case(word.as_bytes()))
                && text[end..].chars().next().is_none_or(|next| !is_word_character(next))
        })
    })
}

/// Whether `text` has `word` with a word boundary on each side (`\bword\b`); `word` is
/// made of word characters.
pub fn has_word(text: &str, word: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), word.as_bytes()).any(|at| {
        text[..at].chars().next_back().is_none_or(|c| !is_word_character(c))
            && text[at + word.len()..].chars().next().is_none_or(|c| !is_word_character(c))
    })
}

/// Whether `text` has `word` with a word boundary on each side and, after it on the same
/// line, `then` (`\bword\b[^\n]*then`, `then` taken literally); `word` is made of word
/// characters.
pub fn word_then_on_line(text: &str, word: &str, then: &str) -> bool {
    memchr::memmem::find_iter(text.as_bytes(), word.as_bytes()).any(|at| {
        let rest = &text[at + word.len()..];
        text[..at].chars().next_back().is_none_or(|c| !is_word_character(c))
            && rest.chars().next().is_none_or(|c| !is_word_character(c))
            && rest.split('\n').next().is_some_and(|line| line.contains(then))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use regex::Regex;

    /// `holds_ignore_case` answers as a byte regex of its needles, ASCII case aside, over
    /// words built from pieces: needles cut short, at either end, in mixed case, next to
    /// non-ASCII letters (whose bytes are no ASCII letter's, the Kelvin sign among them).
    #[test]
    fn a_word_holds_a_needle_as_a_regex_finds_it() {
        let needles = ["val", "test", "predict", "infer", "holdout", "v"];
        let pieces =
            ["", "VAL", "va", "Te", "sT", "tEST", "predic", "t", "INFER", "_", "hold", "OUT", "é", "\u{212A}", "x"];
        for needles in [&needles[..5], &needles[..], &needles[1..2]] {
            let regex = regex::bytes::Regex::new(&format!("(?i-u){}", needles.join("|"))).unwrap();
            let mut held = 0;
            for a in pieces {
                for b in pieces {
                    for c in pieces {
                        let word = format!("{a}{b}{c}");
                        let expected = regex.is_match(word.as_bytes());
                        assert_eq!(holds_ignore_case(&word, needles), expected, "{word:?} {needles:?}");
                        held += usize::from(expected);
                    }
                }
            }
            assert!(held > 100 && held < pieces.len().pow(3), "both answers are tried");
        }
    }

    /// Texts that tell the scans from their regexes apart if anything does: spaces of
    /// every kind before `(`, word characters beyond ASCII, the two non-ASCII letters
    /// that fold to ASCII, matches at the very start and end.
    pub(crate) const TEXTS: &[&str] = &[
        "",
        "(",
        "model(x)",
        "y = Model (x)",
        "y = subModel\t\n(x)",
        "y = networ\u{212A}(x)",
        "y = lo\u{17F}s(x)",
        "y = café(x)",
        "y = modelé(x)",
        "y = model\u{a0}(x)",
        "y = model\u{3000}(x)",
        "y = model\u{b}(x)",
        "y = Net\u{c}\u{a0} (x)",
        "model",
        "val_loss = criterion_x(y)",
        "CRITERIA2 (y)",
        "loss_é (y)",
        "éloss (y)",
        "F.cross_entropy (a, b)",
        "F.Kl_Div(a)",
        "out.loss",
        "out.losses",
        "out.logits,",
        "out.logitsé",
        "out.LOSS.item()",
        "x = 1  # no call here",
        "Evaluation",
        "te\u{17F}t",
        "VALID",
        "predicts",
        "inferred",
        "hold out",
        "the amp",
        "camp",
        "amp_",
        "amp.é",
        "éamp",
        "rnn(x)",
        "self.lstm_cell (h)",
        "Recurrent_Block(x)",
        "gru",
        "checkpoint_sequential (f)",
        "checkpoint(f)",
        "checkpoints(",
    ];

    fn agree(scan: impl Fn(&str) -> bool, regex: &str) {
        let regex = Regex::new(regex).expect("valid regex");
        for text in TEXTS {
            assert_eq!(case_aside(text, &scan), regex.is_match(text), "{regex} on {text:?}");
        }
        // Every pair joined, so matches fall anywhere in longer texts too.
        for a in TEXTS {
            for b in TEXTS {
                let text = format!("{a}\n{b}");
                assert_eq!(case_aside(&text, &scan), regex.is_match(&text), "{regex} on {text:?}");
            }
        }
    }

    #[test]
    fn a_call_whose_word_holds_a_needle_is_found_as_its_regex_finds_it() {
        agree(
            |t| some_call(t, |before| holds_ignore_case(last_word(before), &["loss", "criterion", "criteria"])),
            r"(?i)(?:loss|criterion|criteria)\w*\s*\(",
        );
        agree(
            |t| {
                some_call(t, |before| {
                    holds_ignore_case(last_word(before), &["rnn", "lstm", "gru", "cell", "recurrent"])
                })
            },
            r"(?i)(?:rnn|lstm|gru|cell|recurrent)\w*\s*\(",
        );
    }

    #[test]
    fn a_call_ending_in_a_word_is_found_as_its_regex_finds_it() {
        let ends_call = |words: &'static [&'static str]| {
            move |t: &str| some_call(t, |before| ends_with_any_ignore_case(before, words))
        };
        agree(ends_call(&["model", "net", "forward"]), r"(?i)(?:model|net|forward)\s*\(");
        agree(ends_call(&["cross_entropy", "kl_div"]), r"(?i)(?:cross_entropy|kl_div)\s*\(");
        agree(
            |t| some_call(t, |b| b.ends_with("checkpoint") || b.ends_with("checkpoint_sequential")),
            r"checkpoint(?:_sequential)?\s*\(",
        );
    }

    #[test]
    fn case_insensitive_words_are_found_as_their_regexes_find_them() {
        let searcher = ignoring_case(&["eval", "val", "test", "predict", "infer", "holdout"]);
        agree(|t| searcher.is_match(t), "(?i)eval|val|test|predict|infer|holdout");
        agree(|t| word_after(t, b'.', &["loss", "logits"]), r"(?i)\.(?:loss|logits)\b");
        agree(|t| has_word(t, "amp"), r"\bamp\b");
        agree(|t| word_then_on_line(t, "out", ".item()"), r"\bout\b[^\n]*\.item\(\)");
        agree(|t| word_then_on_line(t, "model", "(x)"), r"\bmodel\b[^\n]*\(x\)");
    }
}
