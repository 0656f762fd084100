//! A rule's cost as quoted from the measurements: the figures its declared [`Cost`]
//! names, from the best run there is, or the behaviour its evidence shows; and the docs'
//! "Measured cost" section rewritten to say so.

use super::measurements::{Figures, Measurements, RunRecord, Variant};
use super::{Backend, format_mib};
use crate::rules::{Cost, DeviceMeasure, Evidence, Figure, Rule};
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

impl DeviceMeasure {
    /// What the GPU pair shows, or why it does not show it.
    pub fn verdict(self, bad: &Figures, good: &Figures) -> Result<String, String> {
        match self {
            DeviceMeasure::StepTime { bad: bad_words, good: good_words } => {
                let time = |f: &Figures, which: &str| {
                    f.seconds_per_step().ok_or_else(|| format!("{which}.py recorded fewer than 3 steps"))
                };
                let (bad_s, good_s) = (time(bad, "bad")?, time(good, "good")?);
                let driver = |f: &Figures| f.driver_bytes_per_step().map(format_mib).unwrap_or_else(|| "-".into());
                Ok(format!(
                    "{:.2} ms per step {bad_words} vs {:.2} ms {good_words}; {} obtained from the driver \
                     (`cudaMalloc`) per step vs {}",
                    bad_s * 1e3,
                    good_s * 1e3,
                    driver(bad),
                    driver(good)
                ))
            }
            DeviceMeasure::AllocatorSettings => {
                fn settings<'f>(f: &'f Figures, which: &str) -> Result<&'f str, String> {
                    f.stdout
                        .lines()
                        .find_map(|l| l.strip_prefix("allocator settings: "))
                        .map(str::trim)
                        .ok_or_else(|| format!("{which}.py printed no `allocator settings:` line"))
                }
                let (bad_settings, good_settings) = (settings(bad, "bad")?, settings(good, "good")?);
                if bad_settings == good_settings {
                    return Err(format!("both report the same settings: `{bad_settings}`"));
                }
                Ok(format!(
                    "after the first CUDA allocation the allocator reports `{bad_settings}` when the variable is set \
                     after CUDA was first used, `{good_settings}` when it is set before"
                ))
            }
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
    if let Cost::Device { measure, documented, source } = rule.cost {
        return match gpu_pair(rule.code, measurements) {
            Some((bad, good)) => {
                Ok(format!("{} (measured: {})", measure.verdict(&bad.figures, &good.figures)?, provenance(bad)))
            }
            None => Ok(not_measured_yet(documented, source)),
        };
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

/// The quote of a device cost no GPU has measured: what the documentation says, and where.
pub fn not_measured_yet(documented: &str, source: &str) -> String {
    format!("not measured here yet (it needs a CUDA GPU: `scripts/measure-gpu`); documented: {documented} ({source})")
}

/// The bad/good pair a GPU ran, if any.
fn gpu_pair<'m>(code: &str, measurements: &'m Measurements) -> Option<(&'m RunRecord, &'m RunRecord)> {
    let find = |variant| {
        measurements.runs.iter().find(|r| r.rule == code && r.variant == variant && r.figures.backend == Backend::Cuda)
    };
    Some((find(Variant::Bad)?, find(Variant::Good)?))
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

    fn gpu_figures(step_seconds: Vec<f64>, step_driver_bytes: Vec<u64>, stdout: &str) -> Figures {
        Figures {
            backend: Backend::Cuda,
            device: "NVIDIA H200".into(),
            torch: "2.15.0".into(),
            python: "3.11".into(),
            peak_bytes: 1,
            end_bytes: 1,
            step_bytes: Vec::new(),
            growth_per_step_bytes: None,
            step_seconds,
            step_driver_bytes,
            wall_s: 1.0,
            warnings: Vec::new(),
            stdout: stdout.into(),
        }
    }

    #[test]
    fn device_costs_quote_the_gpu_figures_once_recorded() {
        let time = DeviceMeasure::StepTime { bad: "with it", good: "without it" };
        let mib = 1024 * 1024;
        // Steps start at these times; the first step (warm-up) is left out of the median.
        let bad =
            gpu_figures(vec![0.0, 0.5, 0.53, 0.56, 0.60], vec![0, 100 * mib, 200 * mib, 300 * mib, 400 * mib], "");
        let good =
            gpu_figures(vec![0.0, 0.5, 0.51, 0.52, 0.53], vec![0, 100 * mib, 100 * mib, 100 * mib, 100 * mib], "");
        assert_eq!(
            time.verdict(&bad, &good).unwrap(),
            "30.00 ms per step with it vs 10.00 ms without it; 100 MiB obtained from the driver (`cudaMalloc`) per \
             step vs 0.0 MiB"
        );
        let short = gpu_figures(vec![0.0, 0.5], Vec::new(), "");
        assert!(time.verdict(&short, &good).unwrap_err().contains("fewer than 3 steps"));

        let settings = DeviceMeasure::AllocatorSettings;
        let late = gpu_figures(Vec::new(), Vec::new(), "allocator settings: (defaults)\n");
        let early = gpu_figures(Vec::new(), Vec::new(), "allocator settings: expandable_segments:True\n");
        let quote = settings.verdict(&late, &early).unwrap();
        assert!(
            quote.contains("`(defaults)` when the variable is set after")
                && quote.contains("`expandable_segments:True`")
        );
        assert!(settings.verdict(&early, &early).is_err(), "the same settings show nothing");
    }

    #[test]
    fn a_device_cost_without_a_gpu_run_says_it_is_not_measured_and_quotes_its_source() {
        let rule = crate::rules::find("OOM006").unwrap();
        let quote = quote(rule, &Measurements::default()).unwrap();
        assert!(quote.starts_with("not measured here yet") && quote.contains("cuda-memory-management"), "{quote}");
        let Cost::Device { documented, .. } = rule.cost else { panic!("OOM006 has a device cost") };
        assert!(quote.contains(documented));
    }

    #[test]
    fn long_quotes_wrap_at_the_docs_width() {
        let quote = "word ".repeat(50);
        let wrapped = wrap(&quote, 90);
        assert!(wrapped.lines().all(|l| l.len() <= 90) && wrapped.lines().count() > 2);
        assert_eq!(wrapped.split_whitespace().count(), 50);
    }
}
