//! The simulated BMC's Redfish service on any request: method, path (from the simulator's own resource
//! tree, possibly extended), query options, headers (`OData-Version`, Basic or session credentials) and
//! body. Properties: every response carries `OData-Version: 4.0`; a JSON response body is JSON; the
//! service never answers 500 (an internal error is a simulator bug a client test would trip over).
#![no_main]

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use base64::Engine;
use http::{Method, Request, StatusCode};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use lifeline_sim::redfish::{RedfishBmc, fuzz_request};
use lifeline_sim::{Host, HostConfig};
use serde_json::Value;

#[derive(Arbitrary, Debug)]
struct Input {
    method: u8,
    path: u16,
    suffix: Option<String>,
    query: Option<String>,
    auth: u8,
    odata_version: Option<String>,
    body: Body_,
}

#[derive(Arbitrary, Debug)]
enum Body_ {
    None,
    Json(u8, String),
    Raw(Vec<u8>),
}

const METHODS: &[Method] =
    &[Method::GET, Method::HEAD, Method::POST, Method::PATCH, Method::PUT, Method::DELETE, Method::OPTIONS];
const BODIES: &[&str] = &[
    r#"{"ResetType":"ForceOff"}"#,
    r#"{"ResetType":"On"}"#,
    r#"{"ResetType":"PowerCycle"}"#,
    r#"{"UserName":"admin","Password":"password"}"#,
    r#"{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}"#,
    r#"{"IndicatorLED":"Lit"}"#,
    r#"{"AssetTag":"x"}"#,
];

struct World {
    rt: tokio::runtime::Runtime,
    bmc: Arc<RedfishBmc>,
    paths: Vec<String>,
}

async fn send(bmc: &Arc<RedfishBmc>, req: Request<Body>) -> (StatusCode, http::HeaderMap, Vec<u8>) {
    let resp = fuzz_request(bmc.clone(), req).await;
    let (parts, body) = resp.into_parts();
    let bytes = tokio::time::timeout(Duration::from_millis(200), axum::body::to_bytes(body, 1 << 22))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|b| b.to_vec())
        .unwrap_or_default();
    (parts.status, parts.headers, bytes)
}

fn basic(user: &str, pass: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}")))
}

/// Every `@odata.id` reachable from the service root (the simulator's resource tree), found once.
fn crawl(rt: &tokio::runtime::Runtime, bmc: &Arc<RedfishBmc>) -> Vec<String> {
    fn links(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "@odata.id"
                        && let Value::String(s) = x
                    {
                        out.push(s.split('#').next().unwrap_or_default().to_owned());
                    }
                    links(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| links(x, out)),
            _ => {}
        }
    }
    let mut seen =
        vec!["/redfish/v1".to_owned(), "/redfish/v1/$metadata".to_owned(), "/redfish/v1/odata".to_owned()];
    let mut i = 0;
    while i < seen.len() && seen.len() < 400 {
        let path = seen[i].clone();
        i += 1;
        if path.contains("SSE") {
            continue;
        }
        let req = Request::get(&path)
            .header("Authorization", basic("admin", "password"))
            .body(Body::empty())
            .expect("request");
        let (_, _, body) = rt.block_on(send(bmc, req));
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            let mut found = Vec::new();
            links(&v, &mut found);
            for f in found {
                if f.starts_with('/') && !seen.contains(&f) {
                    seen.push(f);
                }
            }
        }
    }
    seen
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        let _g = rt.enter();
        let mut cfg = HostConfig::server("fuzz-node");
        cfg.time_scale = 0.0;
        let bmc = RedfishBmc::new(Host::new(cfg), IpAddr::V4(Ipv4Addr::LOCALHOST)).expect("simulated BMC");
        let paths = crawl(&rt, &bmc);
        World { rt, bmc, paths }
    })
}

fuzz_target!(|input: Input| {
    let w = world();
    let method = METHODS[usize::from(input.method) % METHODS.len()].clone();
    let mut path = w.paths[usize::from(input.path) % w.paths.len()].clone();
    if let Some(s) = &input.suffix {
        path.push_str(s);
    }
    // Event pushes would go to the subscriber's URL, and an SSE stream never ends: not here.
    if path.contains("SSE")
        || path.contains("ServerSentEvent")
        || (method == Method::POST && path.contains("Subscriptions"))
    {
        return;
    }
    let uri = match &input.query {
        Some(q) => format!("{path}?{q}"),
        None => path.clone(),
    };
    let mut b = Request::builder().method(method.clone()).uri(uri.as_str());
    b = match input.auth % 4 {
        0 => b.header("Authorization", basic("admin", "password")),
        1 => b.header("Authorization", basic("admin", "wrong")),
        2 => b.header("X-Auth-Token", "not-a-session"),
        _ => b,
    };
    if let Some(v) = &input.odata_version {
        b = b.header("OData-Version", v.as_str());
    }
    let body = match &input.body {
        Body_::None => Body::empty(),
        Body_::Json(i, _) if usize::from(*i) < BODIES.len() => Body::from(BODIES[usize::from(*i)]),
        Body_::Json(_, s) => Body::from(s.clone()),
        Body_::Raw(r) => Body::from(r.clone()),
    };
    let Ok(req) = b.body(body) else { return };
    let (status, headers, bytes) = w.rt.block_on(send(&w.bmc, req));
    assert_eq!(
        headers.get("OData-Version").and_then(|v| v.to_str().ok()),
        Some("4.0"),
        "{method} {uri}: no OData-Version"
    );
    assert_ne!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{method} {uri}: 500 {}",
        String::from_utf8_lossy(&bytes)
    );
    let json = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json && method != Method::HEAD && !bytes.is_empty() {
        assert!(serde_json::from_slice::<Value>(&bytes).is_ok(), "{method} {uri}: JSON response is not JSON");
    }
});
