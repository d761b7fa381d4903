//! NetBox import over HTTP: every page read (`next` followed), a 429 waited out as `Retry-After` asks, the
//! token sent, a `next` to another server refused. The server here replays recorded NetBox answers: the
//! pynetbox test fixture of `/api/dcim/devices/` (third-party data kept outside the repository:
//! `LIFELINE_NETBOX_CORPUS` or `../shared/netbox-corpus`, see its SOURCES) and a page written for this test
//! in NetBox 4's format.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lifeline_engine::netbox::{Source, fetch_devices};
use lifeline_inventory::import::netbox::RoleMap;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the replaying server saw.
#[derive(Default)]
struct Seen {
    requests: Vec<String>,
    tokens: Vec<String>,
}

/// Serves `results` in pages of `?limit=`, the first request answered 429 when `throttle`; `next_host`
/// overrides the host of `next` links.
async fn serve(
    results: Vec<Value>,
    throttle: bool,
    next_host: Option<&'static str>,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (b, s) = (base.clone(), seen.clone());
    tokio::spawn(async move {
        let mut first = true;
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let req = String::from_utf8_lossy(&buf).to_string();
            let path = req.split_whitespace().nth(1).unwrap_or("/").to_owned();
            {
                let mut s = s.lock().unwrap();
                s.requests.push(path.clone());
                if let Some(t) = req.lines().find_map(|l| {
                    l.strip_prefix("authorization: ").or_else(|| l.strip_prefix("Authorization: "))
                }) {
                    s.tokens.push(t.to_owned());
                }
            }
            let reply = if std::mem::take(&mut first) && throttle {
                "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
            } else {
                let q = |k: &str| {
                    path.split(['?', '&'])
                        .find_map(|p| p.strip_prefix(&format!("{k}=")))
                        .and_then(|v| v.parse::<usize>().ok())
                };
                let (limit, offset) = (q("limit").unwrap_or(50), q("offset").unwrap_or(0));
                let page: Vec<Value> = results.iter().skip(offset).take(limit).cloned().collect();
                let next = (offset + limit < results.len()).then(|| {
                    format!(
                        "{}/api/dcim/devices/?limit={limit}&offset={}",
                        next_host.unwrap_or(&b),
                        offset + limit
                    )
                });
                let body = json!({ "count": results.len(), "next": next, "previous": null, "results": page })
                    .to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            let _ = sock.write_all(reply.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    (base, seen)
}

fn corpus() -> Option<Vec<Value>> {
    let dir = std::env::var_os("LIFELINE_NETBOX_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/netbox-corpus"));
    let dir = if dir.exists() { dir } else { PathBuf::from("/work/netbox-corpus") };
    match std::fs::read_to_string(dir.join("devices.json")) {
        Ok(t) => Some(serde_json::from_str::<Value>(&t).unwrap()["results"].as_array().unwrap().clone()),
        Err(_) if std::env::var("LIFELINE_NETBOX_CORPUS_REQUIRED").as_deref() == Ok("1") => {
            panic!("NetBox corpus required but {}/devices.json is missing", dir.display())
        }
        Err(_) => {
            eprintln!("SKIP: no NetBox corpus at {} (LIFELINE_NETBOX_CORPUS)", dir.display());
            None
        }
    }
}

fn source(url: &str) -> Source {
    Source {
        url: url.to_owned(),
        token: Some("t0ken".into()),
        page_size: 4,
        timeout: Duration::from_secs(5),
        ..Source::default()
    }
}

#[tokio::test]
async fn recorded_netbox_devices_are_paged_and_throttling_waited_out() {
    let Some(results) = corpus() else { return };
    let n = results.len();
    let (url, seen) = serve(results.clone(), true, None).await;
    let started = std::time::Instant::now();
    let got = fetch_devices(&source(&url), &RoleMap::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 was obeyed");
    assert_eq!(got.retried, 1);
    assert_eq!(got.pages, n.div_ceil(4));
    // The fixture's devices are routers, switches and PDUs: every one read, none a server.
    assert_eq!(got.devices.len() + got.skipped.len(), n);
    assert!(got.devices.is_empty(), "{:?}", got.devices);
    let names: Vec<&str> = got.skipped.iter().map(|(n, _)| n.as_str()).collect();
    let want: Vec<&str> = results.iter().filter_map(|d| d["name"].as_str()).collect();
    assert_eq!(names, want);
    let s = seen.lock().unwrap();
    assert_eq!(s.requests.len(), n.div_ceil(4) + 1);
    assert!(s.tokens.iter().all(|t| t == "Token t0ken"), "{:?}", s.tokens);
}

/// Written for this test in the shape of NetBox 4's device objects (trimmed to the fields read).
fn gpu_servers() -> Vec<Value> {
    (1..=5)
        .map(|i| {
            json!({
                "id": i, "name": format!("gpu-{i:02}"), "role": { "slug": "gpu-server" },
                "device_type": { "model": "HGX H100 8-GPU" }, "site": { "name": "hall-1" },
                "rack": { "name": if i <= 3 { "a01" } else { "a02" } },
                "primary_ip4": { "address": format!("10.1.0.{i}/24") },
                "oob_ip": { "address": format!("10.250.1.{i}/24") },
                "custom_fields": { "gpu_count": 8, "gpu_model": "NVIDIA H100 80GB HBM3" }
            })
        })
        .collect()
}

#[tokio::test]
async fn servers_from_netbox_make_an_inventory_that_passes_the_check() {
    let (url, _) = serve(gpu_servers(), false, None).await;
    let got = fetch_devices(&source(&url), &RoleMap::default()).await.unwrap();
    assert_eq!((got.devices.len(), got.pages), (5, 2));
    let m = lifeline_inventory::import::merge(None, &got.devices, &Default::default()).unwrap();
    let errors: Vec<_> =
        m.diagnostics.iter().filter(|d| d.severity == lifeline_inventory::Severity::Error).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{}", m.text);
    assert_eq!(m.racks_added, ["a01", "a02"]);
    assert!(m.text.contains("bmc = { address = \"10.250.1.3\" }"), "{}", m.text);
    assert!(m.text.contains("frontend = { address = \"10.1.0.3\" }"), "{}", m.text);
}

#[tokio::test]
async fn a_next_link_to_another_server_is_refused() {
    let (url, seen) = serve(gpu_servers(), false, Some("http://198.51.100.7")).await;
    let e = fetch_devices(&source(&url), &RoleMap::default()).await.unwrap_err().to_string();
    assert!(e.contains("another server"), "{e}");
    assert_eq!(seen.lock().unwrap().requests.len(), 1);
}
