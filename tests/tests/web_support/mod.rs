//! Browser-test harness: `lifeline sim` serving the example cluster, `lifeline serve --plain-http` over
//! it, and Debian's headless Chromium driven through chromedriver's W3C WebDriver protocol (a few JSON
//! requests over HTTP/1.1, so the tests need no WebDriver crate). A failing test leaves a screenshot and
//! the page's HTML under `target/web-artifacts/`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, wait_until, workspace_root};
use serde_json::{Value, json};

pub const ENV: &[(&str, &str)] = &[("LIFELINE_BMC_PASSWORD", "pw"), ("LIFELINE_SWITCH_PASSWORD", "pw")];
pub const PASSWORD: &str = "correct horse battery";

/// A minimal HTTP/1.1 request (Connection: close): status and body.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\nContent-Type: application/json\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    // chromedriver keeps the connection open despite `Connection: close`: read by Content-Length.
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    let mut want: Option<usize> = None;
    loop {
        if want.is_none()
            && let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            want = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .map(|n| end + 4 + n);
        }
        if want.is_some_and(|w| out.len() >= w) {
            break;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    (status, if chunked { dechunk(rest) } else { rest.to_owned() })
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n.min(rest.len())]);
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

/// The example cluster with every BMC and management port moved by the simulator's port offset (the
/// addresses stay), and `auto` BMCs pinned to Redfish (one port per BMC in the inventory).
pub fn example_cluster(offset: u16) -> String {
    let text = std::fs::read_to_string(workspace_root().join("inventory/example-cluster.toml")).unwrap();
    text.lines()
        .map(|l| {
            if let Some(rest) = l.strip_prefix("bmc = { ") {
                let rest = rest.replace("protocol = \"auto\"", "protocol = \"redfish\"");
                let port = if rest.contains("\"ipmi\"") { 623 } else { 443 } + offset;
                format!("bmc = {{ port = {port}, {rest}")
            } else if let Some(rest) = l.strip_prefix("management = { ") {
                format!("management = {{ port = {}, {rest}", 22 + offset)
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every device name of the example cluster, in file order.
pub fn example_devices() -> Vec<String> {
    let text = std::fs::read_to_string(workspace_root().join("inventory/example-cluster.toml")).unwrap();
    let mut out = Vec::new();
    let mut in_device = false;
    for l in text.lines() {
        if l.starts_with('[') {
            in_device = l.trim() == "[[device]]";
        } else if in_device && let Some(n) = l.strip_prefix("name = \"") {
            out.push(n.trim_end_matches('"').to_owned());
        }
    }
    out
}

/// The example cluster under `lifeline sim`, `lifeline serve` over it, and users of every role.
pub struct Stack {
    // Declared first so the server stops before the simulator.
    _server: ServeProcess,
    pub sim: SimProcess,
    pub addr: String,
}

impl Stack {
    pub fn start(offset: u16) -> Stack {
        Self::start_with(offset, |_| "[server]\nsweep-interval = \"2s\"\n".to_owned())
    }

    /// With the `lifeline.toml` that `config` writes for the started simulator (its directory is there
    /// for files the configuration names, such as a runbook library).
    pub fn start_with(offset: u16, config: impl FnOnce(&SimProcess) -> String) -> Stack {
        Self::start_inventory(&example_cluster(offset), offset, config)
    }

    /// Over an inventory of the test's own (its BMC ports already moved by `offset`).
    pub fn start_inventory(
        inventory: &str,
        offset: u16,
        config: impl FnOnce(&SimProcess) -> String,
    ) -> Stack {
        let sim = SimProcess::start(inventory, offset, ENV);
        eprintln!("web test: simulator up");
        for (user, role) in [("ann", "operator"), ("vic", "viewer"), ("ada", "admin")] {
            add_user(&sim, user, role, PASSWORD);
        }
        let server = ServeProcess::start_with(&sim, &config(&sim));
        let addr = server.addr.clone();
        eprintln!("web test: lifeline serve on {addr}");
        Stack { _server: server, sim, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// Whether this machine can run the browser tests; `None` after a loud skip (a failure in CI).
pub fn browser_available() -> Option<()> {
    if std::path::Path::new("/usr/bin/chromium").exists()
        && std::path::Path::new("/usr/bin/chromedriver").exists()
    {
        Some(())
    } else {
        lifeline_test_utils::skip_or_fail(
            "Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)",
        )
    }
}

/// One headless Chromium session through chromedriver; screenshots on a failing test.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    profile: tempfile::TempDir,
    name: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.save_artifacts("failure");
        }
        let _ = self.call("DELETE", "", None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

pub fn artifacts_dir() -> PathBuf {
    let d = std::env::var_os("LIFELINE_TEST_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/web-artifacts"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Browser {
    pub fn start(name: &str) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("/usr/bin/chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("127.0.0.1:{port}");
        wait_until("chromedriver", Duration::from_secs(30), || {
            std::net::TcpStream::connect(&base)
                .ok()
                .map(|_| ())
                .filter(|_| http(&base, "GET", "/status", &[], None).0 == 200)
        });
        eprintln!("web test: chromedriver up");
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,800",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        }}});
        let (st, body) = http(&base, "POST", "/session", &[], Some(&caps.to_string()));
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("new session ({st}): {body}"))
            .to_owned();
        Browser { driver, base, session, profile, name: name.to_owned() }
    }

    /// One WebDriver command; panics with the driver's message when it fails.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let body = body.map(|b| b.to_string());
        let (st, text) =
            http(&self.base, method, &format!("/session/{}{path}", self.session), &[], body.as_deref());
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if st == 200 { Ok(v["value"].clone()) } else { Err(format!("{method} {path}: {st} {text}")) }
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url}))).unwrap();
    }

    pub fn js(&self, script: &str, args: Value) -> Value {
        self.call("POST", "/execute/sync", Some(json!({"script": script, "args": args}))).unwrap()
    }

    fn find_opt(&self, css: &str) -> Option<String> {
        let v = self.call("POST", "/element", Some(json!({"using": "css selector", "value": css}))).ok()?;
        v.as_object()?.values().next()?.as_str().map(str::to_owned)
    }

    /// Waits up to 30 s for an element.
    pub fn find(&self, css: &str) -> String {
        wait_until(&format!("element `{css}`"), Duration::from_secs(30), || self.find_opt(css))
    }

    pub fn exists(&self, css: &str) -> bool {
        self.find_opt(css).is_some()
    }

    /// Finds `css` (waiting up to 30 s) and calls `act` on it; when the page re-rendered the element between
    /// the two requests (WebDriver's "stale element reference"), finds it again: a stale element took no
    /// click, no keys and gave no text, so acting again does not act twice.
    fn on_element(&self, css: &str, act: impl Fn(&str) -> Result<Value, String>) -> Value {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            match act(&self.find(css)) {
                Ok(v) => return v,
                Err(e) if e.contains("stale element reference") && Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("`{css}`: {e}"),
            }
        }
    }

    pub fn click(&self, css: &str) {
        self.on_element(css, |el| self.call("POST", &format!("/element/{el}/click"), Some(json!({}))));
    }

    pub fn type_into(&self, css: &str, text: &str) {
        self.on_element(css, |el| {
            self.call("POST", &format!("/element/{el}/value"), Some(json!({"text": text})))
        });
    }

    pub fn text(&self, css: &str) -> String {
        let v = self.on_element(css, |el| self.call("GET", &format!("/element/{el}/text"), None));
        v.as_str().unwrap_or("").to_owned()
    }

    /// The element's text now, if it is there (`None` also when it was re-rendered while being read).
    fn text_now(&self, css: &str) -> Option<String> {
        let el = self.find_opt(css)?;
        let v = self.call("GET", &format!("/element/{el}/text"), None).ok()?;
        Some(v.as_str().unwrap_or("").to_owned())
    }

    /// Waits up to `secs` for `check` to return Some.
    pub fn wait<T>(&self, what: &str, secs: u64, mut check: impl FnMut(&Browser) -> Option<T>) -> T {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(v) = check(self) {
                return v;
            }
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until the page's text contains `needle`.
    pub fn wait_text(&self, css: &str, needle: &str, secs: u64) -> String {
        self.wait(&format!("`{needle}` in `{css}`"), secs, |b| b.text_now(css).filter(|t| t.contains(needle)))
    }

    pub fn path(&self) -> String {
        self.js("return location.pathname", json!([])).as_str().unwrap_or("").to_owned()
    }

    pub fn screenshot(&self, to: &std::path::Path) {
        let v = self.call("GET", "/screenshot", None).unwrap();
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or("")).unwrap();
        std::fs::write(to, png).unwrap();
    }

    pub fn save_artifacts(&self, tag: &str) {
        let dir = artifacts_dir();
        if let Ok(v) = self.call("GET", "/screenshot", None)
            && let Ok(png) = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or(""))
        {
            let _ = std::fs::write(dir.join(format!("{}-{tag}.png", self.name)), png);
        }
        if let Ok(src) = self.call("GET", "/source", None) {
            let _ = std::fs::write(dir.join(format!("{}-{tag}.html", self.name)), src.as_str().unwrap_or(""));
        }
        eprintln!("browser artifacts in {}", dir.display());
    }

    /// Logs in through the login page.
    pub fn login(&self, stack: &Stack, user: &str, password: &str) {
        self.goto(&stack.url("/ui/login"));
        self.type_into("#username", user);
        self.type_into("#password", password);
        self.click("#login-submit");
    }

    /// Clicks the confirmation dialog's Confirm button after checking what it lists.
    pub fn confirm(&self, expect_listed: &str) {
        let listed = self.wait_text("#confirm-list", expect_listed, 10);
        assert!(listed.contains(expect_listed), "{listed}");
        self.click("#confirm-ok");
    }
}

impl Browser {
    /// Types into whatever has the focus, as a keyboard would (WebDriver key codes: `\u{E004}` Tab,
    /// `\u{E007}` Enter, `\u{E00C}` Escape, `\u{E00D}` Space).
    pub fn keys(&self, text: &str) {
        let el = self.call("GET", "/element/active", None).unwrap();
        let id = el.as_object().and_then(|o| o.values().next()).and_then(|v| v.as_str()).unwrap_or_default();
        self.call("POST", &format!("/element/{id}/value"), Some(json!({"text": text}))).unwrap();
    }
}
