//! Headless Chromium driven over the DevTools protocol, for the UI tests: a small
//! synchronous client (one WebSocket, one page) with what the tests need: navigate,
//! evaluate JavaScript, wait for a condition, take a screenshot.
//!
//! Chromium is Debian's (`/usr/bin/chromium`, or `SUMI_CHROMIUM`), started with the
//! flags that keep it from reaching for the network. Without it the tests fail and
//! say how to install it; they never skip.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// One browser at a time: two cores do not run several Chromiums and a server well.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Where screenshots go: `target/ui-screenshots/`.
pub fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("ui-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

fn chromium_path() -> PathBuf {
    let path = std::env::var_os("SUMI_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "Chromium not found at {}: the UI tests need Debian's chromium \
         (apt-get install chromium; .ci/run installs it) or SUMI_CHROMIUM=<path>",
        path.display()
    );
    path
}

pub struct Browser {
    child: Child,
    profile: tempfile::TempDir,
    ws: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _guard: MutexGuard<'static, ()>,
}

impl Browser {
    /// Starts Chromium with one blank page of `width`×`height`.
    pub fn start(width: u32, height: u32) -> Browser {
        let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let profile = tempfile::Builder::new()
            .prefix("sumi-chromium-")
            .tempdir()
            .expect("profile dir");
        let child = Command::new(chromium_path())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromium");
        // Chromium writes the port it chose and the browser's WebSocket path here.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(60);
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.trim().to_string(), path.trim().to_string());
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not start its DevTools endpoint in 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let addr = format!("127.0.0.1:{port}");
        let stream = TcpStream::connect(&addr).expect("connect to chromium");
        stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
        let url = format!("ws://{addr}{path}");
        let (ws, _) =
            tungstenite::client::client(url.as_str(), stream).expect("devtools websocket");
        let mut b = Browser {
            child,
            profile,
            ws,
            session: String::new(),
            next_id: 0,
            _guard: guard,
        };
        let target = b.call_browser("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("targetId").to_string();
        let attached = b.call_browser(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_string();
        b.call("Page.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Value {
        self.try_send(method, params, session)
            .unwrap_or_else(|err| panic!("devtools {method} failed: {err}"))
    }

    /// [`send`](Self::send), with the browser's error as an `Err`.
    fn try_send(&mut self, method: &str, params: Value, session: bool) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if session {
            msg["sessionId"] = json!(self.session);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .unwrap_or_else(|e| panic!("devtools {method}: {e}"));
        loop {
            let m = self
                .ws
                .read()
                .unwrap_or_else(|e| panic!("devtools {method}: {e}"));
            let Message::Text(text) = m else { continue };
            let v: Value = serde_json::from_str(text.as_str()).expect("devtools JSON");
            if v["id"].as_u64() != Some(id) {
                continue; // an event
            }
            if let Some(err) = v.get("error") {
                return Err(err.clone());
            }
            return Ok(v["result"].clone());
        }
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, false)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, true)
    }

    /// Evaluates `expr` in the page (awaiting a promise) and returns its value.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("JavaScript failed: {expr}\n{ex}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is true (bounded). While a click or a navigation replaces
    /// the page, the browser refuses to evaluate ("Inspected target navigated or
    /// closed", "Cannot find context"): that counts as not yet.
    pub fn wait_for(&mut self, expr: &str, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self.try_send(
                "Runtime.evaluate",
                json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
                true,
            );
            match r {
                Ok(r) if r["result"]["value"] == json!(true) => return,
                Ok(_) => {}
                Err(err) => {
                    let msg = err["message"].as_str().unwrap_or_default();
                    if !(msg.contains("navigated") || msg.contains("context")) {
                        panic!("devtools Runtime.evaluate failed: {err}");
                    }
                }
            }
            if Instant::now() > deadline {
                let url = self.eval("location.href");
                panic!("waited 60 s for {what} ({expr}) on {url}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` and waits until the page and every image on it have loaded.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait_for(
            &format!(
                "location.href === {} && document.readyState === 'complete'",
                json!(url)
            ),
            "the page to load",
        );
        self.wait_images();
    }

    /// Waits until every image that has a source finished loading (or failing).
    /// Lazy images below the fold are asked for first, so that a full-page
    /// screenshot shows them.
    pub fn wait_images(&mut self) {
        self.eval("document.querySelectorAll('img[loading=lazy]').forEach(i => { i.loading = 'eager'; }); true");
        self.wait_for(
            "Array.from(document.images).filter(i => i.getAttribute('src')).every(i => i.complete)",
            "images to load",
        );
    }

    /// `(src, naturalWidth, naturalHeight)` of every image matching `selector`.
    pub fn images(&mut self, selector: &str) -> Vec<(String, u64, u64)> {
        let v = self.eval(&format!(
            "Array.from(document.querySelectorAll({})).map(i => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight])",
            json!(selector)
        ));
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|i| {
                        (
                            i[0].as_str().unwrap_or("").to_string(),
                            i[1].as_u64().unwrap_or(0),
                            i[2].as_u64().unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Clicks the first element matching `selector` (it must exist).
    pub fn click(&mut self, selector: &str) {
        let ok = self.eval(&format!(
            // clicked after this evaluation has answered, so a navigation it starts
            // cannot cut the evaluation short
            "(() => {{ const e = document.querySelector({}); if (!e) return false; setTimeout(() => e.click(), 0); return true; }})()",
            json!(selector)
        ));
        assert_eq!(ok, json!(true), "nothing to click at {selector}");
    }

    /// Saves a PNG of the page as `target/ui-screenshots/<name>.png` and returns it.
    pub fn screenshot(&mut self, name: &str) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let data = r["data"].as_str().expect("screenshot data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("screenshot base64");
        std::fs::write(screenshot_dir().join(format!("{name}.png")), &png)
            .expect("write screenshot");
        png
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.ws.close(None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
