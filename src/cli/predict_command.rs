//! `oomlint predict FILE.py:FUNCTION --batch-size N`: the peak memory of one training step
//! of the user's, split by category and by line, run on the emulated CUDA device, and the
//! largest batch that fits a card.

use super::{EXIT_CLEAN, EXIT_ERROR, ListFormat};
use crate::estimate::parse_memory;
use crate::measure::predict::{self, Card, Prediction, StepRecord};
use crate::measure::process::{RunError, Runner};
use crate::measure::python;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Amp {
    Fp16,
    Bf16,
}

#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// The step to run: a Python file and the function in it that builds the model, the
    /// optimizer and a batch of the given size, and runs one training step
    /// (`train.py:step`, called as `step(batch_size)`).
    pub target: String,
    #[arg(long)]
    pub batch_size: u64,
    /// The card's memory (`24GiB`, `80GB`): also search the largest batch that fits.
    #[arg(long, conflicts_with = "gpu")]
    pub gpu_memory: Option<String>,
    /// A card by name (h200, h100, a100, a100-40gb, l40s, a10g, l4, rtx4090, rtx3090, v100,
    /// t4, gtx1070), instead of --gpu-memory.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Percent of the card kept free (fragmentation, the CUDA context, other processes).
    #[arg(long, default_value_t = 10.0)]
    pub margin: f64,
    /// Run the step under `torch.autocast("cuda", dtype)` (for a step that does not use
    /// autocast itself).
    #[arg(long, value_enum)]
    pub amp: Option<Amp>,
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub output_format: ListFormat,
    /// The Python with PyTorch (default: $OOMLINT_PYTHON, else the environment
    /// scripts/ensure-venv creates, else python3).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Also write the step at --batch-size as a CUDA memory snapshot (a .pickle that
    /// `oomlint explain`, its --plot and the editor's snapshot hints read).
    #[arg(long, value_name = "FILE.pickle")]
    pub snapshot: Option<PathBuf>,
    /// Seconds the prediction (every batch size tried) may take.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

pub fn run(args: PredictArgs) -> u8 {
    match predict(&args) {
        Ok(prediction) => {
            match args.output_format {
                ListFormat::Text => print!("{}", prediction.to_text()),
                ListFormat::Json => {
                    println!("{}", serde_json::to_string_pretty(&prediction.to_json()).unwrap_or_default())
                }
            }
            EXIT_CLEAN
        }
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_ERROR
        }
    }
}

fn predict(args: &PredictArgs) -> Result<Prediction, String> {
    let (file, function) = split_target(&args.target)?;
    if !file.is_file() {
        return Err(format!("{}: no such file", file.display()));
    }
    if args.batch_size == 0 {
        return Err("--batch-size must be at least 1".into());
    }
    let card = card(args)?;
    let runner = Runner::new(python::interpreter(args.python.as_deref()), Duration::from_secs(args.timeout))
        .map_err(|e| format!("cannot prepare the runner: {e}"))?;
    let mut argv = vec![
        "--file".to_owned(),
        file.display().to_string(),
        "--function".to_owned(),
        function.to_owned(),
        "--batch-size".to_owned(),
        args.batch_size.to_string(),
    ];
    if let Some(amp) = args.amp {
        argv.extend(["--amp".to_owned(), if amp == Amp::Fp16 { "fp16" } else { "bf16" }.to_owned()]);
    }
    argv.extend(predict::modelled_components());
    if let Some(card) = &card {
        argv.extend(["--budget".to_owned(), (card.usable() as u64).to_string()]);
    }
    if let Some(snapshot) = &args.snapshot {
        argv.extend([
            "--snapshot".to_owned(),
            std::path::absolute(snapshot).unwrap_or(snapshot.clone()).display().to_string(),
        ]);
    }
    let record = runner.predict(&argv).map_err(|e| match e {
        RunError::Spawn(why) => format!("cannot run Python `{}`: {why}", runner.python().display()),
        RunError::TimedOut(limit) => {
            format!("the prediction took longer than {} s and was stopped (--timeout)", limit.as_secs())
        }
        error @ RunError::StartUpTimedOut(_) => error.to_string(),
        RunError::Crashed { status, .. } if status.contains("signal: 9") => format!(
            "the step was killed ({status}), most likely by the kernel's out-of-memory killer: the host ran out of \
             memory even with fake tensors"
        ),
        RunError::Crashed { stderr, .. } | RunError::NoRecord { stderr } => {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
            format!("the step could not be run: {}", last.trim())
        }
        RunError::Refused(why) => why,
    })?;
    if let Some(error) = record.get("error").and_then(|e| e.as_str()) {
        return Err(error.to_owned());
    }
    let step: StepRecord =
        serde_json::from_value(record).map_err(|e| format!("the runner's record is incomplete: {e}"))?;
    Ok(Prediction { target: args.target.clone(), step, card })
}

/// `path/to/file.py:function`, split at the last colon (a Windows drive has one too).
fn split_target(target: &str) -> Result<(PathBuf, &str), String> {
    let usage = || format!("`{target}`: expected FILE.py:FUNCTION, e.g. train.py:step");
    let (file, function) = target.rsplit_once(':').ok_or_else(usage)?;
    let identifier = function.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && function.chars().all(|c| c.is_alphanumeric() || c == '_');
    if file.is_empty() || !identifier {
        return Err(usage());
    }
    Ok((PathBuf::from(file), function))
}

fn card(args: &PredictArgs) -> Result<Option<Card>, String> {
    if !(0.0..100.0).contains(&args.margin) {
        return Err(format!("--margin {}: a percentage from 0 to 100", args.margin));
    }
    if let Some(text) = &args.gpu_memory {
        let bytes = parse_memory("--gpu-memory", text)?;
        return Ok(Some(Card {
            label: format!("a {} card", crate::measure::format_mib(bytes)),
            bytes,
            margin: args.margin,
        }));
    }
    if let Some(name) = &args.gpu {
        let (label, bytes) = predict::gpu(name).ok_or_else(|| {
            let known: Vec<&str> = predict::GPUS.iter().map(|g| g.0).collect();
            format!("--gpu `{name}`: not a card oomlint knows ({}); pass --gpu-memory instead", known.join(", "))
        })?;
        return Ok(Some(Card { label: label.to_owned(), bytes, margin: args.margin }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_file_and_a_function_name() {
        assert_eq!(split_target("train.py:step").unwrap(), (PathBuf::from("train.py"), "step"));
        assert_eq!(split_target("C:\\x\\train.py:step").unwrap().1, "step");
        assert!(split_target("train.py").unwrap_err().contains("FILE.py:FUNCTION"));
        assert!(split_target("train.py:").is_err());
        assert!(split_target("train.py:a.b").is_err());
        assert!(split_target(":step").is_err());
    }
}
