//! The command line: `oomlint check`, `oomlint rules`, `oomlint rule CODE`, `oomlint server`,
//! `oomlint measure`.

mod check_command;
mod estimate_command;
mod explain_command;
mod explain_snapshot;
mod measure_command;
mod predict_command;
mod rules_command;

use crate::render::OutputFormat;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Finds the patterns in PyTorch training scripts that waste GPU memory or end in
/// torch.OutOfMemoryError.
#[derive(Debug, Parser)]
#[command(name = "oomlint", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lint Python files and directories (default: the current directory).
    Check(CheckArgs),
    /// List every rule.
    Rules {
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        output_format: ListFormat,
    },
    /// Print a rule's documentation, by code (OOM001) or name (loss-tensor-kept).
    Rule { name: String },
    /// Run the language server over standard input and output.
    Server,
    /// Run each rule's fixtures (or the reference table) under PyTorch and report what
    /// they cost.
    Measure(measure_command::MeasureArgs),
    /// Explain a CUDA/HIP/MPS out-of-memory message (from a log file or standard input),
    /// or a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot()`) line by line.
    Explain(explain_command::ExplainArgs),
    /// Estimate training memory: weights, gradients and optimizer state from the
    /// parameter count, and the largest batch from measured runs.
    Estimate(estimate_command::EstimateArgs),
    /// Predict the peak GPU memory of one training step of yours (FILE.py:FUNCTION), by
    /// line and category, on an emulated CUDA device; with a card, the largest batch
    /// that fits.
    Predict(predict_command::PredictArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Files or directories to lint; `-` reads standard input.
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Full)]
    pub output_format: OutputFormat,
    /// Only these rules (codes, prefixes or ALL), replacing the configured selection.
    #[arg(long, value_delimiter = ',')]
    pub select: Option<Vec<String>>,
    /// Skip these rules, in addition to the configured ones.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Also run the preview rules (those not yet precise enough on real code to be on by
    /// default); overrides `preview` in the configuration.
    #[arg(long, overrides_with = "no_preview")]
    pub preview: bool,
    /// Run no preview rule, whatever the configuration says.
    #[arg(long, overrides_with = "preview")]
    pub no_preview: bool,
    /// Exit 0 even when there are findings.
    #[arg(long)]
    pub exit_zero: bool,
    /// Read the file from standard input; this name is used for configuration and output.
    #[arg(long)]
    pub stdin_filename: Option<PathBuf>,
    /// Use this configuration file for every file instead of discovering one.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Apply safe fixes (with standard input: print the fixed text).
    #[arg(long)]
    pub fix: bool,
    /// Also apply unsafe fixes (with --fix or --diff).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the fixes as a unified diff and write nothing; exit 1 when there is one.
    #[arg(long, conflicts_with = "fix")]
    pub diff: bool,
}

/// Exit statuses: 0 clean, 1 findings, 2 usage, configuration or I/O error.
pub const EXIT_CLEAN: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let status = match cli.command {
        Command::Check(args) => check_command::run(args),
        Command::Rules { output_format } => rules_command::list(output_format == ListFormat::Json),
        Command::Rule { name } => rules_command::show(&name),
        Command::Server => return crate::server::run(),
        Command::Measure(args) => measure_command::run(args),
        Command::Explain(args) => explain_command::run(args),
        Command::Estimate(args) => estimate_command::run(args),
        Command::Predict(args) => predict_command::run(args),
    };
    ExitCode::from(status)
}
