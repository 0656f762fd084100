//! Language server latency: open a 5,000-line training script, send 1,000
//! single-character edits one at a time, and time each `didChange` to the
//! `publishDiagnostics` for that version. Prints the median and p99 and the server's peak
//! RSS, for `oomlint server` (debounce 0) and, in the same run, `ruff server`, with the
//! ratio.
//!
//! Run with `scripts/bench-lsp`, or `cargo bench --bench lsp_latency -- [RUFF_BINARY]`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LINES: usize = 5_000;
const EDITS: usize = 1_000;

fn main() {
    let ruff = std::env::args().skip(1).find(|a| a != "--bench");
    let oomlint = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/oomlint");
    if !oomlint.is_file() {
        eprintln!("build the release binary first: cargo build --release");
        std::process::exit(2);
    }
    let script = training_script();
    println!("document: {} lines, {} KB; {EDITS} single-character edits", script.lines().count(), script.len() / 1024);
    let ours = measure("oomlint server", Command::new(&oomlint).arg("server"), &script, json!({"debounceMs": 0}));
    let theirs = ruff.map(|ruff| measure("ruff server", Command::new(ruff).arg("server"), &script, json!({})));
    if let Some(theirs) = theirs {
        println!(
            "ratio (oomlint / ruff): median {:.2}x, p99 {:.2}x",
            ours.median.as_secs_f64() / theirs.median.as_secs_f64(),
            ours.p99.as_secs_f64() / theirs.p99.as_secs_f64()
        );
    } else {
        println!("(pass a ruff binary to compare: cargo bench --bench lsp_latency -- /path/to/ruff)");
    }
    println!("target: oomlint median < 5 ms, p99 < 20 ms");
}

/// A realistic script: the same training and evaluation code, repeated with fresh names.
fn training_script() -> String {
    let mut text = String::from("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n");
    let mut i = 0;
    while text.lines().count() < LINES {
        text.push_str(&format!(
            "\n\ndef train_{i}(model, loader, optimizer, criterion):\n    model.train()\n    history = []\n    for step, (x, y) in enumerate(loader):\n        optimizer.zero_grad()\n        loss = criterion(model(x), y)\n        loss.backward()\n        optimizer.step()\n        history.append(loss.item())\n    return history\n\n\n@torch.no_grad()\ndef evaluate_{i}(model, val_loader):\n    model.eval()\n    correct = 0\n    for x, y in val_loader:\n        correct += (model(x).argmax(1) == y).sum().item()\n    return correct\n"
        ));
        i += 1;
    }
    text
}

struct Latency {
    median: Duration,
    p99: Duration,
}

struct Connection {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    next_id: i64,
}

impl Connection {
    fn start(command: &mut Command) -> Connection {
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("start server");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if stdout.read_line(&mut header).unwrap_or(0) == 0 {
                        return;
                    }
                    let header = header.trim();
                    if header.is_empty() {
                        break;
                    }
                    if let Some(value) = header.strip_prefix("Content-Length: ") {
                        length = value.parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if stdout.read_exact(&mut body).is_err() {
                    return;
                }
                if let Ok(message) = serde_json::from_slice(&body)
                    && tx.send(message).is_err()
                {
                    return;
                }
            }
        });
        Connection { child, stdin, messages, next_id: 0 }
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m["id"] == id && m.get("method").is_none())
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message matching `wanted`; requests from the server are answered.
    fn wait(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.messages.recv_timeout(Duration::from_secs(30)).expect("server answers within 30 s");
            if message.get("method").is_some() && message.get("id").is_some() {
                let id = message["id"].clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            if wanted(&message) {
                return message;
            }
        }
    }

    fn peak_rss_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        kb / 1024.0
    }
}

fn measure(name: &str, command: &mut Command, script: &str, options: Value) -> Latency {
    let mut server = Connection::start(command);
    let dir = tempfile::tempdir().unwrap();
    let root = format!("file://{}", dir.path().display());
    let uri = format!("{root}/train.py");
    std::fs::write(dir.path().join("train.py"), script).unwrap();
    server.request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": {}, "initializationOptions": options}),
    );
    server.notify("initialized", json!({}));
    let item = json!({"uri": uri, "languageId": "python", "version": 1, "text": script});
    server.notify("textDocument/didOpen", json!({"textDocument": item}));
    let published = |version: i64| {
        let uri = uri.clone();
        move |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == version
        }
    };
    server.wait(published(1));
    // Alternately type and delete one character inside an identifier in a function
    // body, as when renaming a variable.
    let line = script.lines().position(|l| l.contains("correct = 0")).unwrap();
    let column = script.lines().nth(line).unwrap().find("correct").unwrap() + 3;
    let mut times = Vec::with_capacity(EDITS);
    for edit in 0..EDITS {
        let version = edit as i64 + 2;
        let (range, text) = if edit % 2 == 0 {
            (json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column}}), "x")
        } else {
            (json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column + 1}}), "")
        };
        let started = Instant::now();
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": range, "text": text}]}),
        );
        server.wait(published(version));
        times.push(started.elapsed());
    }
    let rss = server.peak_rss_mb();
    server.request("shutdown", Value::Null);
    server.notify("exit", Value::Null);
    let _ = server.child.wait();
    times.sort();
    let latency = Latency { median: times[times.len() / 2], p99: times[times.len() * 99 / 100] };
    println!(
        "{name:<15} median {:>7.3} ms   p99 {:>7.3} ms   peak RSS {rss:.1} MB",
        latency.median.as_secs_f64() * 1e3,
        latency.p99.as_secs_f64() * 1e3
    );
    latency
}
