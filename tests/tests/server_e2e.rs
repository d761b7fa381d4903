//! `lifeline serve` over `lifeline sim`, through its HTTP API the way the web console will use it: log in,
//! read the fleet, cycle a node (audited as `web:<user>`), read a console log written while nobody was
//! attached, run a backup and read its diff.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lifeline_test_utils::{SimProcess, lifeline_bin, unique_loopback, wait_until};
use serde_json::{Value, json};

const ENV: &[(&str, &str)] = &[("LIFELINE_BMC_PASSWORD", "pw")];

fn start_sim() -> SimProcess {
    let offset: u16 = 24000;
    let (sw, bmc, node) = (unique_loopback(), unique_loopback(), unique_loopback());
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\nbmc = {{ address = \"{bmc}\", port = {}, protocol = \"ipmi\" }}\n\n\
         [[device]]\nname = \"node\"\nrole = \"head-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{node}\", port = {}, protocol = \"ipmi\" }}\n",
        22 + offset,
        623 + offset,
        623 + offset
    );
    SimProcess::start(&inv, offset, ENV)
}

/// A running `lifeline serve --plain-http` on a free loopback port; killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(sim: &SimProcess) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let cfg = sim.dir.path().join("lifeline.toml");
        std::fs::write(&cfg, "[server]\nsweep-interval = \"0s\"\n").unwrap();
        let mut child = Command::new(lifeline_bin())
            .args(["serve", "--plain-http", "--listen", &addr, "--config"])
            .arg(&cfg)
            .arg("--inventory")
            .arg(&sim.inventory)
            .arg("--data-dir")
            .arg(&sim.data)
            .envs(ENV.iter().copied())
            .stdout(Stdio::null())
            .spawn()
            .expect("start lifeline serve");
        wait_until("lifeline serve /healthz", Duration::from_secs(30), || {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("lifeline serve exited early: {st}");
            }
            request(&addr, "GET", "/healthz", &[], None).ok().filter(|r| r.0 == 200).map(|_| ())
        });
        Server { child, addr }
    }
}

/// A minimal HTTP/1.1 request (Connection: close): status, Set-Cookie values, body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> std::io::Result<(u16, Vec<String>, String)> {
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, rest) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let cookies = head
        .lines()
        .filter_map(|l| l.strip_prefix("set-cookie: ").or_else(|| l.strip_prefix("Set-Cookie: ")))
        .map(|c| c.split(';').next().unwrap_or("").to_owned())
        .collect();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    Ok((status, cookies, body))
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

struct Session<'a> {
    addr: &'a str,
    cookie: String,
    csrf: String,
}

impl Session<'_> {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let h = [("Cookie", self.cookie.as_str()), ("X-CSRF-Token", self.csrf.as_str())];
        let (st, _, b) = request(self.addr, method, path, &h, body.as_ref()).unwrap();
        (st, serde_json::from_str(&b).unwrap_or(Value::String(b)))
    }
}

#[test]
fn serve_login_fleet_power_console_backup() {
    let sim = start_sim();
    let mut add = Command::new(lifeline_bin())
        .args(["user", "add", "ann", "--role", "operator", "--password-stdin", "--inventory"])
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin.take().unwrap().write_all(b"correct horse battery\n").unwrap();
    assert!(add.wait().unwrap().success());

    let srv = Server::start(&sim);
    let (st, _, _) = request(&srv.addr, "GET", "/api/v1/devices", &[], None).unwrap();
    assert_eq!(st, 401, "no credentials");
    let (st, cookies, body) = request(
        &srv.addr,
        "POST",
        "/api/v1/login",
        &[],
        Some(&json!({"username": "ann", "password": "correct horse battery"})),
    )
    .unwrap();
    assert_eq!(st, 200, "{body}");
    let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf_token"].as_str().unwrap().to_owned();
    let s = Session { addr: &srv.addr, cookie: cookies.join("; "), csrf };

    let (st, devices) = s.call("GET", "/api/v1/devices", None);
    assert_eq!(st, 200, "{devices}");
    let names: Vec<&str> = devices.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["leaf", "node"]);
    assert!(
        devices[0].get("power").is_some()
            && devices[0].get("health").is_some()
            && devices[0]["role"] == "switch"
    );

    let (st, r) = s.call("POST", "/api/v1/devices/node/power", Some(json!({"action": "cycle"})));
    assert_eq!(st, 200, "{r}");
    let (_, audit) = s.call("GET", "/api/v1/audit?actor=web:ann&action=power.cycle", None);
    assert!(
        audit.as_array().is_some_and(|a| a.iter().any(|r| r["target"] == "node" && r["outcome"] == "ok")),
        "{audit}"
    );

    // Nobody attached: the always-on logger still has the node's console output (the cycle boots it).
    wait_until("console output logged without a viewer", Duration::from_secs(60), || {
        let (st, log) = s.call("GET", "/api/v1/consoles/node/log", None);
        (st == 200 && log["records"].as_array().is_some_and(|r| r.iter().any(|x| x["kind"] == "output")))
            .then_some(())
    });

    let (st, r) = s.call("POST", "/api/v1/backups/run", Some(json!({"targets": ["leaf"]})));
    assert_eq!(st, 200, "{r}");
    sim.fault("leaf", "config-change");
    let (st, r) = s.call("POST", "/api/v1/backups/run", Some(json!({"targets": ["leaf"]})));
    assert_eq!(st, 200, "{r}");
    let (st, d) = s.call("GET", "/api/v1/backups/leaf/diff", None);
    assert_eq!(st, 200, "{d}");
    assert_eq!((d["from"].as_u64(), d["to"].as_u64()), (Some(1), Some(2)), "{d}");

    // A viewer-level session cannot act; an unknown device is a 404 in the error class body.
    let (st, e) = s.call("POST", "/api/v1/devices/nope/power", Some(json!({"action": "cycle"})));
    assert_eq!(st, 404, "{e}");
    assert_eq!(e["class"], "not-found");
}
