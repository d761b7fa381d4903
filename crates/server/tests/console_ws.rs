//! The web console's write path end to end, without a browser: `lifeline sim` (whose getty echoes each
//! printable key at the login prompt) under `lifeline serve`, a read-only viewer attached first (as the
//! console page does), then an operator taking the write lock over a second WebSocket (as "Take over"
//! does). Keys sent as binary frames (xterm's `onData`, UTF-8 encoded) must come back as the getty's echo
//! to the writer and to the viewer; the viewer must be told who writes; keys from a viewer never reach
//! the host. A handshake from another origin is refused.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use lifeline_test_utils::{SimProcess, unique_loopback};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};

const ENV: &[(&str, &str)] = &[("LIFELINE_BMC_PASSWORD", "pw")];
const OFFSET: u16 = 36500;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// As the console page connects: the session cookie, and the server's own origin.
async fn connect(addr: &str, path: &str, cookie: &str) -> Ws {
    connect_from(addr, path, cookie, &format!("http://{addr}"))
        .await
        .unwrap_or_else(|e| panic!("attach {path}: {e}"))
}

async fn connect_from(
    addr: &str,
    path: &str,
    cookie: &str,
    origin: &str,
) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let mut req = format!("ws://{addr}{path}").into_client_request().unwrap();
    req.headers_mut().insert("cookie", cookie.parse().unwrap());
    req.headers_mut().insert("origin", origin.parse().unwrap());
    Ok(tokio_tungstenite::connect_async(req).await?.0)
}

/// Reads frames until the console output (binary frames) contains `needle`, or `within` passes; text
/// frames (JSON events) are kept in `events`.
async fn output_until(ws: &mut Ws, needle: &[u8], within: Duration, events: &mut Vec<String>) -> Vec<u8> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    while !seen.windows(needle.len()).any(|w| w == needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ws.next()).await {
            Ok(Some(Ok(Message::Binary(b)))) => seen.extend_from_slice(&b),
            Ok(Some(Ok(Message::Text(t)))) => events.push(t.to_string()),
            Ok(Some(Ok(_))) => {}
            other => panic!(
                "waiting for {:?} (got {:?} so far): {other:?}",
                String::from_utf8_lossy(needle),
                String::from_utf8_lossy(&seen)
            ),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_over_the_write_websocket_reach_the_console_and_echo_to_writer_and_viewer() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let node = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"ws\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"node\"\nrole = \"head-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{node}\", port = {}, protocol = \"ipmi\" }}\n",
        623 + OFFSET
    );
    let sim = SimProcess::start(&inv, OFFSET, ENV);
    lifeline_test_utils::add_user(&sim, "ann", "operator", "correct horse battery");
    let server = lifeline_test_utils::ServeProcess::start(&sim);
    let addr = server.addr.clone();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let resp = http
        .post(format!("http://{addr}/api/v1/login"))
        .json(&serde_json::json!({"username": "ann", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "login: {}", resp.status());
    let cookie: String = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok()?.split(';').next().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("; ");

    // A page of another site cannot open the console with the operator's cookie.
    for path in ["/api/v1/consoles/node/write?take_over=true", "/api/v1/consoles/node/attach"] {
        match connect_from(&addr, path, &cookie, "https://evil.example").await {
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
                assert_eq!(r.status(), 403, "cross-origin {path}")
            }
            Err(e) => panic!("cross-origin {path}: {e}"),
            Ok(_) => panic!("cross-origin {path} was upgraded"),
        }
    }

    // The console page: read-only first, then "Take over".
    let mut viewer = connect(&addr, "/api/v1/consoles/node/attach", &cookie).await;
    let mut writer = connect(&addr, "/api/v1/consoles/node/write?take_over=true", &cookie).await;
    let (mut wev, mut vev) = (Vec::new(), Vec::new());

    // A fresh login prompt (the simulated host may still be booting: Enter until the getty answers).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        writer.send(Message::Binary(b"\r".to_vec().into())).await.unwrap();
        let got = tokio::time::timeout(
            Duration::from_secs(3),
            output_until(&mut writer, b"login: ", Duration::from_secs(3), &mut wev),
        )
        .await;
        if got.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "no login prompt on the console");
    }
    output_until(&mut viewer, b"login: ", Duration::from_secs(10), &mut vev).await;

    // A key typed by the read-only viewer is dropped by the server (never echoed).
    viewer.send(Message::Binary(b"x".to_vec().into())).await.unwrap();
    // The writer's keys, one frame each as xterm sends them, come back as the getty's echo.
    for k in ["z", "q", "7"] {
        writer.send(Message::Binary(k.as_bytes().to_vec().into())).await.unwrap();
    }
    let w = output_until(&mut writer, b"zq7", Duration::from_secs(10), &mut wev).await;
    let v = output_until(&mut viewer, b"zq7", Duration::from_secs(10), &mut vev).await;
    for (who, out) in [("writer", &w), ("viewer", &v)] {
        assert!(!out.contains(&b'x'), "{who}: the read-only viewer's key reached the console: {out:?}");
    }
    // Text frames are input too (a client that sends strings), except the break command.
    writer.send(Message::Text("k9".into())).await.unwrap();
    output_until(&mut writer, b"k9", Duration::from_secs(10), &mut wev).await;

    let told = vev.iter().chain(&wev).any(|e| {
        serde_json::from_str::<serde_json::Value>(e)
            .is_ok_and(|e| e["type"] == "writer" && e["writer"].as_str().is_some_and(|w| w.contains("ann")))
    });
    assert!(told, "no writer event naming ann; events: viewer {vev:?}, writer {wev:?}");
}
