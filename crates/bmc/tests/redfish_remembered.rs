//! A health sweep with events over Redfish, counted by an in-test Redfish service (plain HTTP on its own
//! loopback address): a new pool (a new process) that shares the first one's memory (the store) goes
//! straight to the system, the chassis and the event log it found, all at once over one session, and a log
//! that moved (404 after a firmware update) is found again in the same visit instead of failing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use lifeline_bmc::*;
use lifeline_test_utils::unique_loopback;
use lifeline_types::{BmcProtocol, Health, PowerState};
use serde_json::{Value, json};

#[derive(Default)]
struct Bmc {
    /// `METHOD path` -> count.
    hits: Mutex<HashMap<String, usize>>,
    /// The id of the SEL log service (changed by the test to make a remembered path stale).
    sel_id: Mutex<String>,
    sessions: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

type S = State<Arc<Bmc>>;

impl Bmc {
    fn count(&self, what: &str) -> usize {
        self.hits.lock().unwrap().get(what).copied().unwrap_or(0)
    }
    fn total(&self) -> usize {
        self.hits.lock().unwrap().values().sum()
    }
    fn live_sessions(&self) -> usize {
        self.sessions.lock().unwrap().iter().filter(|t| !t.is_empty()).count()
    }
    /// Counts the request, checks the token, and holds it a little so concurrent requests overlap.
    async fn enter(&self, key: String, h: &HeaderMap, auth: bool) -> Result<Flight<'_>, Response> {
        *self.hits.lock().unwrap().entry(key).or_default() += 1;
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        let f = Flight(self);
        tokio::time::sleep(Duration::from_millis(30)).await;
        let token = h.get("X-Auth-Token").and_then(|v| v.to_str().ok()).unwrap_or("");
        // A live session's token, or HTTP Basic `admin:password` (first contact reads Systems and Managers
        // with it, as DSP0266 asks every service to accept).
        let basic = h.get("authorization").is_some_and(|v| v == "Basic YWRtaW46cGFzc3dvcmQ=");
        if auth && !basic && !self.sessions.lock().unwrap().iter().any(|t| !t.is_empty() && t == token) {
            return Err(StatusCode::UNAUTHORIZED.into_response());
        }
        Ok(f)
    }
}

struct Flight<'a>(&'a Bmc);

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn json(v: Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

async fn fallback(State(b): S, method: Method, uri: Uri) -> Response {
    let key = format!("{method} {}", uri.path().trim_end_matches('/'));
    *b.hits.lock().unwrap().entry(key).or_default() += 1;
    StatusCode::NOT_FOUND.into_response()
}

async fn root(State(b): S, h: HeaderMap) -> Response {
    let _f = b.enter("GET /redfish/v1".into(), &h, false).await;
    json(json!({
        "@odata.id": "/redfish/v1/",
        "RedfishVersion": "1.15.0",
        "Vendor": "Test",
        "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Chassis": {"@odata.id": "/redfish/v1/Chassis"},
        "Managers": {"@odata.id": "/redfish/v1/Managers"},
        "SessionService": {"@odata.id": "/redfish/v1/SessionService"},
        "Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}},
    }))
}

async fn login(State(b): S, h: HeaderMap) -> Response {
    let _f = b.enter("POST /redfish/v1/SessionService/Sessions".into(), &h, false).await;
    let mut s = b.sessions.lock().unwrap();
    let token = format!("tok{}", s.len() + 1);
    s.push(token.clone());
    let loc = format!("/redfish/v1/SessionService/Sessions/{}", s.len());
    (StatusCode::CREATED, [("X-Auth-Token", token.as_str()), ("Location", loc.as_str())], "{}")
        .into_response()
}

async fn logout(State(b): S, Path(id): Path<usize>, h: HeaderMap) -> Response {
    if let Err(r) = b.enter("DELETE /redfish/v1/SessionService/Sessions".into(), &h, true).await {
        return r;
    }
    let mut s = b.sessions.lock().unwrap();
    if id >= 1 && id <= s.len() {
        s[id - 1] = String::new();
    }
    StatusCode::NO_CONTENT.into_response()
}

/// Every authenticated GET document of the service, by path.
async fn doc(State(b): S, uri: Uri, h: HeaderMap) -> Response {
    let path = uri.path().trim_end_matches('/').to_owned();
    let _f = match b.enter(format!("GET {path}"), &h, true).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let sel = b.sel_id.lock().unwrap().clone();
    let logs = "/redfish/v1/Managers/bmc/LogServices";
    let v = match path.as_str() {
        "/redfish/v1/Systems" => json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}),
        "/redfish/v1/Systems/1" => json!({
            "@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On",
            // No HealthRollup: the chassis' status is read too.
            "Status": {"State": "Enabled", "Health": "OK"},
            "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}]},
        }),
        "/redfish/v1/Chassis/1" => {
            json!({"@odata.id": "/redfish/v1/Chassis/1", "Id": "1", "Status": {"Health": "Warning"}})
        }
        "/redfish/v1/Managers" => json!({"Members": [{"@odata.id": "/redfish/v1/Managers/bmc"}]}),
        "/redfish/v1/Managers/bmc" => json!({
            "@odata.id": "/redfish/v1/Managers/bmc", "Id": "bmc", "LogServices": {"@odata.id": logs},
        }),
        p if p == logs => json!({"Members": [{"@odata.id": format!("{logs}/{sel}")}]}),
        p if p == format!("{logs}/{sel}") => json!({
            "@odata.id": p, "Id": sel, "Name": "System Event Log", "LogEntryType": "SEL",
            "Entries": {"@odata.id": format!("{p}/Entries")},
        }),
        p if p == format!("{logs}/{sel}/Entries") => json!({"Members": [{
            "@odata.id": format!("{p}/7"), "Id": "7", "Created": "2026-11-24T10:00:00Z", "Severity": "Critical",
            "Message": "GPU 3 over temperature", "EntryType": "SEL"}]}),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    json(v)
}

async fn start() -> (Arc<Bmc>, BmcTarget) {
    let bmc = Arc::new(Bmc { sel_id: Mutex::new("SEL".into()), ..Bmc::default() });
    let app = Router::new()
        .route("/redfish/v1", axum::routing::get(root))
        .route("/redfish/v1/", axum::routing::get(root))
        .route("/redfish/v1/SessionService/Sessions", axum::routing::post(login))
        .route("/redfish/v1/SessionService/Sessions/{id}", axum::routing::delete(logout))
        .route("/redfish/v1/{*rest}", axum::routing::get(doc))
        .fallback(fallback)
        .with_state(bmc.clone());
    let ip = unique_loopback();
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut t = BmcTarget::new("remembered-1", ip.to_string(), BmcProtocol::Redfish, "admin", "password");
    t.redfish_port = port;
    t.redfish_tls = false;
    (bmc, t)
}

/// A pool as a new process gets it: nothing in memory but what `memory` (the store) holds.
fn pool(memory: Arc<MemoryProtocolMemory>) -> BmcPool {
    let mut o = BmcOptions { op_timeout: Duration::from_secs(10), ..BmcOptions::default() };
    o.redfish.request_timeout = Duration::from_secs(5);
    BmcPool::with_memory(o, Arc::new(MemoryAuditSink::new()), memory)
}

fn check(row: &SweepRow) {
    assert!(row.ok(), "{row:#?}");
    assert_eq!((row.power, row.health), (Some(PowerState::On), Some(Health::Warning)), "{row:#?}");
    assert_eq!(row.events.len(), 1, "{row:#?}");
    assert_eq!(row.events[0].message, "GPU 3 over temperature");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_process_reads_the_remembered_system_chassis_and_log_at_once() {
    let (bmc, t) = start().await;
    let store = Arc::new(MemoryProtocolMemory::new());
    let opts = SweepOptions { events: 3, ..SweepOptions::default() };

    let rows = pool(store.clone()).sweep(vec![t.clone()], &opts, |_, _| {}).await;
    check(&rows[0]);
    assert_eq!(bmc.count("GET /redfish/v1/Managers"), 1, "first visit navigates");
    assert_eq!(bmc.live_sessions(), 0, "session deleted");
    let remembered = store.recall_redfish_resources().await.unwrap();
    let r = &remembered["remembered-1"];
    assert_eq!(r.chassis, ["/redfish/v1/Chassis/1"]);
    assert_eq!(r.logs.len(), 1, "{r:?}");

    // A new process: login, then the system, its chassis and the SEL's entries at once, then logout.
    let before = bmc.total();
    bmc.peak.store(0, Ordering::SeqCst);
    let rows = pool(store.clone()).sweep(vec![t.clone()], &opts, |_, _| {}).await;
    check(&rows[0]);
    assert_eq!(bmc.total() - before, 5, "{:?}", bmc.hits.lock().unwrap());
    assert_eq!(bmc.count("GET /redfish/v1"), 1, "root not read again");
    assert_eq!(bmc.count("GET /redfish/v1/Managers"), 1, "no navigation");
    assert_eq!(bmc.count("GET /redfish/v1/Managers/bmc/LogServices"), 1);
    assert_eq!(bmc.count("POST /redfish/v1/SessionService/Sessions"), 2, "one login per visit");
    assert_eq!(bmc.peak.load(Ordering::SeqCst), 3, "system, chassis and entries in flight together");
    assert_eq!(bmc.live_sessions(), 0, "session deleted");

    // The SEL moved: the remembered entries 404, the logs are found again in the same visit.
    *bmc.sel_id.lock().unwrap() = "Sel2".into();
    let rows = pool(store.clone()).sweep(vec![t.clone()], &opts, |_, _| {}).await;
    check(&rows[0]);
    assert_eq!(bmc.count("GET /redfish/v1/Managers"), 2, "navigated again");
    let r = &store.recall_redfish_resources().await.unwrap()["remembered-1"];
    assert!(r.logs[0]["@odata.id"].as_str().unwrap().ends_with("/Sel2"), "{r:?}");
    let rows = pool(store).sweep(vec![t], &opts, |_, _| {}).await;
    check(&rows[0]);
    assert_eq!(bmc.count("GET /redfish/v1/Managers"), 2, "the new path is remembered");
    assert_eq!(bmc.live_sessions(), 0);
}
