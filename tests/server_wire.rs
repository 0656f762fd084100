//! The language server binary on the wire: malformed frames answered with the JSON-RPC
//! error the spec gives (and one line on standard error) while serving goes on, lone
//! surrogate escapes in document text, unknown `$/` requests, and the exit code of `exit`
//! with and without `shutdown`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: Receiver<Value>,
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    frame
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oomlint"))
            .arg("server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let stdout = child.stdout.take().unwrap();
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = n.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                if sender.send(serde_json::from_slice(&body).expect("the server writes JSON")).is_err() {
                    return;
                }
            }
        });
        let mut server = Server { stdin: child.stdin.take(), child, messages };
        server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
        server.reply(1);
        server.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        server
    }

    fn raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.raw(&frame(message.to_string().as_bytes()));
    }

    /// The next message matching `wanted`, skipping others (log messages, diagnostics).
    fn wait_for(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut skipped = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(message) if wanted(&message) => return message,
                Ok(message) => skipped.push(message),
                Err(_) => panic!("no {what} from the server; it sent {skipped:?}"),
            }
        }
    }

    fn reply(&self, id: i64) -> Value {
        self.wait_for(&format!("reply to {id}"), |m| m["id"] == id && m.get("method").is_none())
    }

    fn error_with_null_id(&self) -> Value {
        self.wait_for("error reply", |m| m["id"].is_null() && m.get("error").is_some())
    }

    /// Close standard input and wait for the exit code and standard error.
    fn finish(mut self) -> (i32, String) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        (status.code().expect("an exit code"), stderr)
    }
}

#[test]
fn malformed_frames_get_spec_errors_and_serving_goes_on() {
    let mut server = Server::start();
    let bodies: [(&[u8], i64); 5] = [
        (b"this is not JSON", -32700),
        (b"[]", -32600),
        (b"42", -32600),
        (b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}", -32700),
        (br#"{"id":null,"method":"textDocument/hover"}"#, -32600),
    ];
    for (body, code) in bodies {
        server.raw(&frame(body));
        let reply = server.error_with_null_id();
        assert_eq!(reply["error"]["code"], code, "{}: {reply}", String::from_utf8_lossy(body));
    }
    // A readable id is echoed.
    server.raw(&frame(br#"{"id":41,"method":"shutdown"}"#));
    assert_eq!(server.reply(41)["error"]["code"], -32600);
    // Headers that do not delimit the body: the next frame is still read.
    let headers: [&[u8]; 6] = [
        b"Content-Type: application/json\r\n\r\n{}",
        b"Content-Length: twelve\r\n\r\n{}",
        b"Content-Length: -3\r\n\r\n{}",
        b"Content-Length: 18446744073709551616\r\n\r\n{}",
        b"Content-Length: 2\n\n{}",
        b"Content-Length: 2\r\n\x7fgarbage header\r\n\r\n{}",
    ];
    for header in headers {
        server.raw(header);
        let reply = server.error_with_null_id();
        assert_eq!(reply["error"]["code"], -32700, "{}: {reply}", String::from_utf8_lossy(header));
    }
    server.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "$/unknownRequest", "params": {}}));
    assert_eq!(server.reply(50)["error"]["code"], -32601);
    server.send(&json!({"jsonrpc": "2.0", "id": 60, "method": "shutdown"}));
    assert_eq!(server.reply(60)["result"], Value::Null);
    server.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    let (code, stderr) = server.finish();
    assert_eq!(code, 0, "{stderr}");
    let logged = stderr.lines().filter(|l| l.contains("malformed message")).count();
    assert_eq!(logged, bodies.len() + 1 + headers.len(), "one line per malformed frame:\n{stderr}");
}

#[test]
fn lone_surrogate_escapes_in_document_text_do_not_stop_the_server() {
    let mut server = Server::start();
    let leaky = r#"import torch\n\n\ndef collect(model, loader, criterion):\n    losses = []\n    for x, y in loader:\n        loss = criterion(model(x), y)\n        losses.append(loss)  # half an emoji: \ud800\n    return losses\n"#;
    let open = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"file:///tmp/s.py","languageId":"python","version":1,"text":"{leaky}"}}}}}}"#
    );
    server.raw(&frame(open.as_bytes()));
    let change = r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///tmp/s.py","version":2},"contentChanges":[{"text":"x = '\udc80'\n"}]}}"#;
    server.raw(&frame(change.as_bytes()));
    // Still serving: a request after both is answered.
    server.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}));
    assert_eq!(server.reply(9)["result"], Value::Null);
    server.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    assert_eq!(server.finish().0, 0);
}

#[test]
fn exit_without_shutdown_exits_with_one() {
    let mut server = Server::start();
    server.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    assert_eq!(server.finish().0, 1);
}
