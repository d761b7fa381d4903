//! Shared by the tests that drive a running `lifeline serve`: start one over a `lifeline sim` data dir
//! (plain HTTP on a free loopback port), a minimal HTTP/1.1 client, a logged-in session, users and tokens.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use lifeline_test_utils::{SimProcess, lifeline_bin, unique_loopback};
use serde_json::{Value, json};

pub const ENV: &[(&str, &str)] = &[("LIFELINE_BMC_PASSWORD", "pw")];

/// The head of an inventory with one rack `r1` of site `s`, BMC and switch credentials from
/// `LIFELINE_BMC_PASSWORD` and `LIFELINE_SWITCH_PASSWORD`: the devices follow.
pub const ONE_RACK_INVENTORY: &str = "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n\
    [defaults.bmc]\nusername = \"admin\"\ncredential = \"env:LIFELINE_BMC_PASSWORD\"\n\n\
    [defaults.management]\nusername = \"admin\"\ncredential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n\
    [[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n";

/// A switch (`leaf`, IPMI BMC + SONiC SSH) and a head node (`node`, IPMI) on fresh loopback addresses.
pub fn two_node_sim(offset: u16) -> SimProcess {
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

/// A running `lifeline serve --plain-http` on a free loopback port (the shared harness).
#[allow(unused_imports)]
pub use lifeline_test_utils::ServeProcess as Server;

/// A minimal HTTP/1.1 request (Connection: close): status, Set-Cookie values, body.
pub fn request(
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

pub struct Session<'a> {
    pub addr: &'a str,
    pub cookie: String,
    pub csrf: String,
}

impl Session<'_> {
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let h = [("Cookie", self.cookie.as_str()), ("X-CSRF-Token", self.csrf.as_str())];
        let (st, _, b) = request(self.addr, method, path, &h, body.as_ref()).unwrap();
        (st, serde_json::from_str(&b).unwrap_or(Value::String(b)))
    }

    /// The open faults (`GET /api/v1/faults?state=open`).
    pub fn open_faults(&self) -> Vec<Value> {
        let (st, v) = self.call("GET", "/api/v1/faults?state=open", None);
        assert_eq!(st, 200, "{v}");
        v.as_array().unwrap().clone()
    }

    /// Waits until every console of `nodes` is logged (a line printed before would not be seen).
    pub fn consoles_connected(&self, nodes: &[&str]) {
        lifeline_test_utils::wait_until("every node's console logged", Duration::from_secs(60), || {
            let (st, v) = self.call("GET", "/api/v1/consoles", None);
            assert_eq!(st, 200, "{v}");
            let connected: Vec<&str> = v
                .as_array()?
                .iter()
                .filter(|c| c["status"]["state"] == "connected")
                .filter_map(|c| c["name"].as_str())
                .collect();
            nodes.iter().all(|n| connected.contains(n)).then_some(())
        });
    }
}

/// `lifeline user add NAME --role ROLE --password-stdin` on the sim's data dir.
pub fn add_user(sim: &SimProcess, name: &str, role: &str, password: &str) {
    let mut add = Command::new(lifeline_bin())
        .args(["user", "add", name, "--role", role, "--password-stdin", "--inventory"])
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    assert!(add.wait().unwrap().success());
}

/// `lifeline token create --user NAME`: the token, printed once.
pub fn token(sim: &SimProcess, user: &str) -> String {
    let o = sim.lifeline(&["token", "create", "--user", user]);
    assert!(o.status.success(), "{}", lifeline_test_utils::output_text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

/// Logs in and returns the session.
pub fn login<'a>(addr: &'a str, user: &str, password: &str) -> Session<'a> {
    let (st, cookies, body) =
        request(addr, "POST", "/api/v1/login", &[], Some(&json!({"username": user, "password": password})))
            .unwrap();
    assert_eq!(st, 200, "{body}");
    let csrf = serde_json::from_str::<Value>(&body).unwrap()["csrf_token"].as_str().unwrap().to_owned();
    Session { addr, cookie: cookies.join("; "), csrf }
}

/// A bearer-token GET: status and JSON body.
pub fn get_with_token(addr: &str, token: &str, path: &str) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let (st, _, b) = request(addr, "GET", path, &[("Authorization", &auth)], None).unwrap();
    (st, serde_json::from_str(&b).unwrap_or(Value::String(b)))
}

/// A runbook that power cycles a head node once (confirmed) and waits for it to be on: the server and
/// replica tests drive it through the API.
#[allow(dead_code)]
pub const CYCLE: &str = r#"# cycle-head-node
#
# Fault:       a head node that needs a power cycle.
# Touches:     its power (one cycle, confirmed).
# Never:       any other device.
# Worst case:  the node is off until someone powers it on.

name = "cycle-head-node"
description = "Power cycle a head node and wait until it is on"
targets = ["head-node"]
fault = "a hung head node"
touches = "the node's power (one cycle)"
never-touches = "other devices"
worst-case = "the node stays off"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"
timeout = "2m"

[[verify]]
name = "is-on"
kind = "wait-for"
power = "on"
timeout = "2m"
"#;
