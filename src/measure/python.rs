//! The Python that runs the fixtures: which interpreter, and whether it has PyTorch.

use super::process::Runner;
use std::path::{Path, PathBuf};

/// The interpreter to use: `--python`, else `$OOMLINT_PYTHON`, else the environment
/// `scripts/ensure-venv` creates (`$OOMLINT_VENV`, default `~/.cache/oomlint/venv`) when
/// it exists, else `python3` from PATH.
pub fn interpreter(explicit: Option<&Path>) -> PathBuf {
    if let Some(path) = explicit {
        return path.to_path_buf();
    }
    if let Some(path) = std::env::var_os("OOMLINT_PYTHON").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let venv = std::env::var_os("OOMLINT_VENV")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/oomlint/venv")));
    if let Some(python) = venv.map(|v| v.join("bin/python")).filter(|p| p.is_file()) {
        return python;
    }
    PathBuf::from("python3")
}

/// What the interpreter offers.
#[derive(Debug, Clone)]
pub struct PythonInfo {
    pub torch: String,
    /// `Err(why not)` when PyTorch cannot measure a CUDA device here.
    pub cuda: Result<String, String>,
}

/// Asks the interpreter for its PyTorch; an error is one line saying how to get one.
pub fn preflight(runner: &Runner) -> Result<PythonInfo, String> {
    let record = runner.preflight()?;
    let get = |key: &str| record.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    if let Some(error) = get("error") {
        return Err(format!(
            "{error}; run `scripts/ensure-venv` (or `pip install torch`) and pass its Python with --python or \
             OOMLINT_PYTHON"
        ));
    }
    let torch = get("torch").ok_or("the runner reported no PyTorch version")?;
    let cuda = match get("cuda_unusable") {
        Some(reason) => Err(reason),
        None => Ok(get("cuda_device").unwrap_or_default()),
    };
    Ok(PythonInfo { torch, cuda })
}
