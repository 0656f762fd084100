//! One fixture run: a fresh Python process executing the embedded `runner.py`, killed
//! when the script exceeds its time, its record read back from the last marked line.
//! The time limit counts from the runner's start marker, printed when the script is about
//! to run: importing PyTorch alone takes seconds, and much longer on a busy machine.

use super::Backend;
use super::measurements::Figures;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const RUNNER_SOURCE: &str = include_str!("runner.py");
/// The emulated CUDA device the runners import (written beside them).
const FAKE_CUDA_SOURCE: &str = include_str!("fake_cuda.py");
/// `oomlint predict`'s runner: one training step of the user's on the emulated device.
const PREDICT_RUNNER_SOURCE: &str = include_str!("predict_runner.py");
const RECORD_PREFIX: &str = "OOMLINT-RECORD ";
const STARTED_MARKER: &str = "OOMLINT-STARTED";
/// How long Python and PyTorch may take to start before the script's own limit begins.
const START_UP_LIMIT: Duration = Duration::from_secs(300);

/// Why a run produced no figures.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// The interpreter could not be started.
    Spawn(String),
    TimedOut(Duration),
    /// Python and PyTorch did not finish starting within this time.
    StartUpTimedOut(Duration),
    /// The backend cannot run here (no CUDA device, no PyTorch): the runner's reason.
    Refused(String),
    /// The script failed: the end of its standard error.
    Crashed {
        status: String,
        stderr: String,
    },
    /// The process exited without a record.
    NoRecord {
        stderr: String,
    },
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Spawn(why) => write!(f, "could not start Python: {why}"),
            RunError::TimedOut(limit) => write!(f, "timed out after {} s and was stopped", limit.as_secs()),
            RunError::StartUpTimedOut(limit) => {
                write!(f, "Python had not imported PyTorch after {} s and was stopped", limit.as_secs())
            }
            RunError::Refused(why) => write!(f, "{why}"),
            RunError::Crashed { status, stderr } => write!(f, "the script failed ({status}):\n{stderr}"),
            RunError::NoRecord { stderr } => write!(f, "the runner printed no record:\n{stderr}"),
        }
    }
}

/// Runs scripts through the runner, written once to a private temporary directory.
pub struct Runner {
    python: PathBuf,
    timeout: Duration,
    _dir: tempfile::TempDir,
    script: PathBuf,
}

impl Runner {
    pub fn new(python: PathBuf, timeout: Duration) -> std::io::Result<Runner> {
        let dir = tempfile::Builder::new().prefix("oomlint-measure").tempdir()?;
        let script = dir.path().join("runner.py");
        std::fs::write(&script, RUNNER_SOURCE)?;
        std::fs::write(dir.path().join("fake_cuda.py"), FAKE_CUDA_SOURCE)?;
        std::fs::write(dir.path().join("predict_runner.py"), PREDICT_RUNNER_SOURCE)?;
        Ok(Runner { python, timeout, _dir: dir, script })
    }

    pub fn python(&self) -> &Path {
        &self.python
    }

    /// The runner's answer about the interpreter itself (PyTorch version, CUDA).
    pub fn preflight(&self) -> Result<serde_json::Value, String> {
        let record = self.record(&["--preflight".to_owned()]).map_err(|e| match e {
            RunError::Spawn(why) => format!("cannot run Python `{}`: {why}", self.python.display()),
            other => format!("`{}` could not be asked about PyTorch: {other}", self.python.display()),
        })?;
        serde_json::from_str(&record).map_err(|e| format!("the runner's answer is not JSON: {e}"))
    }

    /// Runs `script` with `args` on `backend` and returns its figures.
    pub fn run(&self, script: &Path, args: &[String], backend: Backend) -> Result<Figures, RunError> {
        let mut argv = vec!["--backend".to_owned(), backend.as_str().to_owned(), "--script".to_owned()];
        argv.push(script.display().to_string());
        argv.push("--".to_owned());
        argv.extend(args.iter().cloned());
        let record = self.record(&argv)?;
        let value: serde_json::Value = serde_json::from_str(&record)
            .map_err(|e| RunError::NoRecord { stderr: format!("unreadable record: {e}") })?;
        if let Some(error) = value.get("error").and_then(|e| e.as_str()) {
            return Err(RunError::Refused(error.to_owned()));
        }
        serde_json::from_value(value).map_err(|e| RunError::NoRecord { stderr: format!("incomplete record: {e}") })
    }

    /// Runs `predict_runner.py` with `argv` and returns its record (which holds `error`
    /// when the user's code could not be predicted).
    pub fn predict(&self, argv: &[String]) -> Result<serde_json::Value, RunError> {
        let script = self.script.with_file_name("predict_runner.py");
        let record = self.record_of(&script, argv)?;
        serde_json::from_str(&record).map_err(|e| RunError::NoRecord { stderr: format!("unreadable record: {e}") })
    }

    fn record(&self, argv: &[String]) -> Result<String, RunError> {
        self.record_of(&self.script, argv)
    }

    /// Starts `script`, waits at most the timeout, and returns its record line.
    fn record_of(&self, script: &Path, argv: &[String]) -> Result<String, RunError> {
        let mut child = Command::new(&self.python)
            .arg("-u")
            .arg(script)
            .args(argv)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError::Spawn(e.to_string()))?;
        let started = Arc::new(OnceLock::new());
        let stdout = drain_stdout(child.stdout.take(), Arc::clone(&started));
        let stderr = drain(child.stderr.take());
        let spawned = Instant::now();
        let status = loop {
            let timed_out = match started.get() {
                Some(script_start) => {
                    (script_start.elapsed() >= self.timeout).then_some(RunError::TimedOut(self.timeout))
                }
                None => (spawned.elapsed() >= START_UP_LIMIT).then_some(RunError::StartUpTimedOut(START_UP_LIMIT)),
            };
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if timed_out.is_some() => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(timed_out.unwrap_or(RunError::TimedOut(self.timeout)));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(RunError::Spawn(e.to_string())),
            }
        };
        let stdout = stdout.join().unwrap_or_default();
        let stderr = tail(&stderr.join().unwrap_or_default(), 30);
        let record = stdout.lines().rev().find_map(|line| line.strip_prefix(RECORD_PREFIX)).map(str::to_owned);
        match record {
            // A refusal comes with its own record and a non-zero status.
            Some(record) if status.success() || record.contains("\"error\"") => Ok(record),
            _ if !status.success() => Err(RunError::Crashed { status: status.to_string(), stderr }),
            _ => Err(RunError::NoRecord { stderr }),
        }
    }
}

/// Reads the runner's standard output, noting when its start marker arrives.
fn drain_stdout(pipe: Option<impl Read + Send + 'static>, started: Arc<OnceLock<Instant>>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let Some(pipe) = pipe else { return text };
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let decoded = String::from_utf8_lossy(&line);
            if decoded.trim_end() == STARTED_MARKER {
                let _ = started.set(Instant::now());
            } else {
                text.push_str(&decoded);
            }
            line.clear();
        }
        text
    })
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
