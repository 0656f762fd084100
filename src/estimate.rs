//! `oomlint estimate`: the memory arithmetic that predicts an out-of-memory error before
//! the run. The static part — weights, gradients and optimizer state, P × bytes per
//! parameter — is needed before the first sample; activations grow with the batch, and
//! two measured runs fit that line.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    Sgd,
    SgdMomentum,
    Adam,
    Adamw,
    /// Factored second moments (rows + columns per matrix), no first moment.
    Adafactor,
    /// bitsandbytes-style 8-bit Adam: two 1-byte states.
    Adam8bit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Everything in fp32.
    Fp32,
    /// Mixed precision: fp32 weights, gradients and optimizer state, plus the half
    /// copy of the weights autocast works with.
    Amp,
    /// Weights, gradients and optimizer state in bf16.
    Bf16,
    /// Weights, gradients and optimizer state in fp16.
    Fp16,
}

/// Bytes per parameter for each part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerParameter {
    pub weights: f64,
    pub gradients: f64,
    pub optimizer: f64,
}

pub fn bytes_per_parameter(optimizer: Optimizer, precision: Precision) -> PerParameter {
    // The width optimizer state is kept in: fp32 unless the parameters themselves are half.
    let state = match precision {
        Precision::Fp32 | Precision::Amp => 4.0,
        Precision::Bf16 | Precision::Fp16 => 2.0,
    };
    let (weights, gradients) = match precision {
        Precision::Fp32 => (4.0, 4.0),
        Precision::Amp => (6.0, 4.0),
        Precision::Bf16 | Precision::Fp16 => (2.0, 2.0),
    };
    let optimizer = match optimizer {
        Optimizer::Sgd | Optimizer::Adafactor => 0.0,
        Optimizer::SgdMomentum => state,
        Optimizer::Adam | Optimizer::Adamw => 2.0 * state,
        Optimizer::Adam8bit => 2.0,
    };
    PerParameter { weights, gradients, optimizer }
}

/// A parameter count: `7B`, `125M`, `350k`, `1.5e9`, `350000000`.
pub fn parse_count(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let (number, scale) = match trimmed.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&trimmed[..trimmed.len() - 1], 1e3),
        Some('M') => (&trimmed[..trimmed.len() - 1], 1e6),
        Some('B') | Some('G') => (&trimmed[..trimmed.len() - 1], 1e9),
        Some('T') => (&trimmed[..trimmed.len() - 1], 1e12),
        _ => (trimmed, 1.0),
    };
    match number.trim().parse::<f64>() {
        Ok(value) if value > 0.0 && value.is_finite() => Ok(value * scale),
        Ok(_) => Err(format!("--params `{text}`: the count must be positive")),
        Err(_) => Err(format!("--params `{text}`: expected a count such as 7B, 125M, 350k or 1.5e9")),
    }
}

/// A memory size with its unit (`24GiB`, `80 GB`, `512MiB`); a bare number is refused.
pub fn parse_memory(flag: &str, text: &str) -> Result<f64, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("{flag} `{text}`: sizes cannot be negative"));
    }
    match crate::explain::parse::parse_size(text) {
        Some(bytes) if bytes > 0.0 && bytes.is_finite() => Ok(bytes),
        Some(bytes) if bytes.is_nan() || bytes.is_infinite() => Err(format!("{flag} `{text}`: not a finite size")),
        Some(_) => Err(format!("{flag} `{text}`: the size must be positive")),
        None => {
            Err(format!("{flag} `{text}`: expected a size with a unit: bytes, KiB, MiB, GiB, TiB (or KB, MB, GB, TB)"))
        }
    }
}

/// One measured run, `BATCH:MEMORY` with the memory in MiB unless it has a unit.
pub fn parse_measured(text: &str) -> Result<(f64, f64), String> {
    let error = || format!("--measured `{text}`: expected BATCH:MEMORY, e.g. 16:1239 (MiB) or 16:1.2GiB");
    let (batch, memory) = text.split_once(':').ok_or_else(error)?;
    let batch: f64 = batch.trim().parse().map_err(|_| error())?;
    let memory = memory.trim();
    let bytes = match memory.parse::<f64>() {
        Ok(mib) => mib * 1024.0 * 1024.0,
        Err(_) => parse_memory("--measured", memory)?,
    };
    // `NaN` and `inf` parse as numbers; no run measured them.
    if !batch.is_finite() || !bytes.is_finite() {
        return Err(format!("--measured `{text}`: the batch and the memory must be finite numbers"));
    }
    if batch <= 0.0 || bytes <= 0.0 {
        return Err(format!("--measured `{text}`: the batch and the memory must be positive"));
    }
    Ok((batch, bytes))
}

/// Memory as a line in the batch: `fixed + per_sample × batch`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinearFit {
    pub fixed: f64,
    pub per_sample: f64,
}

impl LinearFit {
    /// The least-squares line through the measurements (exact through two).
    pub fn through(points: &[(f64, f64)]) -> Result<LinearFit, String> {
        if points.len() < 2 {
            return Err("--measured: give at least two runs (two batch sizes) to fit the activation line".into());
        }
        let n = points.len() as f64;
        let mean_batch = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_memory = points.iter().map(|p| p.1).sum::<f64>() / n;
        let spread: f64 = points.iter().map(|p| (p.0 - mean_batch).powi(2)).sum();
        if spread == 0.0 {
            return Err("--measured: the runs need different batch sizes".into());
        }
        let per_sample = points.iter().map(|p| (p.0 - mean_batch) * (p.1 - mean_memory)).sum::<f64>() / spread;
        if per_sample <= 0.0 {
            return Err("--measured: memory does not grow with the batch in these runs".into());
        }
        Ok(LinearFit { fixed: mean_memory - per_sample * mean_batch, per_sample })
    }

    pub fn predict(&self, batch: f64) -> f64 {
        self.fixed + self.per_sample * batch
    }

    /// The largest batch whose predicted memory stays within `budget` bytes.
    pub fn largest_batch(&self, budget: f64) -> Option<u64> {
        let batch = ((budget - self.fixed) / self.per_sample).floor();
        (batch >= 1.0).then_some(batch as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::measure::MIB;

    #[test]
    fn seven_billion_parameters_with_adam_in_fp32_need_112_gb() {
        let per = bytes_per_parameter(Optimizer::Adam, Precision::Fp32);
        let total = 7e9 * (per.weights + per.gradients + per.optimizer);
        assert_eq!(total, 112e9);
        assert_eq!(bytes_per_parameter(Optimizer::Adam8bit, Precision::Fp32).optimizer, 2.0);
        assert_eq!(bytes_per_parameter(Optimizer::SgdMomentum, Precision::Bf16).optimizer, 2.0);
        assert_eq!(bytes_per_parameter(Optimizer::Sgd, Precision::Amp).weights, 6.0);
    }

    #[test]
    fn the_fit_from_two_reference_runs_predicts_the_third_within_one_percent() {
        let fit = LinearFit::through(&[(16.0, 1239.0 * MIB), (64.0, 4896.0 * MIB)]).unwrap();
        let predicted = fit.predict(96.0) / MIB;
        assert!((predicted - 7334.0).abs() / 7334.0 < 0.01, "{predicted}");
        assert_eq!(fit.largest_batch(4896.0 * MIB), Some(64));
    }

    #[test]
    fn bad_arguments_are_clear_errors() {
        assert_eq!(parse_count("7B"), Ok(7e9));
        assert_eq!(parse_count("125m"), Ok(125e6));
        assert_eq!(parse_count("1.5e9"), Ok(1.5e9));
        assert!(parse_count("-7B").unwrap_err().contains("positive"));
        assert!(parse_count("seven").unwrap_err().contains("expected a count"));
        assert_eq!(parse_memory("--gpu-memory", "24GiB"), Ok(24.0 * 1024.0 * MIB));
        assert!(parse_memory("--gpu-memory", "24").unwrap_err().contains("with a unit"));
        assert!(parse_memory("--gpu-memory", "24 parsecs").unwrap_err().contains("with a unit"));
        assert!(parse_memory("--gpu-memory", "-24GiB").unwrap_err().contains("negative"));
        assert_eq!(parse_measured("16:1239"), Ok((16.0, 1239.0 * MIB)));
        assert!(parse_measured("16").is_err() && parse_measured("-16:1239").is_err());
        assert!(LinearFit::through(&[(16.0, 1.0)]).unwrap_err().contains("at least two"));
        assert!(LinearFit::through(&[(16.0, 1.0), (16.0, 2.0)]).unwrap_err().contains("different batch"));
    }
}
