//! A rule's cost as quoted from the measurements: the figures its declared [`Cost`]
//! names, from the best run there is, or the behaviour its evidence shows; and the docs'
//! "Measured cost" section rewritten to say so.

use super::measurements::{Figures, Measurements, RunRecord, Variant};
use super::{Backend, format_mib};
use crate::rules::{Cost, Evidence, Figure, Rule};
use std::sync::LazyLock;

impl Figure {
    pub fn bytes(self, figures: &Figures) -> f64 {
        match self {
            Figure::Peak => figures.peak_bytes as f64,
            Figure::End => figures.end_bytes as f64,
            Figure::Growth => figures.end_bytes as f64 - figures.step_bytes.first().copied().unwrap_or(0) as f64,
            Figure::PerStep => figures.growth_per_step_bytes.unwrap_or(0.0),
        }
    }
}

impl Evidence {
    /// What the pair shows, or why it does not show the rule's evidence.
    pub fn verdict(self, bad: &Figures, good: &Figures) -> Result<String, String> {
        match self {
            Evidence::Deprecation { what } => Evidence::Warning { category: "FutureWarning", what }.verdict(bad, good),
            Evidence::Warning { category, what } => {
                let warning = bad
                    .warnings
                    .iter()
                    .find(|w| w.category == category)
                    .ok_or_else(|| format!("bad.py emitted no {category}"))?;
                if let Some(w) = good.warnings.iter().find(|w| w.category == category) {
                    return Err(format!("good.py emitted a {category} too: {}", w.message));
                }
                if bad.stdout != good.stdout {
                    return Err(format!("outputs differ: bad.py {:?}, good.py {:?}", bad.stdout, good.stdout));
                }
                Ok(format!(
                    "{what} emits {category}s (\"{}\"); the fixed script emits none and prints the same output",
                    first_sentence(&warning.message)
                ))
            }
            Evidence::GradientDifference => {
                let (bad_difference, good_difference) = (gradient_difference(bad)?, gradient_difference(good)?);
                if bad_difference <= 0.0 {
                    return Err(format!("bad.py's gradients match the reference ({bad_difference})"));
                }
                if good_difference != 0.0 {
                    return Err(format!("good.py's gradients differ from the reference ({good_difference})"));
                }
                Ok(format!(
                    "gradients differ from the un-checkpointed model by up to {bad_difference} with the late-bound \
                     block, and by {good_difference} when it is bound"
                ))
            }
        }
    }
}

fn gradient_difference(figures: &Figures) -> Result<f64, String> {
    figures
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("max gradient difference "))
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| format!("no `max gradient difference` line in {:?}", figures.stdout))
}

fn first_sentence(message: &str) -> &str {
    let message = message.trim();
    match message.find(". ") {
        Some(end) => &message[..=end],
        None => message,
    }
}

/// The measurements compiled into this binary (`fixtures/measurements.json`).
pub static COMPILED: LazyLock<Measurements> =
    LazyLock::new(|| Measurements::parse(include_str!("../../fixtures/measurements.json")).unwrap_or_default());

impl Rule {
    /// The cost as measured, quoted by diagnostics, hovers and docs.
    pub fn measured_cost(&self) -> String {
        quote(self, &COMPILED).unwrap_or_else(|why| format!("not measured yet ({why})"))
    }
}

/// The rule's cost as quoted in diagnostics, hovers and docs: the figures of the best
/// run there is (a GPU's, else real CPU compute, else the fake backend), and where they
/// came from.
pub fn quote(rule: &Rule, measurements: &Measurements) -> Result<String, String> {
    if let Cost::Housekeeping { why } = rule.cost {
        return Ok(format!("no memory cost of its own: {why}"));
    }
    let (bad, good) = best_pair(rule.code, measurements)?;
    let claim = match (rule.cost.memory(), rule.cost) {
        (Some((figure, bad_words, good_words)), _) => format!(
            "{} {bad_words} vs {} {good_words}",
            format_mib(figure.bytes(&bad.figures)),
            format_mib(figure.bytes(&good.figures))
        ),
        (None, Cost::Evidence(evidence)) => {
            format!("no memory cost: {}", evidence.verdict(&bad.figures, &good.figures)?)
        }
        (None, _) => return Err(format!("{}: no figure or evidence to quote", rule.code)),
    };
    Ok(format!("{claim} (measured: {})", provenance(bad)))
}

fn provenance(run: &RunRecord) -> String {
    let figures = &run.figures;
    match &run.gpu {
        Some(gpu) => format!("{}, {} backend, torch {}", gpu.name, figures.backend, figures.torch),
        // A device the fake backend emulated (`cuda (fake tensors)`) is named.
        None if figures.device.contains("fake tensors") => {
            format!("{} backend, {}, torch {}", figures.backend, figures.device, figures.torch)
        }
        None => format!("{} backend, torch {}", figures.backend, figures.torch),
    }
}

/// The bad/good pair from the most telling backend that has both.
pub fn best_pair<'m>(code: &str, measurements: &'m Measurements) -> Result<(&'m RunRecord, &'m RunRecord), String> {
    for backend in [Backend::Cuda, Backend::Cpu, Backend::Fake] {
        let find = |variant| {
            measurements.runs.iter().find(|r| r.rule == code && r.variant == variant && r.figures.backend == backend)
        };
        if let (Some(bad), Some(good)) = (find(Variant::Bad), find(Variant::Good)) {
            return Ok((bad, good));
        }
    }
    Err(format!("no bad/good pair for {code} in fixtures/measurements.json; run `oomlint measure --write`"))
}

const COST_HEADING: &str = "## Measured cost\n";

/// The rule docs with their "Measured cost" section saying `quote` (wrapped to the docs'
/// width), the section added before "## Example" when missing.
pub fn with_cost_section(docs: &str, quote: &str) -> String {
    let body = format!("{COST_HEADING}{}\n\n", wrap(quote, 90));
    if let Some(start) = docs.find(COST_HEADING) {
        let rest = &docs[start + COST_HEADING.len()..];
        let end = rest.find("\n## ").map(|i| start + COST_HEADING.len() + i + 1).unwrap_or(docs.len());
        return format!("{}{body}{}", &docs[..start], &docs[end..]);
    }
    match docs.find("## Example") {
        Some(at) => format!("{}{body}{}", &docs[..at], &docs[at..]),
        None => format!("{}\n\n{}", docs.trim_end(), body.trim_end()),
    }
}

/// The text of the docs' "Measured cost" section, unwrapped.
pub fn cost_section(docs: &str) -> Option<String> {
    let start = docs.find(COST_HEADING)? + COST_HEADING.len();
    let rest = &docs[start..];
    let body = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    Some(body.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn wrap(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_section_is_replaced_in_place_or_added_before_the_example() {
        let docs = "# X\n\n## Why is this bad?\nBecause.\n\n## Measured cost\nold\nfigures\n\n## Example\ncode\n";
        let updated = with_cost_section(docs, "new figures");
        assert_eq!(
            updated,
            "# X\n\n## Why is this bad?\nBecause.\n\n## Measured cost\nnew figures\n\n## Example\ncode\n"
        );
        assert_eq!(cost_section(&updated).as_deref(), Some("new figures"));
        let added = with_cost_section("# X\n\n## Example\ncode\n", "figures");
        assert_eq!(added, "# X\n\n## Measured cost\nfigures\n\n## Example\ncode\n");
        assert_eq!(with_cost_section(&added, "figures"), added, "rewriting the same quote changes nothing");
    }

    #[test]
    fn long_quotes_wrap_at_the_docs_width() {
        let quote = "word ".repeat(50);
        let wrapped = wrap(&quote, 90);
        assert!(wrapped.lines().all(|l| l.len() <= 90) && wrapped.lines().count() > 2);
        assert_eq!(wrapped.split_whitespace().count(), 50);
    }
}
