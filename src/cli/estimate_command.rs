//! `oomlint estimate`: weights + gradients + optimizer state from the parameter count,
//! and the activation line from measured runs, turned into a verdict for a card.

use super::{EXIT_CLEAN, EXIT_ERROR, ListFormat};
use crate::estimate::{self, LinearFit, Optimizer, Precision};
use crate::explain::human;
use crate::measure::{MIB, device};
use serde_json::{Value, json};

#[derive(Debug, clap::Args)]
pub struct EstimateArgs {
    /// Parameter count: 7B, 125M, 350k, 1.5e9.
    #[arg(long, allow_hyphen_values = true)]
    pub params: Option<String>,
    #[arg(long, value_enum, default_value_t = Optimizer::Adam)]
    pub optimizer: Optimizer,
    #[arg(long, value_enum, default_value_t = Precision::Fp32)]
    pub precision: Precision,
    /// The card's memory (24GiB, 80GB); default: the first CUDA device's, when there is one.
    #[arg(long, allow_hyphen_values = true)]
    pub gpu_memory: Option<String>,
    /// A measured run, BATCH:MEMORY (MiB unless a unit is given); two or more fit the
    /// activation line.
    #[arg(long, allow_hyphen_values = true)]
    pub measured: Vec<String>,
    /// Predict the memory at this batch size (with --measured).
    #[arg(long)]
    pub batch_size: Option<u64>,
    /// Share of the card kept free when choosing the largest batch, in percent.
    #[arg(long, default_value_t = 10.0)]
    pub margin: f64,
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub output_format: ListFormat,
}

pub fn run(args: EstimateArgs) -> u8 {
    match estimate(&args) {
        Ok((text, value)) => {
            match args.output_format {
                ListFormat::Text => print!("{text}"),
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default()),
            }
            EXIT_CLEAN
        }
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

fn name(value: impl clap::ValueEnum) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

fn count_words(count: f64) -> String {
    match count {
        c if c >= 1e12 => format!("{:.2} T", c / 1e12),
        c if c >= 1e9 => format!("{:.2} B", c / 1e9),
        c if c >= 1e6 => format!("{:.2} M", c / 1e6),
        c => format!("{c:.0}"),
    }
}

fn gb(bytes: f64) -> String {
    format!("{:.1} GB", bytes / 1e9)
}

fn estimate(args: &EstimateArgs) -> Result<(String, Value), String> {
    if args.params.is_none() && args.measured.is_empty() {
        return Err("give --params (weights, gradients, optimizer state) and/or two --measured runs".into());
    }
    if !(0.0..100.0).contains(&args.margin) {
        return Err(format!("--margin {}: a percentage from 0 to 100", args.margin));
    }
    let (capacity, source) = match &args.gpu_memory {
        Some(text) => (Some(estimate::parse_memory("--gpu-memory", text)?), "--gpu-memory".to_owned()),
        None => match device::probe() {
            Ok(facts) => (Some(facts.total_bytes as f64), format!("{} (device 0)", facts.name)),
            Err(reason) => (None, reason),
        },
    };
    let mut text = String::new();
    let mut value = json!({ "capacity_bytes": capacity, "capacity_source": source });

    if let Some(params) = &args.params {
        let count = estimate::parse_count(params)?;
        let per = estimate::bytes_per_parameter(args.optimizer, args.precision);
        let parts = [("weights", per.weights), ("gradients", per.gradients), ("optimizer state", per.optimizer)];
        let total = count * (per.weights + per.gradients + per.optimizer);
        text.push_str(&format!(
            "{} parameters, {}, {}\n",
            count_words(count),
            name(args.optimizer),
            name(args.precision)
        ));
        for (name, bytes) in parts {
            text.push_str(&format!("  {name:<16} {:>10}  ({bytes} bytes per parameter)\n", gb(count * bytes)));
        }
        text.push_str(&format!(
            "  {:<16} {:>10}  ({}) before the first sample; activations come on top\n",
            "total",
            gb(total),
            human(total)
        ));
        value["params"] = json!(count);
        value["optimizer"] = json!(args.optimizer);
        value["precision"] = json!(args.precision);
        value["bytes_per_parameter"] = json!(per);
        value["weights_bytes"] = json!(count * per.weights);
        value["gradients_bytes"] = json!(count * per.gradients);
        value["optimizer_bytes"] = json!(count * per.optimizer);
        value["static_bytes"] = json!(total);
        if let Some(capacity) = capacity {
            let (verdict, line) = if total <= capacity {
                (
                    "fits",
                    format!(
                        "fits: {} of the card's {} is left for activations ({:.0}% of it)",
                        human(capacity - total),
                        human(capacity),
                        100.0 * (capacity - total) / capacity
                    ),
                )
            } else {
                (
                    "does-not-fit",
                    format!(
                        "does not fit at any batch size: it needs {}, the card has {} (short by {})",
                        human(total),
                        human(capacity),
                        human(total - capacity)
                    ),
                )
            };
            text.push_str(&format!("verdict: {line}\n"));
            value["static_verdict"] = json!(verdict);
        }
    }

    if !args.measured.is_empty() {
        let points = args.measured.iter().map(|m| estimate::parse_measured(m)).collect::<Result<Vec<_>, _>>()?;
        let fit = LinearFit::through(&points)?;
        text.push_str(&format!(
            "activation line from {} runs: {:.1} MiB fixed + {:.2} MiB per sample\n",
            points.len(),
            fit.fixed / MIB,
            fit.per_sample / MIB
        ));
        value["fixed_mib"] = json!((fit.fixed / MIB * 100.0).round() / 100.0);
        value["per_sample_mib"] = json!((fit.per_sample / MIB * 1000.0).round() / 1000.0);
        if let Some(batch) = args.batch_size {
            let predicted = fit.predict(batch as f64);
            text.push_str(&format!("  batch {batch}: {:.0} MiB predicted\n", predicted / MIB));
            value["predicted_mib"] = json!((predicted / MIB * 10.0).round() / 10.0);
        }
        match capacity {
            Some(capacity) => {
                let budget = capacity * (1.0 - args.margin / 100.0);
                let largest = fit.largest_batch(budget);
                match largest {
                    Some(batch) => text.push_str(&format!(
                        "verdict: the largest batch that fits is {batch} ({:.0} MiB of {} with {}% kept free)\n",
                        fit.predict(batch as f64) / MIB,
                        human(capacity),
                        args.margin
                    )),
                    None => text.push_str(&format!(
                        "verdict: not even batch 1 fits: it needs {:.0} MiB of {} with {}% kept free\n",
                        fit.predict(1.0) / MIB,
                        human(capacity),
                        args.margin
                    )),
                }
                value["largest_batch"] = json!(largest);
                value["verdict"] = json!(if largest.is_some() { "fits" } else { "does-not-fit" });
            }
            None => text.push_str(&format!("(no card to fit: {source}; pass --gpu-memory)\n")),
        }
        value["margin_percent"] = json!(args.margin);
    }
    Ok((text, value))
}
