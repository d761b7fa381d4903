//! Shared session token, re-login, logout, Basic fallback, leniency end to end, timeouts and SSE, against a small
//! in-test Redfish server (axum) that counts sessions and enforces its own session limit like a BMC.
//! (sushy-emulator has no SessionService and no EventService, so these behaviours need this server.)

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine;
use futures::StreamExt;
use lifeline_redfish::*;
use lifeline_test_utils::unique_loopback;
use serde_json::{Value, json};

#[derive(Default)]
struct Bmc {
    limit: usize,
    session_service: bool,
    sessions: Mutex<HashMap<String, usize>>,
    next_id: AtomicUsize,
    peak: AtomicUsize,
    logins: AtomicUsize,
    refused: AtomicUsize,
    deletes: AtomicUsize,
    subscriptions: Mutex<Vec<usize>>,
    /// Serve a System whose PowerState is garbage.
    garbage: AtomicBool,
    resets: AtomicUsize,
}

type S = State<Arc<Bmc>>;

fn redfish_error(status: StatusCode, msg: &str) -> Response {
    (status, axum::Json(json!({"error": {"code": "Base.1.0.GeneralError", "message": msg}}))).into_response()
}

fn authorized(bmc: &Bmc, h: &HeaderMap) -> bool {
    if let Some(t) = h.get("x-auth-token").and_then(|v| v.to_str().ok()) {
        return bmc.sessions.lock().unwrap().contains_key(t);
    }
    let want = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("admin:pw"));
    !bmc.session_service && h.get("authorization").and_then(|v| v.to_str().ok()) == Some(want.as_str())
}

async fn root(State(b): S) -> Response {
    let mut r = json!({
        "@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
        "RedfishVersion": "1.15.0", "Vendor": "Testco", "Name": "session test BMC",
        "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Chassis": {"@odata.id": "/redfish/v1/Chassis"},
        "EventService": {"@odata.id": "/redfish/v1/EventService"},
    });
    if b.session_service {
        r["SessionService"] = json!({"@odata.id": "/redfish/v1/SessionService"});
        r["Links"] = json!({"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}});
    }
    axum::Json(r).into_response()
}

async fn login(State(b): S, axum::Json(body): axum::Json<Value>) -> Response {
    if body["UserName"] != "admin" || body["Password"] != "pw" {
        return redfish_error(StatusCode::UNAUTHORIZED, "bad credentials");
    }
    let mut s = b.sessions.lock().unwrap();
    if s.len() >= b.limit {
        b.refused.fetch_add(1, Ordering::SeqCst);
        return redfish_error(StatusCode::SERVICE_UNAVAILABLE, "maximum number of sessions reached");
    }
    let id = b.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    let token = format!("token-{id}");
    s.insert(token.clone(), id);
    b.peak.fetch_max(s.len(), Ordering::SeqCst);
    b.logins.fetch_add(1, Ordering::SeqCst);
    let loc = format!("/redfish/v1/SessionService/Sessions/{id}");
    (
        StatusCode::CREATED,
        [("X-Auth-Token", token), ("Location", loc.clone())],
        axum::Json(json!({"@odata.id": loc, "Id": id.to_string()})),
    )
        .into_response()
}

async fn logout(State(b): S, Path(id): Path<usize>, h: HeaderMap) -> Response {
    if !authorized(&b, &h) {
        return redfish_error(StatusCode::UNAUTHORIZED, "no session");
    }
    let mut s = b.sessions.lock().unwrap();
    let before = s.len();
    s.retain(|_, v| *v != id);
    if s.len() == before {
        return redfish_error(StatusCode::NOT_FOUND, "no such session");
    }
    b.deletes.fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT.into_response()
}

async fn systems(State(b): S, h: HeaderMap) -> Response {
    if !authorized(&b, &h) {
        return redfish_error(StatusCode::UNAUTHORIZED, "auth");
    }
    axum::Json(json!({"@odata.id": "/redfish/v1/Systems", "Members": [{"@odata.id": "/redfish/v1/Systems/System.Embedded.1"}]}))
        .into_response()
}

async fn system(State(b): S, h: HeaderMap) -> Response {
    if !authorized(&b, &h) {
        return redfish_error(StatusCode::UNAUTHORIZED, "auth");
    }
    // Slow enough that concurrent requests overlap.
    tokio::time::sleep(Duration::from_millis(40)).await;
    let power = if b.garbage.load(Ordering::SeqCst) { json!({"weird": 1}) } else { json!("On") };
    axum::Json(json!({
        "@odata.id": "/redfish/v1/Systems/System.Embedded.1", "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
        "Id": "System.Embedded.1", "PowerState": power, "Model": "PowerEdge XE9680", "SerialNumber": 12345,
        "Status": {"Health": "OK"},
        "Actions": {"#ComputerSystem.Reset": {"target": "/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset",
            "@Redfish.ActionInfo": "/redfish/v1/Systems/System.Embedded.1/ResetActionInfo"}}
    }))
    .into_response()
}

async fn action_info() -> Response {
    axum::Json(json!({"Parameters": [{"Name": "ResetType", "AllowableValues": ["On", "ForceOff", "GracefulShutdown"]}]}))
        .into_response()
}

/// Accepts the reset, then never answers in time (the reply is "lost").
async fn reset_lost(State(b): S) -> Response {
    b.resets.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    StatusCode::NO_CONTENT.into_response()
}

async fn slow() -> Response {
    tokio::time::sleep(Duration::from_secs(5)).await;
    StatusCode::OK.into_response()
}

async fn event_service() -> Response {
    axum::Json(json!({"@odata.id": "/redfish/v1/EventService", "ServiceEnabled": true,
        "ServerSentEventUri": "/redfish/v1/EventService/SSE",
        "Subscriptions": {"@odata.id": "/redfish/v1/EventService/Subscriptions"}}))
    .into_response()
}

/// Three events (one split across chunks, one with a keep-alive comment), then silence.
async fn sse(State(b): S, h: HeaderMap) -> Response {
    if !authorized(&b, &h) {
        return redfish_error(StatusCode::UNAUTHORIZED, "auth");
    }
    let ev = |id: u32, sev: &str| {
        format!(
            "id: {id}\ndata: {}\n\n",
            json!({"@odata.type": "#Event.v1_7_0.Event", "Id": id.to_string(), "Events": [
                {"EventId": id.to_string(), "MessageId": "ResourceEvent.1.0.ResourceChanged", "MessageSeverity": sev,
                 "Message": format!("event {id}"), "OriginOfCondition": {"@odata.id": "/redfish/v1/Systems/System.Embedded.1"}}]})
        )
    };
    let first = ev(1, "OK");
    let (a, b2) = first.split_at(first.len() / 2);
    let chunks: Vec<String> =
        vec![a.to_owned(), b2.to_owned(), ": keep-alive\n\n".into(), ev(2, "Warning"), ev(3, "Critical")];
    let stream = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>))
        .chain(futures::stream::pending());
    Response::builder().header("Content-Type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
}

async fn subs_list(State(b): S) -> Response {
    let ids = b.subscriptions.lock().unwrap().clone();
    let members: Vec<Value> = ids
        .iter()
        .map(|i| json!({"@odata.id": format!("/redfish/v1/EventService/Subscriptions/{i}")}))
        .collect();
    axum::Json(json!({"Members": members})).into_response()
}

async fn subs_create(State(b): S, axum::Json(body): axum::Json<Value>) -> Response {
    assert_eq!(body["Protocol"], "Redfish");
    assert_eq!(body["Context"], "lifeline-test");
    let mut s = b.subscriptions.lock().unwrap();
    let id = s.len() + 1;
    s.push(id);
    (StatusCode::CREATED, [("Location", format!("/redfish/v1/EventService/Subscriptions/{id}"))])
        .into_response()
}

async fn subs_get(Path(id): Path<usize>) -> Response {
    axum::Json(
        json!({"@odata.id": format!("/redfish/v1/EventService/Subscriptions/{id}"), "Id": id.to_string(),
        "Destination": "https://127.0.0.1:9/events", "Protocol": "Redfish", "Context": "lifeline-test"}),
    )
    .into_response()
}

async fn subs_delete(State(b): S, Path(id): Path<usize>) -> Response {
    b.subscriptions.lock().unwrap().retain(|i| *i != id);
    StatusCode::NO_CONTENT.into_response()
}

struct Server {
    addr: SocketAddr,
    bmc: Arc<Bmc>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start(limit: usize, session_service: bool) -> Server {
    let bmc = Arc::new(Bmc { limit, session_service, ..Bmc::default() });
    let app = Router::new()
        .route("/redfish/v1/", get(root))
        .route("/redfish/v1/SessionService/Sessions", post(login))
        .route("/redfish/v1/SessionService/Sessions/{id}", delete(logout))
        .route("/redfish/v1/Systems", get(systems))
        .route("/redfish/v1/Systems/System.Embedded.1", get(system))
        .route("/redfish/v1/Systems/System.Embedded.1/ResetActionInfo", get(action_info))
        .route("/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset", post(reset_lost))
        .route("/redfish/v1/Slow", get(slow))
        .route("/redfish/v1/EventService", get(event_service))
        .route("/redfish/v1/EventService/SSE", get(sse))
        .route("/redfish/v1/EventService/Subscriptions", get(subs_list).post(subs_create))
        .route("/redfish/v1/EventService/Subscriptions/{id}", get(subs_get).delete(subs_delete))
        .with_state(bmc.clone());
    let listener = tokio::net::TcpListener::bind((unique_loopback(), 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server { addr, bmc, task }
}

async fn connect(s: &Server, opts: ClientOptions) -> Client {
    Client::connect(
        BmcTarget::new("test-bmc", format!("http://{}", s.addr)),
        Credentials::new("admin", "pw"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        opts,
    )
    .await
    .unwrap()
}

fn live(s: &Server) -> usize {
    s.bmc.sessions.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_one_session_and_close_logs_out() {
    let s = start(8, true).await;
    let c = connect(&s, ClientOptions { max_concurrent_requests: 8, ..ClientOptions::default() }).await;
    assert_eq!(c.auth_in_use(), AuthInUse::Session);
    let sys = c.systems().await.unwrap().items.remove(0);
    let reads = (0..12).map(|_| c.system(&sys.odata_id));
    for r in futures::future::join_all(reads).await {
        r.unwrap();
    }
    assert_eq!(s.bmc.peak.load(Ordering::SeqCst), 1, "one session for every request");
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1, "one login");
    assert_eq!(c.sessions_held(), 1);
    assert_eq!(c.close().await.unwrap(), 1);
    assert_eq!(live(&s), 0, "no orphan session on the BMC");
    assert_eq!(s.bmc.deletes.load(Ordering::SeqCst), 1);
    assert!(matches!(c.systems().await, Err(RedfishError::Closed { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_wait_for_one_login() {
    // A BMC with a single session slot: a client that logged in per request would be refused.
    let s = start(1, true).await;
    let c = connect(&s, ClientOptions { max_concurrent_requests: 6, ..ClientOptions::default() }).await;
    let reads = (0..6).map(|_| c.system("/redfish/v1/Systems/System.Embedded.1"));
    for r in futures::future::join_all(reads).await {
        r.unwrap();
    }
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1);
    assert_eq!(s.bmc.refused.load(Ordering::SeqCst), 0, "never asked for a second session");
    assert_eq!(c.session_logins(), 1);
    c.close().await.unwrap();
    assert_eq!(live(&s), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_in_the_middle_of_concurrent_requests_logs_in_once_for_all() {
    let s = start(1, true).await;
    let c = connect(&s, ClientOptions { max_concurrent_requests: 6, ..ClientOptions::default() }).await;
    c.systems().await.unwrap();
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1);
    // The BMC forgets the session (timeout, reboot) while six requests are about to use it; its table has
    // room for one session only, so a second re-login would be refused.
    s.bmc.sessions.lock().unwrap().clear();
    let reads = (0..6).map(|_| c.system("/redfish/v1/Systems/System.Embedded.1"));
    for r in futures::future::join_all(reads).await {
        r.unwrap();
    }
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 2, "one re-login for all six");
    assert_eq!(s.bmc.refused.load(Ordering::SeqCst), 0);
    assert_eq!(c.sessions_held(), 1);
    assert_eq!(c.close().await.unwrap(), 1);
    assert_eq!(live(&s), 0);
}

#[tokio::test]
async fn expired_session_is_replaced_once() {
    let s = start(4, true).await;
    let c = connect(&s, ClientOptions::default()).await;
    c.systems().await.unwrap();
    // The BMC forgets every session (timeout, BMC reboot).
    s.bmc.sessions.lock().unwrap().clear();
    c.systems().await.unwrap();
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 2);
    c.close().await.unwrap();
    assert_eq!(live(&s), 0);
}

#[tokio::test]
async fn dropping_without_close_still_logs_out() {
    let s = start(4, true).await;
    let c = connect(&s, ClientOptions::default()).await;
    c.systems().await.unwrap();
    assert_eq!(live(&s), 1);
    drop(c);
    for _ in 0..100 {
        if live(&s) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("session not deleted after drop");
}

#[tokio::test]
async fn without_session_service_basic_is_used() {
    let s = start(4, false).await;
    let c = connect(&s, ClientOptions::default()).await;
    assert_eq!(c.auth_in_use(), AuthInUse::Basic);
    // This server takes a login its root does not advertise: the speculative login (sent with the root
    // GET) made a session, which was deleted before connect returned.
    assert_eq!(live(&s), 0, "no orphan speculative session");
    assert_eq!(s.bmc.deletes.load(Ordering::SeqCst), s.bmc.logins.load(Ordering::SeqCst));
    assert_eq!(c.systems().await.unwrap().items.len(), 1);
    assert_eq!(c.session_logins(), 0);
}

#[tokio::test]
async fn garbage_field_degrades_only_that_field_and_action_info_gives_reset_types() {
    let s = start(4, true).await;
    s.bmc.garbage.store(true, Ordering::SeqCst);
    let c = connect(&s, ClientOptions::default()).await;
    let list = c.systems().await.unwrap();
    let sys = &list.items[0];
    assert_eq!(sys.power_state, None);
    assert_eq!(sys.serial_number, None, "a number where a string belongs");
    assert_eq!(sys.model.as_deref(), Some("PowerEdge XE9680"));
    assert_eq!(sys.status.health, Some(lifeline_types::Health::Ok));
    let at: Vec<&str> = list.warnings.iter().map(|w| w.at.as_str()).collect();
    assert!(
        at.iter().any(|a| a.ends_with("/PowerState")) && at.iter().any(|a| a.ends_with("/SerialNumber")),
        "{at:?}"
    );
    // AllowableValues come from the ActionInfo document here.
    let (types, _) = c.reset_types(sys).await.unwrap();
    let types = types.unwrap();
    assert_eq!(types, ["On", "ForceOff", "GracefulShutdown"]);
    assert_eq!(
        plan_reset(lifeline_types::PowerAction::Cycle, Some(&types), &[]),
        Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() })
    );
    c.close().await.unwrap();
}

#[tokio::test]
async fn every_request_has_a_timeout() {
    let s = start(4, false).await;
    let c = connect(
        &s,
        ClientOptions { request_timeout: Duration::from_millis(300), ..ClientOptions::default() },
    )
    .await;
    let t0 = std::time::Instant::now();
    let err = c.get_json("/redfish/v1/Slow").await.unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    match &err {
        RedfishError::Timeout { bmc, url, .. } => {
            assert!(bmc == "test-bmc" && url.ends_with("/redfish/v1/Slow"))
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    // Links to other hosts are refused before any request.
    assert!(matches!(
        c.get_json("http://192.0.2.1/redfish/v1/").await,
        Err(RedfishError::ForeignLink { .. })
    ));
}

#[tokio::test]
async fn a_lost_reset_reply_is_reported_and_never_resent() {
    let s = start(4, false).await;
    let c = connect(
        &s,
        ClientOptions { request_timeout: Duration::from_millis(300), ..ClientOptions::default() },
    )
    .await;
    let sys = c.systems().await.unwrap().items.remove(0);
    let err = c.reset(&sys, "ForceOff").await.unwrap_err();
    match &err {
        RedfishError::ActionOutcomeUnknown { reset_type, .. } => assert_eq!(reset_type, "ForceOff"),
        other => panic!("expected ActionOutcomeUnknown, got {other:?}"),
    }
    assert!(err.to_string().contains("read the power state"), "{err}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.bmc.resets.load(Ordering::SeqCst), 1, "sent exactly once");
}

#[tokio::test]
async fn sse_stream_events_idle_and_byte_limits_and_subscriptions() {
    let s = start(4, true).await;
    let c = connect(&s, ClientOptions::default()).await;
    let limits = SseLimits { idle_timeout: Duration::from_millis(300), ..SseLimits::default() };
    let mut stream = c.event_stream(None, limits).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let e = stream.next().await.unwrap().unwrap();
        got.push(stream.parse(&e));
    }
    let sev: Vec<_> = got.iter().map(|e| e.records[0].severity).collect();
    use lifeline_types::Health::*;
    assert_eq!(sev, [Some(Ok), Some(Warning), Some(Critical)]);
    assert_eq!(got[0].records[0].origin.as_deref(), Some("/redfish/v1/Systems/System.Embedded.1"));
    assert!(matches!(stream.next().await, Some(Err(RedfishError::SseIdle { .. }))));
    assert!(stream.next().await.is_none());
    // The stream held a session while it lived; it is back in the pool now.
    drop(stream);

    let small = SseLimits { max_total_bytes: Some(100), ..limits };
    let mut stream = c.event_stream(None, small).await.unwrap();
    let mut saw_limit = false;
    while let Some(r) = stream.next().await {
        if let Err(RedfishError::SseByteLimit { limit: 100, .. }) = r {
            saw_limit = true;
        }
    }
    assert!(saw_limit);
    drop(stream);

    let req = SubscriptionRequest {
        destination: "https://127.0.0.1:9/events".into(),
        context: "lifeline-test".into(),
        event_types: None,
        registry_prefixes: None,
        heartbeat_minutes: None,
    };
    let uri = c.subscribe(&req).await.unwrap();
    assert_eq!(uri, "/redfish/v1/EventService/Subscriptions/1");
    let subs = c.subscriptions().await.unwrap();
    assert_eq!(subs.items.len(), 1);
    assert_eq!(subs.items[0].context.as_deref(), Some("lifeline-test"));
    c.unsubscribe(&uri).await.unwrap();
    assert!(c.subscriptions().await.unwrap().items.is_empty());
    c.close().await.unwrap();
    assert_eq!(live(&s), 0);
}
