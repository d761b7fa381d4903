//! Client CPU per GET on one kept HTTP/2 connection: our `Client::get_json` beside bare reqwest and bare
//! hyper doing the same GET to the same BMC, in the same run, one at a time and six at once.
//!
//! Why: a cold Redfish sweep is CPU-bound on 2 cores, and this tells how much of a request's CPU is ours
//! (session, slots, quirks, JSON) and how much is HTTP/2 over TLS over loopback. Measured in stop 27:
//! ours 68 µs, reqwest 66-76 µs, hyper 60-64 µs a GET six at once, so replacing the HTTP stack would
//! save little; fewer requests per BMC save more.
//!
//! The BMC runs in another process, so only the client's CPU is counted (whole process, `/proc/self/stat`):
//! `cargo run --release -p lifeline-bmc --example bench_sweep -- --serve --n 1` in one shell, then
//! `cargo run --release -p lifeline-redfish --example redfish_request_cost -- 127.41.0.1:20443
//! /redfish/v1/Systems/Self [N=20000]`.

use std::sync::Arc;
use std::time::Instant;

use lifeline_redfish::*;

fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

async fn run<F, Fut>(label: &str, n: usize, conc: usize, f: F)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    for _ in 0..200 {
        f().await;
    }
    let (c0, t0) = (cpu(), Instant::now());
    let mut tasks = Vec::new();
    for _ in 0..conc {
        let f = f.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..n / conc {
                f().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (c, w) = (cpu() - c0, t0.elapsed().as_secs_f64());
    println!("{label:>12}: {:>6.1} us CPU/GET, {:>6.1} us wall/GET", c / n as f64 * 1e6, w / n as f64 * 1e6);
}

#[tokio::main]
async fn main() {
    let mut a = std::env::args().skip(1);
    let host = a.next().expect("HOST:PORT");
    let path = a.next().expect("PATH");
    let n: usize = a.next().and_then(|s| s.parse().ok()).unwrap_or(20000);
    let url = format!("https://{host}{path}");

    let store: Arc<dyn PinStore> = Arc::new(MemoryPinStore::new());
    let c = Client::connect(
        BmcTarget::new("b", format!("https://{host}")),
        Credentials::new("admin", "password"),
        TlsTrust::Pin { store, explicit: None },
        ClientOptions::default(),
    )
    .await
    .expect("connect");
    for conc in [1, 6] {
        let (c2, p) = (c.clone(), path.clone());
        run(&format!("ours x{conc}"), n, conc, move || {
            let (c, p) = (c2.clone(), p.clone());
            async move {
                c.get_json(&p).await.expect("get");
            }
        })
        .await;
    }

    let mut cfg = lifeline_test_utils::accept_any_certificate();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let rq = reqwest::Client::builder().tls_backend_preconfigured(cfg.clone()).build().unwrap();
    for conc in [1, 6] {
        let (rq, u) = (rq.clone(), url.clone());
        run(&format!("reqwest x{conc}"), n, conc, move || {
            let (rq, u) = (rq.clone(), u.clone());
            async move {
                let r = rq.get(&u).basic_auth("admin", Some("password")).send().await.unwrap();
                let b = r.bytes().await.unwrap();
                let _: serde_json::Value = serde_json::from_slice(&b).unwrap();
            }
        })
        .await;
    }

    // Bare hyper h2 on one TLS connection.
    let tcp = tokio::net::TcpStream::connect(&host).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(rustls::pki_types::ServerName::try_from("bmc").unwrap(), tcp)
        .await
        .unwrap();
    let (send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "admin:password")
    );
    for conc in [1, 6] {
        let (s, u, auth) = (send.clone(), url.clone(), auth.clone());
        run(&format!("hyper x{conc}"), n, conc, move || {
            let (mut s, u, auth) = (s.clone(), u.clone(), auth.clone());
            async move {
                let req = hyper::Request::get(u.as_str())
                    .header("authorization", auth.as_str())
                    .body(axum::body::Body::empty())
                    .unwrap();
                let r = s.send_request(req).await.unwrap();
                let b = axum::body::to_bytes(axum::body::Body::new(r.into_body()), usize::MAX).await.unwrap();
                let _: serde_json::Value = serde_json::from_slice(&b).unwrap();
            }
        })
        .await;
    }
    c.close().await.ok();
}
