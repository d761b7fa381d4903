//! How many requests a Redfish sweep sends, counted by an in-test Redfish service (plain HTTP on its own
//! loopback address): the first sweep discovers (service root, Systems collection), the second goes
//! straight to the system it found, and a stale cached path falls back to discovery instead of failing.
//! The rollup path itself is checked against the simulator (`tests/sim.rs`) and the real peers' documents
//! are covered by the redfish crate's tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use lifeline_bmc::*;
use lifeline_test_utils::unique_loopback;
use lifeline_types::{BmcProtocol, Health, PowerState};
use serde_json::json;

#[derive(Default)]
struct Bmc {
    /// `METHOD path` -> count.
    hits: Mutex<HashMap<String, usize>>,
    /// The system's id (changed by the test to make a cached path stale).
    system_id: Mutex<String>,
    sessions: Mutex<Vec<String>>,
}

type S = State<Arc<Bmc>>;

impl Bmc {
    fn count(&self, what: &str) -> usize {
        self.hits.lock().unwrap().get(what).copied().unwrap_or(0)
    }
    fn total(&self) -> usize {
        self.hits.lock().unwrap().values().sum()
    }
    /// A live session's token, or HTTP Basic `admin:password` (which DSP0266 asks every service to accept;
    /// first contact reads Systems and Managers with it).
    fn authorized(&self, h: &HeaderMap) -> bool {
        if h.get("authorization").is_some_and(|v| v == "Basic YWRtaW46cGFzc3dvcmQ=") {
            return true;
        }
        let token = h.get("X-Auth-Token").and_then(|v| v.to_str().ok()).unwrap_or("");
        self.sessions.lock().unwrap().iter().any(|t| t == token)
    }
}

fn json(v: serde_json::Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

async fn count(State(b): S, method: Method, uri: Uri, req: axum::extract::Request) -> Response {
    let key = format!("{method} {}", uri.path().trim_end_matches('/'));
    *b.hits.lock().unwrap().entry(key).or_default() += 1;
    let _ = req;
    StatusCode::NOT_FOUND.into_response()
}

async fn root(State(b): S) -> Response {
    *b.hits.lock().unwrap().entry("GET /redfish/v1".into()).or_default() += 1;
    json(json!({
        "@odata.id": "/redfish/v1/",
        "RedfishVersion": "1.15.0",
        "Vendor": "Test",
        "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Chassis": {"@odata.id": "/redfish/v1/Chassis"},
        "SessionService": {"@odata.id": "/redfish/v1/SessionService"},
        "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}},
    }))
}

async fn login(State(b): S) -> Response {
    *b.hits.lock().unwrap().entry("POST /redfish/v1/SessionService/Sessions".into()).or_default() += 1;
    let mut s = b.sessions.lock().unwrap();
    let token = format!("tok{}", s.len() + 1);
    s.push(token.clone());
    let loc = format!("/redfish/v1/SessionService/Sessions/{}", s.len());
    (StatusCode::CREATED, [("X-Auth-Token", token.as_str()), ("Location", loc.as_str())], "{}")
        .into_response()
}

async fn logout(State(b): S, Path(id): Path<usize>) -> Response {
    *b.hits.lock().unwrap().entry("DELETE /redfish/v1/SessionService/Sessions".into()).or_default() += 1;
    let mut s = b.sessions.lock().unwrap();
    if id >= 1 && id <= s.len() {
        s[id - 1] = String::new();
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn systems(State(b): S, h: HeaderMap) -> Response {
    *b.hits.lock().unwrap().entry("GET /redfish/v1/Systems".into()).or_default() += 1;
    if !b.authorized(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let id = b.system_id.lock().unwrap().clone();
    json(json!({"Members": [{"@odata.id": format!("/redfish/v1/Systems/{id}")}], "Members@odata.count": 1}))
}

async fn system(State(b): S, Path(id): Path<String>, h: HeaderMap) -> Response {
    *b.hits.lock().unwrap().entry("GET /redfish/v1/Systems/*".into()).or_default() += 1;
    if !b.authorized(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if id != *b.system_id.lock().unwrap() {
        return StatusCode::NOT_FOUND.into_response();
    }
    json(json!({
        "@odata.id": format!("/redfish/v1/Systems/{id}"),
        "Id": id,
        "PowerState": "On",
        "Status": {"State": "Enabled", "Health": "OK", "HealthRollup": "Warning"},
        "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}]},
        "Actions": {"#ComputerSystem.Reset": {"target": format!("/redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset")}},
    }))
}

async fn chassis(State(b): S, h: HeaderMap) -> Response {
    *b.hits.lock().unwrap().entry("GET /redfish/v1/Chassis/1".into()).or_default() += 1;
    if !b.authorized(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    json(
        json!({"@odata.id": "/redfish/v1/Chassis/1", "Id": "1", "Status": {"State": "Enabled", "Health": "OK"}}),
    )
}

async fn start() -> (Arc<Bmc>, BmcTarget) {
    let bmc = Arc::new(Bmc { system_id: Mutex::new("A".into()), ..Bmc::default() });
    let app = Router::new()
        .route("/redfish/v1", axum::routing::get(root))
        .route("/redfish/v1/", axum::routing::get(root))
        .route("/redfish/v1/SessionService/Sessions", axum::routing::post(login))
        .route("/redfish/v1/SessionService/Sessions/{id}", axum::routing::delete(logout))
        .route("/redfish/v1/Systems", axum::routing::get(systems))
        .route("/redfish/v1/Systems/{id}", axum::routing::get(system))
        .route("/redfish/v1/Chassis/1", axum::routing::get(chassis))
        .fallback(count)
        .with_state(bmc.clone());
    let ip = unique_loopback();
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut t = BmcTarget::new("paths-1", ip.to_string(), BmcProtocol::Redfish, "admin", "password");
    t.redfish_port = port;
    t.redfish_tls = false;
    (bmc, t)
}

fn pool() -> BmcPool {
    let mut o = BmcOptions { op_timeout: Duration::from_secs(10), ..BmcOptions::default() };
    o.redfish.request_timeout = Duration::from_secs(5);
    BmcPool::new(o, Arc::new(MemoryAuditSink::new()))
}

#[tokio::test]
async fn second_sweep_goes_straight_to_the_system() {
    let (bmc, t) = start().await;
    let pool = pool();
    let opts = SweepOptions { events: 0, ..SweepOptions::default() };

    let rows = pool.sweep(vec![t.clone()], &opts, |_, _| {}).await;
    assert!(rows[0].ok(), "{:#?}", rows[0]);
    assert_eq!(
        (rows[0].power, rows[0].health),
        (Some(PowerState::On), Some(Health::Warning)),
        "HealthRollup wins"
    );
    assert_eq!(bmc.count("GET /redfish/v1"), 1);
    assert_eq!(bmc.count("GET /redfish/v1/Systems"), 1);
    // Root, login, Systems (HTTP Basic, with the root), System, logout: nothing else (no sensors, no Managers, no logs, and no chassis:
    // the system reports a HealthRollup, which covers its dependents).
    assert_eq!(bmc.total(), 5, "{:?}", bmc.hits.lock().unwrap());
    assert_eq!(bmc.count("GET /redfish/v1/Chassis/1"), 0);

    let rows = pool.sweep(vec![t.clone()], &opts, |_, _| {}).await;
    assert!(rows[0].ok(), "{:#?}", rows[0]);
    assert_eq!(rows[0].health, Some(Health::Warning));
    assert_eq!(bmc.count("GET /redfish/v1"), 1, "root not read again");
    assert_eq!(bmc.count("GET /redfish/v1/Systems"), 1, "collection not read again");
    // Login, System, logout.
    assert_eq!(bmc.total(), 8, "{:?}", bmc.hits.lock().unwrap());
    assert_eq!(bmc.count("DELETE /redfish/v1/SessionService/Sessions"), 2, "every session deleted");

    // The system moved (firmware update renumbered it): the cached path 404s, discovery runs again.
    *bmc.system_id.lock().unwrap() = "B".into();
    let rows = pool.sweep(vec![t.clone()], &opts, |_, _| {}).await;
    assert!(rows[0].ok(), "{:#?}", rows[0]);
    assert_eq!(rows[0].health, Some(Health::Warning));
    assert_eq!(bmc.count("GET /redfish/v1/Systems"), 2);
    let rows = pool.sweep(vec![t], &opts, |_, _| {}).await;
    assert!(rows[0].ok(), "{:#?}", rows[0]);
    assert_eq!(bmc.count("GET /redfish/v1/Systems"), 2, "the new path is cached");
    assert_eq!(bmc.count("GET /redfish/v1"), 1);
}
