//! Headless Chromium (Debian's `chromium` package) driven over the DevTools
//! protocol through `--remote-debugging-pipe`: JSON messages separated by
//! NUL bytes on the browser's file descriptors 3 (in) and 4 (out). A shell
//! started by the test points those at the test's pipes, so there is no
//! port to find or race for, no websocket and no extra crate.
#![allow(dead_code, clippy::unwrap_used, reason = "test helper")]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one DevTools command or page load may take (generous: the
/// machine may be loaded).
pub const WAIT: Duration = Duration::from_secs(90);

/// The Chromium binary: `GALAPAGOS_CHROMIUM`, else `chromium` on the PATH.
pub fn chromium_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GALAPAGOS_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    for name in ["chromium", "chromium-browser"] {
        if let Some(found) = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        }) {
            return Some(found);
        }
    }
    None
}

/// What the page said on its console or threw, as text.
#[derive(Debug, Clone)]
pub struct Problem(pub String);

pub struct Browser {
    child: Child,
    input: ChildStdin,
    events: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Console errors, exceptions and failed loads seen so far.
    pub problems: Vec<Problem>,
    pending: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start headless Chromium with one page of `width`×`height`.
    pub fn start(width: u32, height: u32) -> Result<Self, String> {
        let bin = chromium_path().ok_or("no chromium on the PATH (apt-get install chromium)")?;
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let script = format!(
            "exec \"$0\" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
             --disable-extensions --disable-background-networking --disable-sync --mute-audio \
             --user-data-dir=\"$1\" --window-size={width},{height} --remote-debugging-pipe \
             about:blank 3<&0 4>&1 0</dev/null 1>/dev/null"
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(&bin)
            .arg(profile.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                            && tx.send(v).is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        let mut browser = Self {
            child,
            input,
            events: rx,
            next_id: 0,
            session: String::new(),
            problems: Vec::new(),
            pending: Vec::new(),
            _profile: profile,
        };
        let target = browser.call_browser("Target.createTarget", json!({"url": "about:blank"}))?;
        let target_id = target["targetId"].as_str().ok_or("no targetId")?.to_owned();
        let attached = browser.call_browser(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        )?;
        browser.session = attached["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_owned();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            browser.call(domain, json!({}))?;
        }
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        )?;
        Ok(browser)
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Result<u64, String> {
        self.next_id += 1;
        let mut msg = json!({"id": self.next_id, "method": method, "params": params});
        if session {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.input
            .write_all(&bytes)
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("the browser went away: {e}"))?;
        Ok(self.next_id)
    }

    fn note(&mut self, event: &Value) {
        let params = &event["params"];
        match event["method"].as_str().unwrap_or("") {
            "Runtime.exceptionThrown" => self.problems.push(Problem(format!(
                "exception: {}",
                params["exceptionDetails"]
            ))),
            "Runtime.consoleAPICalled"
                if params["type"] == "error" || params["type"] == "assert" =>
            {
                self.problems
                    .push(Problem(format!("console.error: {}", params["args"])));
            }
            "Log.entryAdded" if params["entry"]["level"] == "error" => {
                self.problems.push(Problem(format!(
                    "log: {} {}",
                    params["entry"]["text"], params["entry"]["url"]
                )))
            }
            "Network.loadingFailed" => self
                .problems
                .push(Problem(format!("load failed: {}", params["errorText"]))),
            _ => {}
        }
    }

    fn wait_reply(&mut self, id: u64, what: &str) -> Result<Value, String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) if v["id"].as_u64() == Some(id) => {
                    if let Some(err) = v.get("error") {
                        return Err(format!("{what}: {err}"));
                    }
                    return Ok(v["result"].clone());
                }
                Ok(v) => {
                    self.note(&v);
                    self.pending.push(v);
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{what}: no answer in {WAIT:?}"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{what}: the browser exited"));
                }
            }
        }
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params, false)?;
        self.wait_reply(id, method)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params, true)?;
        self.wait_reply(id, method)
    }

    /// Go to `url` and wait for its load event.
    pub fn goto(&mut self, url: &str) -> Result<(), String> {
        self.pending.clear();
        let nav = self.call("Page.navigate", json!({"url": url}))?;
        if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
            return Err(format!("{url}: {err}"));
        }
        let deadline = Instant::now() + WAIT;
        loop {
            if self
                .pending
                .iter()
                .any(|e| e["method"] == "Page.loadEventFired")
            {
                self.pending.clear();
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(v) => {
                    self.note(&v);
                    self.pending.push(v);
                }
                Err(_) => return Err(format!("{url}: no load event in {WAIT:?}")),
            }
        }
    }

    /// Evaluate `expression` in the page (promises awaited) and return its
    /// value as JSON.
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("{expression}: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// A PNG screenshot of the whole page at the current width.
    pub fn screenshot(&mut self, path: &Path) -> Result<(), String> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": false}),
        )?;
        let data = r["data"].as_str().ok_or("no screenshot data")?;
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| e.to_string())?;
        std::fs::write(path, bytes).map_err(|e| e.to_string())
    }

    /// Turn the page's scripts off, as a reader with JavaScript disabled
    /// has them (the DevTools' own `eval` still runs).
    pub fn disable_scripts(&mut self) -> Result<(), String> {
        self.call(
            "Emulation.setScriptExecutionDisabled",
            json!({"value": true}),
        )
        .map(|_| ())
    }

    /// Take the problems seen so far.
    pub fn take_problems(&mut self) -> Vec<Problem> {
        // drain what already arrived
        while let Ok(v) = self.events.try_recv() {
            self.note(&v);
        }
        std::mem::take(&mut self.problems)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.send("Browser.close", json!({}), false);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
