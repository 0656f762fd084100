//! The language server in process: the real `LspService`, driven by JSON-RPC messages as
//! a client sends them, with the messages it sends back collected.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;
use tower::{Service, ServiceExt};
use tower_lsp_server::LspService;
use tower_lsp_server::jsonrpc::{Request, Response};

const LEAKY: &str = "import torch\n\n\ndef collect(model, loader, criterion):\n    losses = []\n    for x, y in loader:\n        loss = criterion(model(x), y)\n        losses.append(loss)\n    return losses\n";
const AMP: &str = "from torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n";

struct Session {
    service: LspService<oomlint::server::Backend>,
    from_server: mpsc::UnboundedReceiver<Request>,
    next_id: i64,
    dir: tempfile::TempDir,
}

impl Session {
    /// Initialize with these client capabilities and options; preview rules run unless the
    /// options say otherwise (the tests are about every rule).
    async fn start(capabilities: Value, options: Value) -> Session {
        Session::start_with_files(&[], capabilities, options).await
    }

    /// Start in a workspace folder holding these files on disk.
    async fn start_with_files(files: &[(&str, &str)], capabilities: Value, mut options: Value) -> Session {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let key = if options.get("oomlint").is_some() { "oomlint" } else { "" };
        let settings = if key.is_empty() { &mut options } else { &mut options[key] };
        if let Some(settings) = settings.as_object_mut() {
            settings.entry("preview").or_insert(json!(true));
        }
        let (service, socket) = oomlint::server::service();
        let (mut requests, mut responses) = socket.split();
        let (tx, from_server) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(request) = requests.next().await {
                // Answer the server's own requests (registrations, refreshes) at once.
                if let Some(id) = request.id().cloned() {
                    let _ = responses.send(Response::from_ok(id, Value::Null)).await;
                }
                let _ = tx.send(request);
            }
        });
        let mut session = Session { service, from_server, next_id: 0, dir };
        let root = format!("file://{}", session.dir.path().display());
        let result = session
            .request(
                "initialize",
                json!({"capabilities": capabilities, "initializationOptions": options, "rootUri": root}),
            )
            .await
            .expect("initialize succeeds");
        assert_eq!(result["serverInfo"]["name"], "oomlint");
        session.notify("initialized", json!({})).await;
        session
    }

    fn uri(&self, name: &str) -> String {
        format!("file://{}/{name}", self.dir.path().display())
    }

    async fn request(&mut self, method: &'static str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let request = Request::build(method).params(params).id(self.next_id).finish();
        let response = self.service.ready().await.unwrap().call(request).await.unwrap().expect("a response");
        response.into_parts().1.map_err(|e| e.message.to_string())
    }

    async fn notify(&mut self, method: &'static str, params: Value) {
        let request = Request::build(method).params(params).finish();
        let response = self.service.ready().await.unwrap().call(request).await.unwrap();
        assert!(response.is_none());
    }

    async fn open(&mut self, name: &str, text: &str) -> String {
        let uri = self.uri(name);
        let item = json!({"uri": uri, "languageId": "python", "version": 1, "text": text});
        self.notify("textDocument/didOpen", json!({"textDocument": item})).await;
        uri
    }

    async fn change(&mut self, uri: &str, version: i32, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        )
        .await;
    }

    /// The next message from the server with this method.
    async fn next(&mut self, method: &str) -> Value {
        let wait = async {
            loop {
                let message = self.from_server.recv().await.expect("server still running");
                if message.method() == method {
                    let (_, _, params) = message.into_parts();
                    return params.unwrap_or(Value::Null);
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap_or_else(|_| panic!("no {method}"))
    }

    /// The messages shown to the user (`window/showMessage`) until the next diagnostics
    /// published for `uri`.
    async fn shown_until_diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let mut shown = Vec::new();
        let wait = async {
            loop {
                let message = self.from_server.recv().await.expect("server still running");
                let method = message.method().to_string();
                let params = message.into_parts().2.unwrap_or(Value::Null);
                match method.as_str() {
                    "window/showMessage" => shown.push(params),
                    "textDocument/publishDiagnostics" if params["uri"] == uri => return,
                    _ => {}
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| panic!("no diagnostics for {uri}"));
        shown
    }

    /// Every publication of diagnostics for `uri` up to `version`'s (however long a
    /// large document takes to lint).
    async fn publications_until(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let mut published = Vec::new();
        while published.last().is_none_or(|p: &Value| p["version"] != version) {
            let message = tokio::time::timeout(Duration::from_secs(300), self.from_server.recv())
                .await
                .expect("diagnostics for the version")
                .expect("server still running");
            if message.method() == "textDocument/publishDiagnostics" {
                let params = message.into_parts().2.unwrap_or(Value::Null);
                if params["uri"] == uri {
                    published.push(params);
                }
            }
        }
        published
    }

    /// The next diagnostics published for `uri`.
    async fn diagnostics(&mut self, uri: &str) -> Value {
        loop {
            let published = self.next("textDocument/publishDiagnostics").await;
            if published["uri"] == uri {
                return published;
            }
        }
    }

    /// The first diagnostics published for `uri` that hold a finding: a change in another
    /// file republishes it once the project index has taken that change in.
    async fn diagnostics_with_findings(&mut self, uri: &str) -> Value {
        loop {
            let published = self.diagnostics(uri).await;
            if !codes(&published).is_empty() {
                return published;
            }
        }
    }
}

fn codes(published: &Value) -> Vec<String> {
    published["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
}

/// An open is linted at once, whatever the debounce delay (it waits for the next keystroke,
/// and an open is not one); a change waits the delay out.
#[tokio::test]
async fn an_open_is_linted_at_once_and_a_change_after_the_debounce_delay() {
    let delay = Duration::from_millis(3000);
    let mut s = Session::start(json!({}), json!({"debounceMs": delay.as_millis() as u64})).await;
    let started = std::time::Instant::now();
    let uri = s.open("train.py", LEAKY).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), ["OOM001"]);
    assert!(started.elapsed() < delay / 2, "open linted after {:?}", started.elapsed());
    let at = json!({"start": {"line": 7, "character": 26}, "end": {"line": 7, "character": 26}});
    let started = std::time::Instant::now();
    s.change(&uri, 2, json!([{"range": at, "text": ".item()"}])).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), Vec::<String>::new());
    assert!(started.elapsed() >= delay, "change linted after {:?}", started.elapsed());
}

#[tokio::test]
async fn diagnostics_follow_edits_and_clear_on_close() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let uri = s.open("train.py", LEAKY).await;
    let published = s.diagnostics(&uri).await;
    assert_eq!(codes(&published), ["OOM001"]);
    assert_eq!(published["version"], 1);
    let diagnostic = &published["diagnostics"][0];
    assert_eq!(diagnostic["source"], "oomlint");
    assert_eq!(diagnostic["severity"], 1);
    assert_eq!(diagnostic["range"], json!({"start": {"line": 7, "character": 8}, "end": {"line": 7, "character": 27}}));
    // Fix it by hand: append `.item()` after `loss` on line 8.
    let at = json!({"start": {"line": 7, "character": 26}, "end": {"line": 7, "character": 26}});
    s.change(&uri, 2, json!([{"range": at, "text": ".item()"}])).await;
    let published = s.diagnostics(&uri).await;
    assert_eq!(published["version"], 2);
    assert_eq!(codes(&published), Vec::<String>::new());
    s.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}})).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), Vec::<String>::new());
}

#[tokio::test]
async fn positions_follow_the_negotiated_encoding() {
    let text = "from torch.cuda.amp import autocast\nx = 'é😀'; y = autocast()\n";
    for (offered, expected_kind, character) in
        [(json!(["utf-8", "utf-16"]), "utf-8", 18), (json!(["utf-16"]), "utf-16", 15)]
    {
        let mut s = Session::start(json!({"general": {"positionEncodings": offered}}), json!({"debounceMs": 0})).await;
        let uri = s.open("u.py", text).await;
        let published = s.diagnostics(&uri).await;
        assert_eq!(published["diagnostics"][0]["range"]["start"]["character"], character, "{expected_kind}");
        assert_eq!(published["diagnostics"][0]["tags"], json!([2]), "OOM003 is tagged deprecated");
    }
}

#[tokio::test]
async fn quick_fix_ignore_and_fix_all() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let uri = s.open("amp.py", AMP).await;
    let published = s.diagnostics(&uri).await;
    let diagnostic = published["diagnostics"][0].clone();
    let range = diagnostic["range"].clone();
    let actions = s
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [diagnostic]}}),
        )
        .await
        .unwrap();
    let titles: Vec<&str> = actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        ["oomlint: Use `torch.amp.autocast` with device \"cuda\"", "oomlint: Ignore OOM003 on this line"]
    );
    let fix = &actions[0];
    assert_eq!(fix["isPreferred"], true);
    let edits = fix["edit"]["changes"][&uri].as_array().unwrap();
    assert_eq!(edits.len(), 2, "the import and the call");
    let ignore = &actions[1]["edit"]["changes"][&uri][0];
    assert_eq!(ignore["newText"], "  # oomlint: ignore[OOM003]");
    let all = s
        .request("textDocument/codeAction", json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [], "only": ["source.fixAll"]}}))
        .await
        .unwrap();
    assert_eq!(all[0]["kind"], "source.fixAll.oomlint");
    assert_eq!(
        all[0]["edit"]["changes"][&uri][0]["newText"],
        "from torch.amp import autocast\n\nwith autocast(\"cuda\"):\n    pass\n"
    );
}

#[tokio::test]
async fn hover_quotes_the_rule_and_its_cost() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let uri = s.open("train.py", LEAKY).await;
    s.diagnostics(&uri).await;
    let hover = s
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 7, "character": 12}}))
        .await
        .unwrap();
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("OOM001 loss-tensor-kept")
            && text.contains("Measured cost")
            && text.contains(&oomlint::rules::RULES[0].measured_cost())
            && text.contains("MiB kept by the loss tensors"),
        "{text}"
    );
    assert!(text.contains("**Fix**"), "{text}");
    let nothing = s
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}))
        .await
        .unwrap();
    assert_eq!(nothing, Value::Null);
}

#[tokio::test]
async fn pull_diagnostics_when_the_client_supports_them() {
    let mut s = Session::start(json!({"textDocument": {"diagnostic": {}}}), json!({"debounceMs": 0})).await;
    let uri = s.open("amp.py", AMP).await;
    let report = s.request("textDocument/diagnostic", json!({"textDocument": {"uri": uri}})).await.unwrap();
    assert_eq!(report["kind"], "full");
    assert_eq!(report["items"][0]["code"], "OOM003");
}

#[tokio::test]
async fn diagnostics_link_to_their_rule_docs() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let uri = s.open("amp.py", AMP).await;
    let published = s.diagnostics(&uri).await;
    let href = published["diagnostics"][0]["codeDescription"]["href"].as_str().unwrap().to_owned();
    // By default the link opens the docs compiled into the server, written to a local file.
    assert!(href.starts_with("file:///") && href.ends_with("/OOM003-deprecated-cuda-amp.md"), "{href}");
    let rule = oomlint::rules::find("OOM003").unwrap();
    let path = href.parse::<tower_lsp_server::ls_types::Uri>().unwrap().to_file_path().unwrap().into_owned();
    assert_eq!(std::fs::read_to_string(path).unwrap(), rule.docs);

    // A docs site of the user's choosing.
    let template = "https://docs.example.org/oomlint/{code}-{slug}.html";
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"docsUrl": template}}})).await;
    let published = s.diagnostics(&uri).await;
    assert_eq!(
        published["diagnostics"][0]["codeDescription"]["href"],
        "https://docs.example.org/oomlint/OOM003-deprecated-cuda-amp.html"
    );
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"docsUrl": "https://x.org/"}}})).await;
    let message = s.next("window/showMessage").await;
    assert!(message["message"].as_str().unwrap().contains("names no rule"), "{message}");
}

/// The editor's `preview` setting turns the preview rules on and off, over the config file.
#[tokio::test]
async fn preview_setting_runs_the_preview_rules() {
    for rule in oomlint::rules::RULES.iter().filter(|r| r.has_fixtures()) {
        let path = format!("{}/fixtures/{}-{}/bad.py", env!("CARGO_MANIFEST_DIR"), rule.code, rule.slug);
        let bad = std::fs::read_to_string(path).unwrap();
        let mut s = Session::start(json!({}), json!({"debounceMs": 0, "preview": false})).await;
        let uri = s.open("bad.py", &bad).await;
        let found = |published: &Value| codes(published).iter().any(|c| c == rule.code);
        assert_eq!(found(&s.diagnostics(&uri).await), !rule.preview, "{} with preview off", rule.code);
        s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"preview": true}}})).await;
        assert!(found(&s.diagnostics(&uri).await), "{} with preview on", rule.code);
    }
}

/// A preview rule named in `select` while preview is off runs nothing: the editor says so,
/// once per change of the settings or of the configuration file, as `check` does.
#[tokio::test]
async fn selecting_a_preview_rule_without_preview_is_shown_once_per_change() {
    let code = oomlint::rules::RULES.iter().find(|r| r.preview).expect("a preview rule").code;
    let warning = |shown: &[Value], origin: &str| {
        assert_eq!(shown.len(), 1, "{shown:?}");
        let text = shown[0]["message"].as_str().unwrap();
        assert_eq!(shown[0]["type"], 2, "a warning: {text}");
        assert!(text.contains(code) && text.contains("preview") && text.contains(origin), "{text}");
    };

    // Selected by the editor's settings.
    let mut s = Session::start(json!({}), json!({"debounceMs": 0, "preview": false, "select": [code]})).await;
    let first = s.open("first.py", AMP).await;
    warning(&s.shown_until_diagnostics(&first).await, "`select` setting");
    let second = s.open("second.py", AMP).await;
    assert_eq!(s.shown_until_diagnostics(&second).await, Vec::<Value>::new(), "shown once");
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"preview": true}}})).await;
    assert_eq!(s.shown_until_diagnostics(&first).await, Vec::<Value>::new(), "preview on: the rule runs");
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"preview": false}}})).await;
    warning(&s.shown_until_diagnostics(&first).await, "`select` setting");

    // Selected by the project's configuration file, then preview turned on there (the
    // client leaves preview to the file: `null`).
    let config = ("oomlint.toml", format!("select = [\"{code}\"]\n"));
    let mut s =
        Session::start_with_files(&[(config.0, &config.1)], json!({}), json!({"debounceMs": 0, "preview": null})).await;
    let s_uri = s.uri("oomlint.toml");
    let first = s.open("first.py", AMP).await;
    warning(&s.shown_until_diagnostics(&first).await, "oomlint.toml");
    let second = s.open("second.py", AMP).await;
    assert_eq!(s.shown_until_diagnostics(&second).await, Vec::<Value>::new(), "shown once");
    std::fs::write(s.dir.path().join("oomlint.toml"), format!("{}preview = true\n", config.1)).unwrap();
    s.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": s_uri, "type": 2}]})).await;
    assert_eq!(s.shown_until_diagnostics(&first).await, Vec::<Value>::new(), "preview on in the file");
}

#[tokio::test]
async fn client_settings_and_config_files() {
    let mut s = Session::start(json!({}), json!({"oomlint": {"ignore": ["OOM003"], "debounceMs": 0}})).await;
    let uri = s.open("amp.py", AMP).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), Vec::<String>::new(), "ignored by initializationOptions");
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"ignore": []}}})).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), ["OOM003"]);

    // A config file that ignores the rule, then a broken edit of it.
    let config = s.dir.path().join("oomlint.toml");
    std::fs::write(&config, "ignore = [\"OOM003\"]\n").unwrap();
    let config_uri = s.uri("oomlint.toml");
    s.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": config_uri, "type": 1}]})).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), Vec::<String>::new());
    std::fs::write(&config, "ignore = [\"OOM003\"\n").unwrap();
    s.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": config_uri, "type": 2}]})).await;
    let message = s.next("window/showMessage").await;
    assert!(message["message"].as_str().unwrap().contains("oomlint.toml"), "{message}");
    assert_eq!(codes(&s.diagnostics(&uri).await), Vec::<String>::new(), "the last good config stays in force");

    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"enable": false}}})).await;
    let message = s.next("textDocument/publishDiagnostics").await;
    assert_eq!(message["diagnostics"], json!([]));
}

#[tokio::test]
async fn bad_input_never_crashes_the_server() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    // A change for a document that is not open, and an edit past the end.
    s.change("file:///nowhere.py", 2, json!([{"text": "x"}])).await;
    assert!(s.next("window/logMessage").await["message"].as_str().unwrap().contains("not open"));
    let uri = s.open("t.py", AMP).await;
    s.diagnostics(&uri).await;
    let far = json!({"start": {"line": 90, "character": 0}, "end": {"line": 91, "character": 0}});
    s.change(&uri, 2, json!([{"range": far, "text": "x"}])).await;
    assert!(s.next("window/logMessage").await["message"].as_str().unwrap().contains("refused"));
    // A stale version is ignored.
    s.change(&uri, 1, json!([{"text": "print(1)\n"}])).await;
    assert!(s.next("window/logMessage").await["message"].as_str().unwrap().contains("stale"));
    // Unknown methods and malformed params get error responses.
    assert!(s.request("oomlint/unknown", json!({})).await.is_err());
    assert!(s.request("textDocument/hover", json!({"nonsense": true})).await.is_err());
    // A file with syntax errors, and a large one.
    let broken = s.open("broken.py", &format!("def broken(:\n{AMP}")).await;
    assert_eq!(codes(&s.diagnostics(&broken).await), ["OOM003"]);
    let large: String = (0..50_000).map(|i| format!("x{i} = {i}\n")).collect::<String>() + AMP;
    let big = s.open("big.py", &large).await;
    assert_eq!(codes(&s.diagnostics(&big).await), ["OOM003"]);
    // Still answering.
    assert_eq!(s.request("shutdown", Value::Null).await, Ok(Value::Null));
}

/// Frame a JSON-RPC message for stdio.
fn frame(message: Value) -> Vec<u8> {
    let body = message.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[test]
fn the_binary_exits_on_exit_even_with_stdin_open() {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oomlint"))
        .arg("server")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"Content-Length: 5\r\n\r\n{oops").unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
        json!({"jsonrpc": "2.0", "method": "exit"}),
    ] {
        stdin.write_all(&frame(message)).unwrap();
    }
    stdin.flush().unwrap();
    // stdin stays open: the server must still exit.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
}

#[tokio::test]
async fn relinting_one_statement_matches_a_full_lint() {
    // The last function's append carries a suppression: once the edit there removes the
    // finding, the suppression is reported unused.
    let suppressed = LEAKY.replace("losses.append(loss)", "losses.append(loss)  # noqa: OOM001");
    let text = format!(
        "{LEAKY}\n\ndef later(model, val_loader):\n    model.eval()\n    for x in val_loader:\n        print(model(x))  # note\n\n\n{suppressed}"
    );
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let uri = s.open("multi.py", &text).await;
    assert_eq!(codes(&s.diagnostics(&uri).await), ["OOM001", "OOM002"]);
    let lines: Vec<&str> = text.lines().collect();
    let append_line = lines.iter().position(|l| l.contains("losses.append")).unwrap() as u32;
    let suppressed_line = lines.iter().rposition(|l| l.contains("losses.append")).unwrap() as u32;
    let note_line = lines.iter().position(|l| l.contains("# note")).unwrap() as u32;
    // Local edits: break the first append's container name, type in a comment, undo;
    // then the same under the suppression.
    let steps = [
        (append_line, 10, 10, "z"),     // lozsses.append(loss): unknown container, silent
        (note_line, 30, 30, "!"),       // inside the comment
        (append_line, 10, 11, ""),      // back to losses.append(loss)
        (suppressed_line, 10, 10, "z"), // the suppression now suppresses nothing
        (suppressed_line, 10, 11, ""),  // and is used again
    ];
    let mut current = text.clone();
    for (i, (line, from, to, insert)) in steps.into_iter().enumerate() {
        let version = i as i32 + 2;
        let range = json!({"start": {"line": line, "character": from}, "end": {"line": line, "character": to}});
        s.change(&uri, version, json!([{"range": range, "text": insert}])).await;
        let published = s.diagnostics(&uri).await;
        // The same text linted from scratch in a fresh session.
        let mut edited: Vec<String> = current.lines().map(str::to_string).collect();
        edited[line as usize].replace_range(from as usize..to as usize, insert);
        current = edited.join("\n") + "\n";
        let mut fresh = Session::start(json!({}), json!({"debounceMs": 0})).await;
        let fresh_uri = fresh.open("multi.py", &current).await;
        let expected = fresh.diagnostics(&fresh_uri).await;
        assert_eq!(published["diagnostics"], expected["diagnostics"], "after step {i}");
        if i == 3 {
            assert_eq!(codes(&published), ["OOM001", "OOM002", "OOM100"]);
        }
    }
}

#[tokio::test]
async fn notebook_cells_are_linted_together_and_reported_per_cell() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let notebook = s.uri("explore.ipynb");
    let cell = |n: u32| format!("{notebook}#cell{n}");
    let sources = [
        "import torch\nfrom torch.cuda.amp import autocast",
        "# Notes",
        "%time\nwith autocast():\n    state = torch.load(path)",
    ];
    let cells: Vec<Value> =
        (0..3u32).map(|n| json!({"kind": if n == 1 { 1 } else { 2 }, "document": cell(n)})).collect();
    let texts: Vec<Value> = (0..3u32)
        .map(|n| {
            let language = if n == 1 { "markdown" } else { "python" };
            json!({"uri": cell(n), "languageId": language, "version": 1, "text": sources[n as usize]})
        })
        .collect();
    s.notify(
        "notebookDocument/didOpen",
        json!({
            "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": cells},
            "cellTextDocuments": texts,
        }),
    )
    .await;
    // The import in cell 0 resolves the `autocast` of cell 2, reported in cell 2's own lines
    // (the `%time` line is IPython, not a syntax error).
    let mut published = std::collections::HashMap::new();
    while published.len() < 2 {
        let message = s.next("textDocument/publishDiagnostics").await;
        published.insert(message["uri"].as_str().unwrap().to_string(), message);
    }
    assert_eq!(codes(&published[&cell(0)]), Vec::<String>::new());
    let in_cell_2 = &published[&cell(2)];
    assert_eq!(codes(in_cell_2), ["OOM003", "OOM008"]);
    assert_eq!(in_cell_2["diagnostics"][0]["range"]["start"], json!({"line": 1, "character": 5}));

    // Hover and quick fixes work per cell. OOM008's fix stays in cell 2 and is offered;
    // OOM003's would also rewrite the import in cell 0, so the editor does not offer it.
    let hover = s
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": cell(2)}, "position": {"line": 1, "character": 7}}),
        )
        .await
        .unwrap();
    assert!(hover["contents"]["value"].as_str().unwrap().contains("OOM003"), "{hover}");
    let actions = s
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": cell(2)},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 30}},
                "context": {"diagnostics": in_cell_2["diagnostics"]},
            }),
        )
        .await
        .unwrap();
    let titles: Vec<&str> = actions.as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert!(titles.iter().any(|t| t.contains("map_location")), "{titles:?}");
    assert!(!titles.iter().any(|t| t.contains("torch.amp")), "{titles:?}");
    let fix =
        actions.as_array().unwrap().iter().find(|a| a["title"].as_str().unwrap().contains("map_location")).unwrap();
    assert_eq!(fix["edit"]["changes"][cell(2)][0]["range"]["start"], json!({"line": 2, "character": 27}), "{fix}");

    // Editing cell 0 to the new spelling clears cell 2 too.
    let line = json!({"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 19}});
    s.notify(
        "notebookDocument/didChange",
        json!({
            "notebookDocument": {"uri": notebook, "version": 2},
            "change": {"cells": {"textContent": [
                {"document": {"uri": cell(0), "version": 2}, "changes": [{"range": line, "text": "torch.amp"}]}
            ]}},
        }),
    )
    .await;
    let mut cleared = std::collections::HashMap::new();
    while cleared.len() < 2 {
        let message = s.next("textDocument/publishDiagnostics").await;
        cleared.insert(message["uri"].as_str().unwrap().to_string(), codes(&message));
    }
    assert_eq!(cleared[&cell(2)], ["OOM008"], "{cleared:?}");
    assert!(cleared[&cell(0)].is_empty());

    // A cell inserted after the first one joins the notebook in its place.
    s.notify(
        "notebookDocument/didChange",
        json!({
            "notebookDocument": {"uri": notebook, "version": 3},
            "change": {"cells": {"structure": {
                "array": {"start": 1, "deleteCount": 0, "cells": [{"kind": 2, "document": cell(3)}]},
                "didOpen": [{"uri": cell(3), "languageId": "python", "version": 1, "text": "weights = torch.load(p)"}],
            }}},
        }),
    )
    .await;
    let mut inserted = std::collections::HashMap::new();
    while inserted.len() < 3 {
        let message = s.next("textDocument/publishDiagnostics").await;
        inserted.insert(message["uri"].as_str().unwrap().to_string(), codes(&message));
    }
    assert_eq!(inserted[&cell(3)], ["OOM008"], "{inserted:?}");

    // Closing the notebook clears its cells.
    s.notify(
        "notebookDocument/didClose",
        json!({"notebookDocument": {"uri": notebook}, "cellTextDocuments": [{"uri": cell(0)}, {"uri": cell(1)}, {"uri": cell(2)}]}),
    )
    .await;
    assert_eq!(codes(&s.diagnostics(&cell(2)).await), Vec::<String>::new());
}

/// Fix-all on a notebook cell fixes the notebook as `oomlint check --fix` fixes the
/// `.ipynb`: the cells linted together, a fix may edit another cell (OOM003 rewrites the
/// import in the first cell for a call in the third), each changed cell replaced.
#[tokio::test]
async fn fix_all_on_a_notebook_cell_fixes_the_notebook_like_a_file() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let notebook = s.uri("fixall.ipynb");
    let cell = |n: u32| format!("{notebook}#cell{n}");
    let sources =
        ["import torch\nfrom torch.cuda.amp import autocast\n", "# Notes", "%time\nwith autocast():\n    y = 1\n"];
    let kinds = [2, 1, 2];
    let cells: Vec<Value> = (0..3u32).map(|n| json!({"kind": kinds[n as usize], "document": cell(n)})).collect();
    let texts: Vec<Value> = (0..3u32)
        .map(|n| {
            let language = if n == 1 { "markdown" } else { "python" };
            json!({"uri": cell(n), "languageId": language, "version": 1, "text": sources[n as usize]})
        })
        .collect();
    s.notify(
        "notebookDocument/didOpen",
        json!({
            "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1, "cells": cells},
            "cellTextDocuments": texts,
        }),
    )
    .await;
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
    let all = s
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": cell(2)}, "range": range, "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
        )
        .await
        .unwrap();
    assert_eq!(all[0]["kind"], "source.fixAll.oomlint", "{all}");
    let changes = all[0]["edit"]["changes"].as_object().unwrap();
    let mut edited: Vec<String> = sources.iter().map(|s| s.to_string()).collect();
    for (n, text) in edited.iter_mut().enumerate() {
        let Some(edits) = changes.get(&cell(n as u32)) else { continue };
        assert_eq!(edits.as_array().unwrap().len(), 1, "one edit of the whole cell");
        assert_eq!(edits[0]["range"]["start"], json!({"line": 0, "character": 0}));
        *text = edits[0]["newText"].as_str().unwrap().to_string();
    }
    assert!(!changes.contains_key(&cell(1)), "the markdown cell is not touched");
    assert_eq!(edited[0], "import torch\nfrom torch.amp import autocast\n");
    assert_eq!(edited[2], "%time\nwith autocast(\"cuda\"):\n    y = 1\n");

    // The same cells in an `.ipynb` file, fixed through the library as `check --fix` does.
    let file_cells: Vec<Value> = (0..3)
        .map(|n| {
            let kind = if n == 1 { "markdown" } else { "code" };
            json!({"cell_type": kind, "metadata": {}, "source": sources[n], "outputs": [], "execution_count": null})
        })
        .collect();
    let file = json!({"cells": file_cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).to_string();
    let path = std::path::Path::new("fixall.ipynb");
    let source = oomlint::lint::SourceKind::from_file_text(path, &file).unwrap();
    let settings = oomlint::engine::RuleSettings::default();
    let fixed = oomlint::lint::fix(&source, path, &settings, oomlint::fix::Applicability::Safe).unwrap();
    let oomlint::lint::Contents::File(written) = fixed.contents else { panic!("a notebook file is fixed as a file") };
    let written: Value = serde_json::from_str(&written).unwrap();
    let fixed_cells: Vec<&str> =
        written["cells"].as_array().unwrap().iter().map(|c| c["source"].as_str().unwrap()).collect();
    assert_eq!(fixed_cells, edited, "the editor's fix-all and the file's agree cell by cell");
}

const EVALUATION: &str = "import torch\n\n\ndef evaluate(model, val_loader):\n    model.eval()\n    for x, y in val_loader:\n        out = model(x)\n        print(out.sum().item())\n";
const TRAIN_UNDER_NO_GRAD: &str = "import torch\nfrom evaluation import evaluate\n\n\ndef main(model, val_loader):\n    with torch.no_grad():\n        evaluate(model, val_loader)\n";

/// The workspace is indexed in the background at start, with work-done progress; the
/// caller on disk silences OOM002 in the callee, and editing the caller (open in the
/// editor, not saved) republishes the callee's file without touching it.
#[tokio::test]
async fn editing_a_caller_republishes_the_callee_in_another_file() {
    let files = [("evaluation.py", EVALUATION), ("train.py", TRAIN_UNDER_NO_GRAD)];
    let mut s =
        Session::start_with_files(&files, json!({"window": {"workDoneProgress": true}}), json!({"debounceMs": 0}))
            .await;
    // Begin, reports, end.
    loop {
        let progress = s.next("$/progress").await;
        assert_eq!(progress["token"], "oomlint/index");
        if progress["value"]["kind"] == "end" {
            assert_eq!(progress["value"]["message"], "2 files indexed");
            break;
        }
    }
    let evaluation = s.open("evaluation.py", EVALUATION).await;
    assert_eq!(codes(&s.diagnostics(&evaluation).await), Vec::<String>::new());

    let train = s.open("train.py", TRAIN_UNDER_NO_GRAD).await;
    // Remove `with torch.no_grad():` (line 6) and dedent the call under it.
    let edit =
        json!({"range": {"start": {"line": 5, "character": 0}, "end": {"line": 6, "character": 8}}, "text": "    "});
    s.change(&train, 2, json!([edit])).await;
    let published = s.diagnostics_with_findings(&evaluation).await;
    assert_eq!(codes(&published), ["OOM002"]);
    let related = &published["diagnostics"][0]["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], s.uri("train.py"));
    assert_eq!(related["location"]["range"]["start"]["line"], 5);
    assert_eq!(related["message"], "`evaluate()` is called here with autograd on");

    // Putting it back silences the callee again.
    let edit = json!({"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 4}}, "text": "    with torch.no_grad():\n        "});
    s.change(&train, 3, json!([edit])).await;
    loop {
        if codes(&s.diagnostics(&evaluation).await).is_empty() {
            break;
        }
    }
}

/// A file that defines a function of the same name as the one a caller calls, but that
/// the caller does not import, is not a dependent of the caller: editing the caller
/// republishes the callee it imports and leaves the other file alone.
#[tokio::test]
async fn editing_a_caller_relints_only_the_callee_it_imports() {
    let files = [("evaluation.py", EVALUATION), ("other.py", EVALUATION), ("train.py", TRAIN_UNDER_NO_GRAD)];
    let mut s =
        Session::start_with_files(&files, json!({"window": {"workDoneProgress": true}}), json!({"debounceMs": 0}))
            .await;
    while s.next("$/progress").await["value"]["kind"] != "end" {}
    let evaluation = s.open("evaluation.py", EVALUATION).await;
    assert!(codes(&s.diagnostics(&evaluation).await).is_empty());
    let other = s.open("other.py", EVALUATION).await;
    // Nothing calls the other `evaluate`: its forward pass runs with autograd on.
    assert_eq!(codes(&s.diagnostics(&other).await), ["OOM002"]);
    let train = s.open("train.py", TRAIN_UNDER_NO_GRAD).await;
    // Take `with torch.no_grad():` out, then put it back, a few times over: the callee is
    // republished with its finding and then without each time; the other file never is.
    let out =
        json!({"range": {"start": {"line": 5, "character": 0}, "end": {"line": 6, "character": 8}}, "text": "    "});
    let back = json!({"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 4}}, "text": "    with torch.no_grad():\n        "});
    let mut published = Vec::new();
    for round in 0..3 {
        for (step, (edit, guarded)) in [(&out, false), (&back, true)].into_iter().enumerate() {
            s.change(&train, 2 + 2 * round + step as i32, json!([edit])).await;
            loop {
                let message = s.next("textDocument/publishDiagnostics").await;
                let uri = message["uri"].as_str().unwrap_or_default().to_string();
                published.push(uri.clone());
                if uri == evaluation && codes(&message).is_empty() == guarded {
                    break;
                }
            }
        }
    }
    assert!(published.contains(&train), "{published:?}");
    assert!(!published.contains(&other), "the other `evaluate` was relinted: {published:?}");
}

/// An open notebook is part of the project as `check` reads it, its code cells joined:
/// the caller in its cell silences OOM002 in the callee's file from disk at first, and
/// editing the cell (not saved) republishes the callee's file with the finding.
#[tokio::test]
async fn editing_a_caller_in_a_notebook_cell_republishes_the_callee_in_another_file() {
    let cells =
        ["import torch\nfrom evaluation import evaluate", "with torch.no_grad():\n    evaluate(model, val_loader)"];
    let code_cell = |text: &str| json!({"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": text});
    let on_disk = json!({
        "cells": cells.iter().map(|c| code_cell(c)).collect::<Vec<_>>(),
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })
    .to_string();
    let files = [("evaluation.py", EVALUATION), ("explore.ipynb", on_disk.as_str())];
    let mut s = Session::start_with_files(&files, json!({}), json!({"debounceMs": 0})).await;
    let evaluation = s.open("evaluation.py", EVALUATION).await;
    // Before the index is built the finding may show; once built, the notebook's call
    // under `no_grad` silences it.
    while !codes(&s.diagnostics(&evaluation).await).is_empty() {}

    let notebook = s.uri("explore.ipynb");
    let cell = |n: usize| format!("{notebook}#cell{n}");
    let texts: Vec<Value> =
        (0..2).map(|n| json!({"uri": cell(n), "languageId": "python", "version": 1, "text": cells[n]})).collect();
    s.notify(
        "notebookDocument/didOpen",
        json!({
            "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
                                 "cells": (0..2).map(|n| json!({"kind": 2, "document": cell(n)})).collect::<Vec<_>>()},
            "cellTextDocuments": texts,
        }),
    )
    .await;
    // Remove `with torch.no_grad():` and dedent the call under it.
    let edit = json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 4}}, "text": ""});
    s.notify(
        "notebookDocument/didChange",
        json!({
            "notebookDocument": {"uri": notebook, "version": 2},
            "change": {"cells": {"textContent": [{"document": {"uri": cell(1), "version": 2}, "changes": [edit]}]}},
        }),
    )
    .await;
    let published = s.diagnostics_with_findings(&evaluation).await;
    assert_eq!(codes(&published), ["OOM002"]);
    let related = &published["diagnostics"][0]["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], notebook);
}

/// A decorator from another module that enters `inference_mode`, seen by the server.
#[tokio::test]
async fn a_decorator_from_another_module_silences_oom002_in_the_editor() {
    let modes = "import torch\n\n\ndef inference_only(fn):\n    def wrapper(*args):\n        with torch.inference_mode():\n            return fn(*args)\n    return wrapper\n";
    let decorated = "import torch\nfrom modes import inference_only\n\n\n@inference_only\ndef evaluate(model, val_loader):\n    model.eval()\n    for x, y in val_loader:\n        out = model(x)\n        print(out.sum().item())\n";
    let mut s = Session::start_with_files(
        &[("modes.py", modes), ("evaluation.py", decorated)],
        json!({}),
        json!({"debounceMs": 0}),
    )
    .await;
    let evaluation = s.open("evaluation.py", decorated).await;
    // Before the index is built the finding may show; once built, it goes.
    loop {
        if codes(&s.diagnostics(&evaluation).await).is_empty() {
            break;
        }
    }
    // The decorator edited so that it no longer disables autograd brings it back.
    let modes_uri = s.open("modes.py", modes).await;
    let edit = json!({"range": {"start": {"line": 5, "character": 19}, "end": {"line": 5, "character": 33}}, "text": "enable_grad"});
    s.change(&modes_uri, 2, json!([edit])).await;
    loop {
        if codes(&s.diagnostics(&evaluation).await) == ["OOM002"] {
            break;
        }
    }
}

/// A CUDA memory snapshot of `train.py` in `dir`: 8 MiB held by line 7 (1-based), 2 MiB
/// by line 4, live at the peak.
fn snapshot_of(dir: &std::path::Path) -> Vec<u8> {
    let file = dir.join("train.py").display().to_string();
    let frames = |line: u32, name: &str| json!([{"filename": "/venv/lib/python3.11/site-packages/torch/nn/functional.py", "line": 10, "name": "linear"}, {"filename": file, "line": line, "name": name}]);
    let mib = 1024 * 1024;
    let snapshot = json!({
        "segments": [{"device": 0, "address": 0x1000_0000u64, "total_size": 10 * mib, "allocated_size": 10 * mib, "stream": 0,
                      "blocks": [{"size": 8 * mib, "requested_size": 8 * mib, "state": "active_allocated", "frames": frames(7, "collect")},
                                 {"size": 2 * mib, "requested_size": 2 * mib, "state": "active_allocated", "frames": frames(4, "collect")}]}],
        "device_traces": [[
            {"action": "alloc", "addr": 0x1000_0000u64, "size": 8 * mib, "stream": 0, "frames": frames(7, "collect")},
            {"action": "alloc", "addr": 0x1000_0000u64 + 8 * mib, "size": 2 * mib, "stream": 0, "frames": frames(4, "collect")},
        ]],
    });
    pickled::to_vec(&snapshot, pickled::SerOptions::new()).unwrap()
}

async fn hints(s: &mut Session, uri: &str) -> Vec<(u64, u64, String)> {
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}});
    let result =
        s.request("textDocument/inlayHint", json!({"textDocument": {"uri": uri}, "range": range})).await.unwrap();
    result
        .as_array()
        .map(|hints| {
            hints
                .iter()
                .map(|h| {
                    let p = &h["position"];
                    (
                        p["line"].as_u64().unwrap(),
                        p["character"].as_u64().unwrap(),
                        h["label"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_memory_snapshot_shows_as_inlay_hints_that_follow_their_lines() {
    let mut s = Session::start_with_files(&[("train.py", LEAKY)], json!({}), json!({"debounceMs": 0})).await;
    // The snapshot names train.py by its absolute path in the workspace folder.
    let pickle = snapshot_of(s.dir.path());
    std::fs::write(s.dir.path().join("memory.pickle"), &pickle).unwrap();
    s.notify("workspace/didChangeConfiguration", json!({"settings": {"oomlint": {"snapshot": "memory.pickle"}}})).await;
    let uri = s.open("train.py", LEAKY).await;
    let line7 = LEAKY.lines().nth(6).unwrap().len() as u64;
    let line4 = LEAKY.lines().nth(3).unwrap().len() as u64;
    assert_eq!(
        hints(&mut s, &uri).await,
        [(6, line7, "▲ 8.00 MiB at peak".to_string()), (3, line4, "▲ 2.00 MiB at peak".to_string())]
    );
    let hover = s
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 6, "character": 2}}))
        .await
        .unwrap();
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(text.contains("**8.00 MiB** at peak (80% of 10.00 MiB live) held by `collect`"), "{text}");
    // Two lines typed above: the hints move with their lines.
    let top = json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
    s.change(&uri, 2, json!([{"range": top, "text": "import os\nimport sys\n"}])).await;
    assert_eq!(hints(&mut s, &uri).await.iter().map(|h| h.0).collect::<Vec<_>>(), [8, 5]);
    // The heavy line rewritten: its hint goes, the other stays.
    let heavy = json!({"start": {"line": 8, "character": 8}, "end": {"line": 8, "character": line7}});
    s.change(&uri, 3, json!([{"range": heavy, "text": "loss = criterion(model(x), y).item()"}])).await;
    assert_eq!(hints(&mut s, &uri).await.iter().map(|h| h.0).collect::<Vec<_>>(), [5]);
    // The command forgets the snapshot, or loads another; a bad file is refused clearly.
    let cleared =
        s.request("workspace/executeCommand", json!({"command": "oomlint.showSnapshot", "arguments": [""]})).await;
    assert_eq!(cleared.unwrap(), json!({"lines": 0}));
    assert!(hints(&mut s, &uri).await.is_empty());
    std::fs::write(s.dir.path().join("broken.pickle"), &pickle[..pickle.len() / 2]).unwrap();
    let broken = s.dir.path().join("broken.pickle").display().to_string();
    let refused =
        s.request("workspace/executeCommand", json!({"command": "oomlint.showSnapshot", "arguments": [broken]})).await;
    assert!(refused.unwrap_err().contains("truncated pickle"));
    let path = s.dir.path().join("memory.pickle").display().to_string();
    let loaded =
        s.request("workspace/executeCommand", json!({"command": "oomlint.showSnapshot", "arguments": [path]})).await;
    assert_eq!(loaded.unwrap(), json!({"lines": 2}));
    assert_eq!(hints(&mut s, &uri).await.len(), 1);
}

/// A 100,000-line document: the leaky function, then generated assignments.
fn large_document() -> String {
    let mut text = String::from(LEAKY);
    for i in 0..100_000 - LEAKY.lines().count() {
        text.push_str(&format!("x{i} = {i}\n"));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_edits_to_a_large_document_is_coalesced_while_other_documents_are_answered() {
    let mut s = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let other = s.open("other.py", LEAKY).await;
    assert_eq!(codes(&s.diagnostics(&other).await), ["OOM001"]);
    let mut text = large_document();
    let big = s.open("big.py", &text).await;
    // 500 one-line edits in a burst, each placed in the text the ones before it left: a
    // comment typed character by character on one line, then the leaky append fixed.
    let line_end = |text: &str, line: usize| text.lines().nth(line).unwrap().len();
    let comment_line = text.lines().position(|l| l == "x5 = 5").unwrap();
    let append_line = text.lines().position(|l| l.contains("losses.append(loss)")).unwrap();
    let mut edits: Vec<(usize, usize, &str)> =
        (0..499).map(|k| (comment_line, line_end(&text, comment_line) + k, if k == 0 { "#" } else { "x" })).collect();
    edits.push((append_line, line_end(&text, append_line) - 1, ".item()"));
    for (version, &(line, character, insert)) in edits.iter().enumerate() {
        let at = json!({"line": line, "character": character});
        s.change(&big, version as i32 + 2, json!([{"range": {"start": at, "end": at}, "text": insert}])).await;
        let line_start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        text.insert_str(line_start + character, insert);
    }
    let last = edits.len() as i32 + 1;
    // Another document is answered while the large one is relinted: the hover's reply
    // comes before the large document's last diagnostics.
    let leaky_line = LEAKY.lines().position(|l| l.contains("losses.append")).unwrap();
    let hover = s
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": other}, "position": {"line": leaky_line, "character": 12}}),
        )
        .await
        .unwrap();
    assert!(hover["contents"]["value"].as_str().unwrap().contains("OOM001"), "{hover}");
    let mut published = Vec::new();
    while let Ok(message) = s.from_server.try_recv() {
        if message.method() == "textDocument/publishDiagnostics" {
            let params = message.into_parts().2.unwrap_or(Value::Null);
            if params["uri"] == big {
                assert_ne!(params["version"], last, "the hover waited for the large document's lint");
                published.push(params);
            }
        }
    }
    // Then every publication for the large document, up to the last version's.
    published.extend(s.publications_until(&big, last).await);
    // Versions in order, and most never linted: the burst costs a few lints, not one
    // per change.
    let versions: Vec<i64> = published.iter().map(|p| p["version"].as_i64().unwrap()).collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    assert!(versions.len() < 10, "superseded versions were linted: {versions:?}");
    // The edits were applied in order: the findings are those of the final text.
    let final_findings = &published.last().unwrap()["diagnostics"];
    let mut fresh = Session::start(json!({}), json!({"debounceMs": 0})).await;
    let fresh_uri = fresh.open("big.py", &text).await;
    let expected = fresh.publications_until(&fresh_uri, 1).await;
    assert_eq!(final_findings, &expected.last().unwrap()["diagnostics"]);
    assert!(text.lines().nth(comment_line).unwrap().ends_with(&format!("#{}", "x".repeat(498))));
    assert!(codes(published.last().unwrap()).is_empty(), "the fixed append is no longer reported");
}
