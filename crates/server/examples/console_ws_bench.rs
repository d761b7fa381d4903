//! Keystroke echo latency through the web console's path: a browser-protocol WebSocket writer → `lifeline
//! serve` → its console manager → the simulated BMC's SOL → the simulated getty's echo → back out to the
//! writer and to 100 concurrent read-only viewers (`--viewers N`). Prints p50/p99/max of the time from
//! sending a key to each connection receiving its echo; the goal is p99 < 20 ms.
//!
//! Needs the `lifeline` binary (`cargo build --release --bin lifeline`), then:
//! `cargo run --release -p lifeline-server --example console_ws_bench -- [--viewers 100] [--keys 200]`

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use lifeline_test_utils::{SimProcess, lifeline_bin, unique_loopback, wait_until};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

const ENV: &[(&str, &str)] = &[("LIFELINE_BMC_PASSWORD", "pw")];

fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// `lifeline serve`, killed however the bench ends: a panic that left it running kept the caller's stderr
/// pipe open, which looked like the bench hanging.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(addr: &str, path: &str, cookie: &str) -> Ws {
    let mut req = format!("ws://{addr}{path}").into_client_request().unwrap();
    req.headers_mut().insert("cookie", cookie.parse().unwrap());
    tokio_tungstenite::connect_async(req).await.unwrap_or_else(|e| panic!("attach {path}: {e}")).0
}

/// Reads frames until the output contains `needle`; returns when it arrived.
async fn until(ws: &mut Ws, needle: &[u8], seen: &mut Vec<u8>) -> Instant {
    loop {
        if let Some(i) = seen.windows(needle.len()).position(|w| w == needle) {
            seen.drain(..i + needle.len());
            return Instant::now();
        }
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
            Ok(Some(Ok(Message::Binary(b)))) => seen.extend_from_slice(&b),
            Ok(Some(Ok(_))) => {}
            other => panic!("waiting for {:?}: {other:?}", String::from_utf8_lossy(needle)),
        }
    }
}

#[tokio::main]
async fn main() {
    // reqwest is built without a default TLS backend (ring is already in the tree for rustls).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let viewers = arg("--viewers", 100);
    let keys = arg("--keys", 200);
    let offset = 26000;
    let node = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"bench\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"node\"\nrole = \"head-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{node}\", port = {}, protocol = \"ipmi\" }}\n",
        623 + offset
    );
    let sim = SimProcess::start(&inv, offset, ENV);
    let mut add = Command::new(lifeline_bin())
        .args(["user", "add", "bench", "--role", "operator", "--password-stdin", "--inventory"])
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin.take().unwrap().write_all(b"bench password\n").unwrap();
    assert!(add.wait().unwrap().success());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let cfg = sim.dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[server]\nsweep-interval = \"0s\"\n").unwrap();
    let _server = Server(
        Command::new(lifeline_bin())
            .args(["serve", "--plain-http", "--listen", &addr, "--config"])
            .arg(&cfg)
            .arg("--inventory")
            .arg(&sim.inventory)
            .arg("--data-dir")
            .arg(&sim.data)
            .envs(ENV.iter().copied())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let url = format!("http://{addr}");
    wait_until("lifeline serve", Duration::from_secs(30), || std::net::TcpStream::connect(&addr).ok());
    let resp = http
        .post(format!("{url}/api/v1/login"))
        .json(&serde_json::json!({"username": "bench", "password": "bench password"}))
        .send()
        .await
        .unwrap();
    let cookie: String = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("; ");

    let mut writer = connect(&addr, "/api/v1/consoles/node/write?take_over=true", &cookie).await;
    let mut views = Vec::new();
    for _ in 0..viewers {
        views.push(connect(&addr, "/api/v1/consoles/node/attach", &cookie).await);
    }
    // Get a fresh login prompt (the simulated host boots at start; a cycle would also do).
    let mut wseen = Vec::new();
    let prompt_deadline = Instant::now() + Duration::from_secs(120);
    loop {
        writer.send(Message::Binary(b"\r".to_vec().into())).await.unwrap();
        let got =
            tokio::time::timeout(Duration::from_secs(3), until(&mut writer, b"login: ", &mut wseen)).await;
        if got.is_ok() {
            break;
        }
        assert!(Instant::now() < prompt_deadline, "no login prompt on the console");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Drain what the viewers saw so far.
    for v in &mut views {
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(5), v.next()).await {}
    }
    let mut lat_writer = Vec::new();
    let mut lat_viewers = Vec::new();
    let mut vseen: Vec<Vec<u8>> = vec![Vec::new(); viewers];
    wseen.clear();
    for k in 0..keys {
        let key = b'a' + (k % 26) as u8;
        let t0 = Instant::now();
        writer.send(Message::Binary(vec![key].into())).await.unwrap();
        let t = until(&mut writer, &[key], &mut wseen).await;
        lat_writer.push(t.duration_since(t0).as_secs_f64() * 1e3);
        let waits =
            views.iter_mut().zip(vseen.iter_mut()).map(|(v, s)| async move { until(v, &[key], s).await });
        for t in futures::future::join_all(waits).await {
            lat_viewers.push(t.duration_since(t0).as_secs_f64() * 1e3);
        }
        // Rub it out again so the login line stays short (not measured).
        writer.send(Message::Binary(vec![0x7f].into())).await.unwrap();
        until(&mut writer, b"\x08 \x08", &mut wseen).await;
        let waits = views.iter_mut().zip(vseen.iter_mut()).map(|(v, s)| async move {
            until(v, b"\x08 \x08", s).await;
        });
        futures::future::join_all(waits).await;
    }
    println!(
        "console WebSocket echo: {keys} keys, 1 writer + {viewers} read-only viewers (server → console manager → simulated SOL → getty echo → back)"
    );
    println!("{:<22} {:>9} {:>9} {:>9} {:>8}", "who", "p50 ms", "p99 ms", "max ms", "samples");
    for (who, v) in [("writer", &mut lat_writer), ("viewers (each)", &mut lat_viewers)] {
        let n = v.len();
        let (p50, p99, max) = (pct(v, 0.5), pct(v, 0.99), pct(v, 1.0));
        println!("{who:<22} {p50:>9.2} {p99:>9.2} {max:>9.2} {n:>8}");
    }
    let p99 = pct(&mut lat_viewers, 0.99);
    println!("goal p99 < 20 ms: {}", if p99 < 20.0 { "met" } else { "NOT met" });
}
