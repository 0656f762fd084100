//! The server's end of the wire, in front of the LSP framework: reads the client's
//! frames (`Content-Length` header, blank line, JSON body), and hands on only
//! well-formed JSON-RPC messages. A malformed frame gets the JSON-RPC error the spec
//! gives (-32700 parse error, -32600 invalid request, `id: null` when none can be read),
//! one line on standard error, and serving goes on. A frame without a usable
//! `Content-Length` cannot be delimited: the reader skips to the next header line.
//!
//! It also answers what the framework would drop: a request for an unknown `$/` method
//! (-32601), and it records whether `shutdown` came before `exit` (exit code 1 if not).

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// A body larger than this is not a message an editor sends: the length is taken as
/// unusable rather than waited for.
const MAX_BODY: usize = 1 << 30;

/// What the reader found next on the wire.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A well-formed message, re-encoded as JSON text (lone surrogates replaced).
    Message(Value),
    /// A malformed frame: the error response to send, and the line for standard error.
    Malformed { reply: Option<Value>, log: String },
    /// The client closed the stream.
    End,
}

/// Reads frames from the client.
pub struct FrameReader<R> {
    input: R,
    /// The start of a header line already consumed while resynchronising.
    pending: Vec<u8>,
    /// The last frame could not be delimited: skip to the next header before reading.
    lost: bool,
}

impl<R: BufRead> FrameReader<R> {
    pub fn new(input: R) -> FrameReader<R> {
        FrameReader { input, pending: Vec::new(), lost: false }
    }

    pub fn next_incoming(&mut self) -> Incoming {
        if std::mem::take(&mut self.lost) {
            self.skip_to_next_header();
        }
        let mut length: Result<usize, String> = Err("no Content-Length header".into());
        let mut problem: Option<String> = None;
        let mut saw_header = false;
        loop {
            let mut line = std::mem::take(&mut self.pending);
            match self.input.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return Incoming::End,
                Ok(_) => {}
            }
            if !line.ends_with(b"\r\n") {
                // LF-only header lines: the frame is malformed, but its length may still
                // delimit it.
                problem.get_or_insert_with(|| "header line not ended by \\r\\n".into());
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if text.is_empty() {
                if !saw_header {
                    continue; // blank lines between frames
                }
                break;
            }
            saw_header = true;
            match text.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                    length = match value.trim().parse::<usize>() {
                        Ok(n) if n <= MAX_BODY => Ok(n),
                        Ok(n) => Err(format!("Content-Length {n} is too large")),
                        Err(_) => Err(format!("Content-Length `{}` is not a byte count", value.trim())),
                    };
                }
                Some((name, _)) if name.eq_ignore_ascii_case("content-type") => {}
                Some((name, _)) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic()) => {}
                _ => {
                    problem.get_or_insert_with(|| format!("garbage header line `{}`", shorten(text)));
                }
            }
        }
        let length = match length {
            Ok(length) => length,
            Err(why) => {
                // Nothing says where the body ends: the next read skips to the next
                // frame's header (after this error is answered, not once that arrives).
                self.lost = true;
                return malformed(PARSE_ERROR, Value::Null, &format!("{why}; skipped to the next header"));
            }
        };
        let mut body = vec![0; length];
        if self.input.read_exact(&mut body).is_err() {
            return Incoming::End;
        }
        if let Some(problem) = problem {
            return malformed(PARSE_ERROR, Value::Null, &problem);
        }
        parse_body(&body)
    }

    /// Consume input through the next `Content-Length:` (kept for the next header read).
    fn skip_to_next_header(&mut self) {
        const HEADER: &[u8] = b"content-length:";
        let mut window = Vec::with_capacity(HEADER.len());
        loop {
            let byte = match self.input.fill_buf() {
                Ok([]) | Err(_) => return,
                Ok(buffered) => buffered[0],
            };
            self.input.consume(1);
            if window.len() == HEADER.len() {
                window.remove(0);
            }
            window.push(byte.to_ascii_lowercase());
            if window == HEADER {
                self.pending = b"Content-Length:".to_vec();
                return;
            }
        }
    }
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;

fn malformed(code: i64, id: Value, why: &str) -> Incoming {
    let kind = if code == PARSE_ERROR { "parse error" } else { "invalid request" };
    Incoming::Malformed {
        reply: Some(error_response(id, code, &format!("{kind}: {why}"))),
        log: format!("oomlint server: malformed message from the client ({kind}): {why}"),
    }
}

pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn shorten(text: &str) -> String {
    let short: String = text.chars().take(60).collect();
    if short.len() < text.len() { format!("{short}...") } else { short }
}

fn parse_body(body: &[u8]) -> Incoming {
    let Ok(text) = std::str::from_utf8(body) else {
        return malformed(PARSE_ERROR, Value::Null, "the body is not UTF-8");
    };
    let value: Value = match serde_json::from_str(&without_lone_surrogates(text)) {
        Ok(value) => value,
        Err(e) => return malformed(PARSE_ERROR, Value::Null, &format!("the body is not JSON ({e})")),
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() { "a batch (an array), which LSP does not use" } else { "not an object" };
        return malformed(INVALID_REQUEST, Value::Null, &format!("the message is {what}"));
    };
    let id = match object.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return malformed(INVALID_REQUEST, id, "the message has no \"jsonrpc\": \"2.0\"");
    }
    let method_ok = match object.get("method") {
        None => object.contains_key("result") || object.contains_key("error"),
        Some(method) => method.is_string(),
    };
    if !method_ok || object.get("id").is_some_and(|i| !(i.is_number() || i.is_string() || i.is_null())) {
        return malformed(INVALID_REQUEST, id, "the message is neither a request, a notification nor a response");
    }
    Incoming::Message(value)
}

/// JSON text with each unpaired UTF-16 surrogate escape (`\ud800` without its low half,
/// as an editor sends for half of an emoji) written as `\ufffd`: Rust strings cannot
/// hold one, and the message would be rejected whole.
pub fn without_lone_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("\\u") && !text.contains("\\U") {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let hex_at = |at: usize| -> Option<u32> {
        let digits = bytes.get(at + 2..at + 6)?;
        (bytes[at] == b'\\' && bytes[at + 1] == b'u')
            .then(|| u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok())
            .flatten()
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut copied = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        match hex_at(at) {
            Some(high @ 0xD800..=0xDBFF) if matches!(hex_at(at + 6), Some(0xDC00..=0xDFFF)) => {
                let _ = high;
                at += 12; // a proper pair
            }
            Some(0xD800..=0xDFFF) => {
                out.push_str(&text[copied..at]);
                out.push_str("\\ufffd");
                at += 6;
                copied = at;
            }
            _ => at += 2, // any other escape, `\\` included
        }
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

/// What the transport has seen of the session's end, for the exit code.
#[derive(Default)]
pub struct Lifecycle {
    pub shutdown_requested: AtomicBool,
    pub exit_notified: AtomicBool,
}

impl Lifecycle {
    /// Exit code after the framework stops: 1 for `exit` without `shutdown` first (as
    /// the spec says), 0 otherwise.
    pub fn exit_code(&self) -> i32 {
        let exit = self.exit_notified.load(Ordering::SeqCst);
        if exit && !self.shutdown_requested.load(Ordering::SeqCst) { 1 } else { 0 }
    }
}

/// What to do with a well-formed message: forward it, or answer it here.
pub fn route(message: &Value, lifecycle: &Lifecycle) -> Option<Value> {
    let method = message.get("method").and_then(Value::as_str)?;
    let id = message.get("id");
    match method {
        "shutdown" => lifecycle.shutdown_requested.store(true, Ordering::SeqCst),
        "exit" => lifecycle.exit_notified.store(true, Ordering::SeqCst),
        _ => {}
    }
    // `$/` requests are optional to implement, but a request always gets a response.
    match id {
        Some(id) if method.starts_with("$/") => {
            Some(error_response(id.clone(), METHOD_NOT_FOUND, &format!("method not found: {method}")))
        }
        _ => None,
    }
}

/// Read the client's frames from `input` until it closes, answer what is malformed or
/// answered here, and write every other message to the framework (`to_framework`).
/// Runs on its own thread: reading standard input blocks.
pub fn forward(
    input: impl BufRead,
    to_framework: tokio::sync::mpsc::Sender<Vec<u8>>,
    lifecycle: &Lifecycle,
    output: &SharedOutput,
) {
    let mut reader = FrameReader::new(input);
    loop {
        match reader.next_incoming() {
            Incoming::End => return,
            Incoming::Malformed { reply, log } => {
                eprintln!("{log}");
                if let Some(reply) = reply
                    && output.send(&encode(&reply)).is_err()
                {
                    return;
                }
            }
            Incoming::Message(message) => {
                if let Some(reply) = route(&message, lifecycle) {
                    if output.send(&encode(&reply)).is_err() {
                        return;
                    }
                    continue;
                }
                if to_framework.blocking_send(encode(&message)).is_err() {
                    return; // the framework stopped (after `exit`)
                }
            }
        }
    }
}

/// The framework's input: the frames `forward` passed on, as one byte stream.
pub struct ForwardedFrames {
    frames: tokio::sync::mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl ForwardedFrames {
    /// The stream, and the sender `forward` writes to (closing it ends the stream).
    pub fn channel() -> (tokio::sync::mpsc::Sender<Vec<u8>>, ForwardedFrames) {
        let (sender, frames) = tokio::sync::mpsc::channel(64);
        (sender, ForwardedFrames { frames, current: Vec::new(), at: 0 })
    }
}

impl tokio::io::AsyncRead for ForwardedFrames {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        loop {
            if self.at < self.current.len() {
                let n = buf.remaining().min(self.current.len() - self.at);
                buf.put_slice(&self.current[self.at..self.at + n]);
                self.at += n;
                return Poll::Ready(Ok(()));
            }
            match self.frames.poll_recv(context) {
                Poll::Ready(Some(frame)) => (self.current, self.at) = (frame, 0),
                Poll::Ready(None) => return Poll::Ready(Ok(())), // the end of the stream
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// One frame on the wire.
pub fn encode(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body.as_bytes());
    frame
}

/// Standard output shared by the framework's replies and the transport's own: each
/// write goes out whole under one lock, so frames never interleave.
#[derive(Clone)]
pub struct SharedOutput(pub std::sync::Arc<std::sync::Mutex<std::io::Stdout>>);

impl SharedOutput {
    pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        out.write_all(frame)?;
        out.flush()
    }
}

impl tokio::io::AsyncWrite for SharedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Ready(self.send(buf).map(|()| buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(wire: &[u8]) -> Vec<Incoming> {
        let mut reader = FrameReader::new(wire);
        let mut all = Vec::new();
        loop {
            match reader.next_incoming() {
                Incoming::End => return all,
                other => all.push(other),
            }
        }
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        frame
    }

    fn code(incoming: &Incoming) -> (i64, Value) {
        match incoming {
            Incoming::Malformed { reply: Some(reply), .. } => {
                (reply["error"]["code"].as_i64().unwrap(), reply["id"].clone())
            }
            other => panic!("not malformed: {other:?}"),
        }
    }

    #[test]
    fn well_formed_messages_pass_and_lone_surrogates_become_replacement_characters() {
        let ping = br#"{"jsonrpc":"2.0","method":"x","params":{"t":"a\ud800b\ud83d\ude00\\ud800"}}"#;
        let all = read_all(&frame(ping));
        let Incoming::Message(message) = &all[0] else { panic!("{all:?}") };
        assert_eq!(message["params"]["t"], "a\u{fffd}b\u{1f600}\\ud800");
    }

    #[test]
    fn malformed_bodies_get_the_spec_error_and_reading_goes_on() {
        let good = br#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#;
        let cases: [(&[u8], i64, Value); 6] = [
            (b"not json", PARSE_ERROR, Value::Null),
            (b"[]", INVALID_REQUEST, Value::Null),
            (b"42", INVALID_REQUEST, Value::Null),
            (b"{\"id\":1,\"method\":\"x\xff\"}", PARSE_ERROR, Value::Null),
            (br#"{"id":3,"method":"initialize"}"#, INVALID_REQUEST, json!(3)),
            (br#"{"jsonrpc":"2.0","id":4,"method":5}"#, INVALID_REQUEST, json!(4)),
        ];
        for (body, expected, id) in cases {
            let mut wire = frame(body);
            wire.extend(frame(good));
            let all = read_all(&wire);
            assert_eq!(code(&all[0]), (expected, id), "{}", String::from_utf8_lossy(body));
            assert!(matches!(&all[1], Incoming::Message(m) if m["id"] == 7), "{all:?}");
        }
    }

    #[test]
    fn frames_without_a_usable_length_resynchronise_on_the_next_header() {
        let good = frame(br#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#);
        let length_2_64 = format!("Content-Length: {}\r\n\r\n{{}}", u128::from(u64::MAX) + 1);
        let headers: [&[u8]; 5] = [
            b"Content-Type: x\r\n\r\n{\"jsonrpc\":\"2.0\"}",
            b"Content-Length: ten\r\n\r\n{}",
            b"Content-Length: -5\r\n\r\n{}",
            length_2_64.as_bytes(),
            b"Content-Length: 99999999999\r\n\r\n{}",
        ];
        for bad in headers {
            let mut wire = bad.to_vec();
            wire.extend(&good);
            let all = read_all(&wire);
            assert_eq!(code(&all[0]), (PARSE_ERROR, Value::Null), "{}", String::from_utf8_lossy(bad));
            assert!(matches!(&all[1], Incoming::Message(m) if m["id"] == 7), "{all:?}");
            assert_eq!(all.len(), 2);
        }
    }

    #[test]
    fn lf_only_and_garbage_headers_are_parse_errors_delimited_by_their_length() {
        let good = frame(br#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#);
        for bad in [b"Content-Length: 2\n\n{}".to_vec(), b"Content-Length: 2\r\n\x01garbage\r\n\r\n{}".to_vec()] {
            let mut wire = bad.clone();
            wire.extend(&good);
            let all = read_all(&wire);
            assert_eq!(code(&all[0]), (PARSE_ERROR, Value::Null), "{}", String::from_utf8_lossy(&bad));
            assert!(matches!(&all[1], Incoming::Message(m) if m["id"] == 7), "{all:?}");
        }
    }

    #[test]
    fn unknown_dollar_requests_are_answered_and_exit_without_shutdown_is_an_error() {
        let lifecycle = Lifecycle::default();
        let reply = route(&json!({"jsonrpc":"2.0","id":1,"method":"$/unknown"}), &lifecycle).unwrap();
        assert_eq!(reply["error"]["code"], METHOD_NOT_FOUND);
        assert!(route(&json!({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}), &lifecycle).is_none());
        route(&json!({"jsonrpc":"2.0","method":"exit"}), &lifecycle);
        assert_eq!(lifecycle.exit_code(), 1);
        let orderly = Lifecycle::default();
        route(&json!({"jsonrpc":"2.0","id":2,"method":"shutdown"}), &orderly);
        route(&json!({"jsonrpc":"2.0","method":"exit"}), &orderly);
        assert_eq!(orderly.exit_code(), 0);
    }
}
