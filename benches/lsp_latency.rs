//! Language server latency on the edits people make: a 5,000-line training script (a
//! license header, then functions that share names: `loss`, `model`, `optimizer`) is
//! opened, then edited the way people type, one version at a time, waiting for each
//! version's diagnostics:
//!
//! - `end of line`: characters appended at the end of a line, then deleted;
//! - `new line`: Enter in a function body, then a line of code typed character by character;
//! - `comment`: a comment typed at the end of a line;
//! - `inside name`: a character typed inside `loss`, a name every function uses, and deleted;
//! - `paste 20 lines`: a 20-line function pasted between two functions, then removed.
//!
//! For each kind it prints the median, p99 and worst time from `didChange` to the
//! `publishDiagnostics` of that version, the time from `didOpen` to the first
//! diagnostics, and the time of the first keystroke after each open (untouched by the
//! warm-up edits the kinds above start with), for `oomlint server` and, in the same run on
//! the same edits, `ruff server`, each with its default settings: what a user gets.
//!
//! Run with `scripts/bench-lsp`, or `cargo bench --bench lsp_latency -- [RUFF_BINARY]`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LINES: usize = 5_000;
/// Edits timed per kind, after a few untimed ones that warm the server up.
const EDITS_PER_KIND: usize = 200;
const WARM_UP: usize = 10;
/// Documents opened (each a fresh URI) for the open-to-diagnostics and first-edit figures,
/// per way of typing the first edit.
const OPENS: usize = 7;
/// How long after an open's diagnostics half the first edits wait: a person who opens a
/// file looks at it before typing.
const PAUSE_BEFORE_TYPING: Duration = Duration::from_millis(200);

fn main() {
    let ruff = std::env::args().skip(1).find(|a| a != "--bench");
    // The build to measure through OOMLINT_BENCH_BINARY: `scripts/bench-lsp` passes the
    // one the wheel ships (`scripts/build-shipped`); another one, to compare.
    let oomlint = std::env::var_os("OOMLINT_BENCH_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/oomlint"));
    if !oomlint.is_file() {
        eprintln!("build the release binary first: cargo build --release");
        std::process::exit(2);
    }
    let script = training_script();
    println!(
        "document: {} lines, {} KB; {EDITS_PER_KIND} edits per kind, each waiting for its version's diagnostics",
        script.lines().count(),
        script.len() / 1024
    );
    println!("oomlint: {}", oomlint.display());
    let mut servers = vec![measure("oomlint", Command::new(&oomlint).arg("server"), &script, json!({}))];
    match ruff {
        Some(ruff) => servers.push(measure("ruff", Command::new(ruff).arg("server"), &script, json!({}))),
        None => println!("(pass a ruff binary to compare: cargo bench --bench lsp_latency -- /path/to/ruff)"),
    }
    println!();
    println!("{:<16} {:>8} {:>13} {:>10} {:>10}", "edit kind", "server", "median ms", "p99 ms", "worst ms");
    for (kind, name) in KINDS.iter().enumerate() {
        for server in &servers {
            let s = &server.kinds[kind];
            println!(
                "{:<16} {:>8} {:>13.2} {:>10.2} {:>10.2}",
                name,
                server.name,
                ms(s.median),
                ms(s.p99),
                ms(s.worst)
            );
        }
    }
    for server in &servers {
        let o = &server.open;
        println!("{:<16} {:>8} {:>13.2} {:>10} {:>10.2}", "open", server.name, ms(o.median), "", ms(o.worst));
    }
    for server in &servers {
        let f = &server.first_edit;
        println!("{:<16} {:>8} {:>13.2} {:>10} {:>10.2}", "first edit", server.name, ms(f.median), "", ms(f.worst));
    }
    for server in &servers {
        let f = &server.first_edit_after_pause;
        let label = format!("  after {} ms", PAUSE_BEFORE_TYPING.as_millis());
        println!("{:<16} {:>8} {:>13.2} {:>10} {:>10.2}", label, server.name, ms(f.median), "", ms(f.worst));
    }
    for server in &servers {
        println!("{} peak RSS: {:.1} MB", server.name, server.peak_rss_mb);
    }
    if let [ours, theirs] = servers.as_slice() {
        let worst_ratio =
            (0..KINDS.len()).map(|k| ms(ours.kinds[k].median) / ms(theirs.kinds[k].median)).fold(0.0f64, f64::max);
        println!("ratio (oomlint / ruff), worst edit kind's median: {worst_ratio:.2}x");
    }
    println!("target: every kind median <= 5 ms and <= ruff's, p99 <= 20 ms; open <= 50 ms");
    let caller = cross_file(Command::new(&oomlint).arg("server"), &script);
    println!();
    println!(
        "caller edited, callee republished (oomlint): median {:.2} ms, p99 {:.2} ms, worst {:.2} ms",
        ms(caller.median),
        ms(caller.p99),
        ms(caller.worst)
    );
    println!("  (the script as the caller: its `with torch.no_grad():` around `evaluate(...)` taken out and put back,");
    println!("   timed from the caller's didChange to the callee's diagnostics; target as for edits)");
}

/// The callee: an evaluation helper whose OOM002 depends on whether its caller, in
/// another file, runs it under `torch.no_grad()`.
const CALLEE: &str = "import torch\n\n\ndef evaluate(model, val_loader):\n    model.eval()\n    for x, y in val_loader:\n        out = model(x)\n        print(out.sum().item())\n";

/// Edits to the caller (the training script with a call of `evaluate` at its end) that
/// take its `with torch.no_grad():` out and put it back, each of which changes the
/// callee's findings: the time from the caller's change to the callee's republished
/// diagnostics, through the project index.
fn cross_file(command: &mut Command, script: &str) -> Figures {
    const GUARD: &str = "    with torch.no_grad():\n        evaluate(model, val_loader)\n";
    const BARE: &str = "    evaluate(model, val_loader)\n";
    let caller = format!("from evaluation import evaluate\n{script}\n\ndef validate(model, val_loader):\n{GUARD}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evaluation.py"), CALLEE).unwrap();
    std::fs::write(dir.path().join("train.py"), &caller).unwrap();
    let root = format!("file://{}", dir.path().display());
    let mut server = Connection::start(command);
    let options = json!({});
    let capabilities = json!({"window": {"workDoneProgress": true}});
    server.request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": capabilities, "initializationOptions": options}),
    );
    server.notify("initialized", json!({}));
    server.wait(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end");
    let callee = format!("{root}/evaluation.py");
    let item = json!({"uri": callee, "languageId": "python", "version": 1, "text": CALLEE});
    server.notify("textDocument/didOpen", json!({"textDocument": item}));
    server.published(&callee, 1);
    let uri = format!("{root}/train.py");
    let item = json!({"uri": uri, "languageId": "python", "version": 1, "text": caller});
    server.notify("textDocument/didOpen", json!({"textDocument": item}));
    server.published(&uri, 1);
    let mut text = Text { text: caller.clone() };
    let mut times = Vec::new();
    for n in 0..WARM_UP + 50 {
        let guarded = n % 2 == 0;
        let (from, to) = if guarded { (GUARD, BARE) } else { (BARE, GUARD) };
        let at = text.text.rfind(from).expect("the call of evaluate");
        let change = text.change(at, at + from.len(), to);
        let started = Instant::now();
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": n + 2}, "contentChanges": [change]}),
        );
        // Without the guard the callee has its OOM002; with it, none.
        server.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == callee
                && m["params"]["diagnostics"].as_array().is_some_and(|d| d.is_empty() != guarded)
        });
        if n >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    server.request("shutdown", Value::Null);
    server.notify("exit", Value::Null);
    let _ = server.child.wait();
    Figures::of(times)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

const KINDS: [&str; 5] = ["end of line", "new line", "comment", "inside name", "paste 20 lines"];

/// A training script as people write them: imports, a model, then many training and
/// evaluation functions that all say `model`, `loss`, `optimizer`, with a finding now
/// and then, and a `main` at the end.
fn training_script() -> String {
    // Most real scripts open with a license header.
    let mut text = String::from(
        "#!/usr/bin/env python\n# Copyright 2026 The authors of this script.\n#\n\
         # Licensed under the terms in the LICENSE file at the root of this repository;\n\
         # you may use it only in compliance with them.\n\n\
         import argparse\nimport math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\
         from torch.utils.data import DataLoader\n\n\nclass Net(nn.Module):\n    def __init__(self, width):\n        \
         super().__init__()\n        self.body = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))\n\n    \
         def forward(self, x):\n        return self.body(x)\n",
    );
    let mut i = 0;
    while text.lines().count() < LINES - 12 {
        // Every tenth training function keeps the loss tensor: a real finding.
        let kept = if i % 10 == 3 { "losses.append(loss)" } else { "losses.append(loss.item())" };
        text.push_str(&format!(
            "\n\ndef train_{i}(model, loader, optimizer, criterion, base_lr, device):\n    model.train()\n    losses = []\n    \
             for step, (x, y) in enumerate(loader):\n        x, y = x.to(device), y.to(device)\n        optimizer.zero_grad()\n        \
             output = model(x)\n        loss = criterion(output, y)\n        loss.backward()\n        lr = base_lr\n        \
             optimizer.step()\n        {kept}\n        if step % 100 == 0:\n            print(f\"step {{step}} loss {{loss.item():.4f}} lr {{lr}}\")\n    \
             return sum(losses) / max(len(losses), 1)\n\n\n@torch.no_grad()\ndef evaluate_{i}(model, val_loader, device):\n    model.eval()\n    \
             correct = 0\n    total = 0\n    for x, y in val_loader:\n        x, y = x.to(device), y.to(device)\n        output = model(x)\n        \
             loss = F.cross_entropy(output, y)\n        correct += (output.argmax(1) == y).sum().item()\n        total += y.numel()\n    \
             return correct / max(total, 1)\n"
        ));
        i += 1;
    }
    text.push_str(
        "\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--lr\", type=float, default=0.1)\n    \
         args = parser.parse_args()\n    model = Net(32)\n    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)\n    \
         print(model, optimizer, math.pi)\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    text
}

/// The client's copy of the document, to place each edit and say it in LSP terms.
struct Text {
    text: String,
}

impl Text {
    /// (line, character) of a byte offset; the script is ASCII, so UTF-16 and bytes agree.
    fn position(&self, offset: usize) -> Value {
        let before = &self.text[..offset];
        let line = before.matches('\n').count();
        let character = offset - before.rfind('\n').map_or(0, |i| i + 1);
        json!({"line": line, "character": character})
    }

    /// Replace `start..end` with `insert`; the change event for it.
    fn change(&mut self, start: usize, end: usize, insert: &str) -> Value {
        let range = json!({"start": self.position(start), "end": self.position(end)});
        self.text.replace_range(start..end, insert);
        json!({"range": range, "text": insert})
    }

    /// The byte offset where the first line containing `needle` after `from` ends.
    fn end_of_line_with(&self, needle: &str, from: usize) -> usize {
        let at = from + self.text[from..].find(needle).expect("needle in the script");
        at + self.text[at..].find('\n').expect("line end")
    }
}

/// The edits of one kind, as a script of changes: each call yields the next change.
/// `function` is where the training function edited starts (every edit is after it, so
/// it stays put).
fn edit_kind(kind: usize, text: &mut Text, function: usize, n: usize) -> Value {
    match kind {
        // `lr = base_lr`: type four characters after it, then delete them again.
        0 => {
            let end = text.end_of_line_with("lr = base_lr", function);
            if n % 8 < 4 { text.change(end, end, ["_", "x", "2", "s"][n % 4]) } else { text.change(end - 1, end, "") }
        }
        // After `optimizer.step()`: Enter (with indentation), a line typed character by
        // character, then the line removed.
        1 => {
            const LINE: &str = "scaled = loss.item() * lr";
            let anchor = text.end_of_line_with("optimizer.step()", function);
            let step = n % (LINE.len() + 2);
            if step == 0 {
                text.change(anchor, anchor, "\n        ")
            } else if step <= LINE.len() {
                let at = anchor + "\n        ".len() + step - 1;
                text.change(at, at, &LINE[step - 1..step])
            } else {
                text.change(anchor, anchor + "\n        ".len() + LINE.len(), "")
            }
        }
        // After `optimizer.zero_grad()`: a comment typed, then removed. Placed from the
        // call, not from the line's end, which moves as the comment grows.
        2 => {
            const COMMENT: &str = "  # reset before each batch";
            const CALL: &str = "optimizer.zero_grad()";
            let anchor = function + text.text[function..].find(CALL).expect("the call") + CALL.len();
            let step = n % (COMMENT.len() + 1);
            if step < COMMENT.len() {
                text.change(anchor + step, anchor + step, &COMMENT[step..step + 1])
            } else {
                text.change(anchor, anchor + COMMENT.len(), "")
            }
        }
        // `loss = criterion(...)`: a character typed inside `loss` and deleted.
        3 => {
            // Placed from what follows the name, which the edit leaves alone.
            let assigned = function + text.text[function..].find(" = criterion(output").expect("loss line");
            if n.is_multiple_of(2) {
                text.change(assigned - 2, assigned - 2, "x")
            } else {
                text.change(assigned - 3, assigned - 2, "")
            }
        }
        // A 20-line function pasted before the training function, then removed.
        _ => {
            let at = function + 1;
            let block = pasted_block();
            if n.is_multiple_of(2) { text.change(at, at, &block) } else { text.change(at, at + block.len(), "") }
        }
    }
}

fn pasted_block() -> String {
    let mut block = String::from("def warmup(model, loader, optimizer, criterion, steps):\n");
    block.push_str("    model.train()\n    seen = []\n    for step, (x, y) in enumerate(loader):\n");
    block.push_str("        if step >= steps:\n            break\n        optimizer.zero_grad()\n");
    block.push_str("        output = model(x)\n        loss = criterion(output, y)\n        loss.backward()\n");
    block.push_str(
        "        for group in optimizer.param_groups:\n            group[\"lr\"] = 0.01 * (step + 1) / steps\n",
    );
    block.push_str("        optimizer.step()\n        seen.append(loss.item())\n");
    block.push_str("        if step % 10 == 0:\n            print(\"warmup\", step, seen[-1])\n");
    block.push_str("    model.zero_grad()\n    return seen\n\n\n");
    debug_assert_eq!(block.lines().count(), 20);
    block
}

struct Figures {
    median: Duration,
    p99: Duration,
    worst: Duration,
}

impl Figures {
    fn of(mut times: Vec<Duration>) -> Figures {
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        Figures { median: at(0.5), p99: at(0.99), worst: *times.last().expect("times") }
    }
}

struct ServerFigures {
    name: &'static str,
    kinds: Vec<Figures>,
    open: Figures,
    /// The first keystroke after each open, at once and after `PAUSE_BEFORE_TYPING`: it
    /// reparses a tree fresh from a parse, which the warmed-up edits above never do.
    first_edit: Figures,
    first_edit_after_pause: Figures,
    peak_rss_mb: f64,
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

    /// Wait for the diagnostics of `version` of `uri`.
    fn published(&mut self, uri: &str, version: i64) {
        self.wait(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == version
        });
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

fn measure(name: &'static str, command: &mut Command, script: &str, options: Value) -> ServerFigures {
    let mut server = Connection::start(command);
    let dir = tempfile::tempdir().unwrap();
    let root = format!("file://{}", dir.path().display());
    server.request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": {}, "initializationOptions": options}),
    );
    server.notify("initialized", json!({}));

    // Open to first diagnostics, each time a document the server has not seen, then the
    // first keystroke in it (an end-of-line edit in the middle of the file): at once
    // after every other open, after a pause the rest of the time, as when a person opens
    // a file and reads before typing (the server may use the pause).
    let mut opens = Vec::new();
    let mut first_edits = Vec::new();
    let mut first_edits_after_pause = Vec::new();
    for k in 0..=2 * OPENS {
        let uri = format!("{root}/train_{k}.py");
        std::fs::write(dir.path().join(format!("train_{k}.py")), script).unwrap();
        let item = json!({"uri": uri, "languageId": "python", "version": 1, "text": script});
        let started = Instant::now();
        server.notify("textDocument/didOpen", json!({"textDocument": item}));
        server.published(&uri, 1);
        let opened = started.elapsed();
        let mut text = Text { text: script.to_string() };
        let middle = text.end_of_line_with("lr = base_lr", script.len() / 2);
        let change = text.change(middle, middle, "_");
        let pause = k % 2 == 0;
        if pause {
            std::thread::sleep(PAUSE_BEFORE_TYPING);
        }
        let started = Instant::now();
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}),
        );
        server.published(&uri, 2);
        // The first open also warms the process up; it is not counted.
        if k > 0 {
            opens.push(opened);
            if pause { &mut first_edits_after_pause } else { &mut first_edits }.push(started.elapsed());
        }
        server.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    }

    let uri = format!("{root}/train.py");
    std::fs::write(dir.path().join("train.py"), script).unwrap();
    let item = json!({"uri": uri, "languageId": "python", "version": 1, "text": script});
    server.notify("textDocument/didOpen", json!({"textDocument": item}));
    server.published(&uri, 1);
    let mut text = Text { text: script.to_string() };
    // The edits happen in the middle of the file, in one training function.
    let function = script.len() / 2 + script[script.len() / 2..].find("\ndef train_").expect("a training function");
    let mut version = 1;
    let mut kinds = Vec::new();
    for kind in 0..KINDS.len() {
        let mut times = Vec::with_capacity(EDITS_PER_KIND);
        for n in 0..WARM_UP + EDITS_PER_KIND {
            version += 1;
            let change = edit_kind(kind, &mut text, function, n);
            let started = Instant::now();
            server.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
            );
            server.published(&uri, version);
            if n >= WARM_UP {
                times.push(started.elapsed());
            }
        }
        kinds.push(Figures::of(times));
        // Back to the script as opened, so each kind starts from the same text.
        version += 1;
        let whole = json!({"text": script});
        text.text = script.to_string();
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [whole]}),
        );
        server.published(&uri, version);
    }
    let peak_rss_mb = server.peak_rss_mb();
    server.request("shutdown", Value::Null);
    server.notify("exit", Value::Null);
    let _ = server.child.wait();
    ServerFigures {
        name,
        kinds,
        open: Figures::of(opens),
        first_edit: Figures::of(first_edits),
        first_edit_after_pause: Figures::of(first_edits_after_pause),
        peak_rss_mb,
    }
}
