//! The speculative login of first contact (the session POST sent with the service-root GET): adopted when
//! it works, no orphan session on the BMC when the root fails, when the connect is cancelled, or when the
//! BMC's Sessions collection is elsewhere. And the first-contact reads sent with them (HTTP Basic GETs of
//! the spec-fixed collections): used once, in place of `$expand`, and harmless where Basic is refused. Against a small in-test server (axum) whose root can fail, hang
//! or name another login URI, which neither the simulator nor sushy-tools can be made to do; the request
//! count of a whole first contact is tested against the simulator (`crates/bmc/tests/redfish_first_contact.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use lifeline_redfish::*;
use lifeline_test_utils::unique_loopback;
use serde_json::{Value, json};

#[derive(Default, Clone, Copy, PartialEq)]
enum Root {
    #[default]
    Fine,
    /// 500 on the root GET.
    Fails,
    /// The root answers after 2 s.
    Hangs,
    /// `Links.Sessions` is `/redfish/v1/SessionService/Sessions/Members`, and the spec URI answers 405.
    OtherLogin,
}

#[derive(Default)]
struct Bmc {
    root: Root,
    /// The login answers after this many ms.
    login_delay_ms: u64,
    sessions: Mutex<HashMap<String, usize>>,
    next_id: AtomicUsize,
    logins: AtomicUsize,
    deletes: AtomicUsize,
    /// Requests by path, in arrival order.
    seen: Mutex<Vec<String>>,
    /// `GET /redfish/v1/Systems` accepts HTTP Basic (as DSP0266 asks); else only a session token.
    basic: bool,
    /// The root says `$expand` works (`ProtocolFeaturesSupported.ExpandQuery`).
    expand: bool,
}

type S = State<Arc<Bmc>>;

impl Bmc {
    fn saw(&self, what: &str) {
        self.seen.lock().unwrap().push(what.to_owned());
    }
    fn live(&self) -> usize {
        self.sessions.lock().unwrap().len()
    }
}

async fn root(State(b): S) -> Response {
    b.saw("GET /redfish/v1/");
    match b.root {
        Root::Fails => return (StatusCode::INTERNAL_SERVER_ERROR, "broken").into_response(),
        Root::Hangs => tokio::time::sleep(Duration::from_secs(2)).await,
        _ => {}
    }
    let sessions = if b.root == Root::OtherLogin {
        "/redfish/v1/SessionService/Sessions/Members"
    } else {
        "/redfish/v1/SessionService/Sessions"
    };
    axum::Json(json!({
        "@odata.id": "/redfish/v1/", "RedfishVersion": "1.15.0", "Vendor": "Testco",
        "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "SessionService": {"@odata.id": "/redfish/v1/SessionService"},
        "Links": {"Sessions": {"@odata.id": sessions}},
        "ProtocolFeaturesSupported": {"ExpandQuery": {"Levels": b.expand, "MaxLevels": 1, "NoLinks": b.expand}},
    }))
    .into_response()
}

async fn do_login(b: &Bmc, body: &Value) -> Response {
    tokio::time::sleep(Duration::from_millis(b.login_delay_ms)).await;
    if body["UserName"] != "admin" || body["Password"] != "pw" {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let id = b.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    let token = format!("token-{id}");
    b.sessions.lock().unwrap().insert(token.clone(), id);
    b.logins.fetch_add(1, Ordering::SeqCst);
    let loc = format!("/redfish/v1/SessionService/Sessions/{id}");
    (
        StatusCode::CREATED,
        [("X-Auth-Token", token), ("Location", loc.clone())],
        axum::Json(json!({"@odata.id": loc})),
    )
        .into_response()
}

async fn login(State(b): S, axum::Json(body): axum::Json<Value>) -> Response {
    b.saw("POST Sessions");
    if b.root == Root::OtherLogin {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    do_login(&b, &body).await
}

async fn login_members(State(b): S, axum::Json(body): axum::Json<Value>) -> Response {
    b.saw("POST Sessions/Members");
    do_login(&b, &body).await
}

async fn logout(State(b): S, Path(id): Path<usize>, h: HeaderMap) -> Response {
    b.saw("DELETE session");
    let token = h.get("x-auth-token").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mut s = b.sessions.lock().unwrap();
    if s.get(&token) != Some(&id) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    s.remove(&token);
    b.deletes.fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT.into_response()
}

async fn systems(State(b): S, RawQuery(q): RawQuery, h: HeaderMap) -> Response {
    let token = h.get("x-auth-token").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let basic = h.get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Basic "));
    let query = q.map(|q| format!("?{q}")).unwrap_or_default();
    if basic {
        b.saw(&format!("GET Systems{query} (Basic)"));
        // admin:pw
        if !b.basic || h.get("authorization").is_some_and(|v| v != "Basic YWRtaW46cHc=") {
            return StatusCode::UNAUTHORIZED.into_response();
        }
    } else {
        b.saw(&format!("GET Systems{query}"));
        if !b.sessions.lock().unwrap().contains_key(token) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
    }
    axum::Json(json!({"Members": [{"@odata.id": "/redfish/v1/Systems/1", "Id": "1", "PowerState": "On"}]}))
        .into_response()
}

struct Server {
    url: String,
    bmc: Arc<Bmc>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start(bmc: Bmc) -> Server {
    let bmc = Arc::new(bmc);
    let app = Router::new()
        .route("/redfish/v1/", get(root))
        .route("/redfish/v1/SessionService/Sessions", post(login))
        .route("/redfish/v1/SessionService/Sessions/Members", post(login_members))
        .route("/redfish/v1/SessionService/Sessions/{id}", delete(logout))
        .route("/redfish/v1/Systems", get(systems))
        .with_state(bmc.clone());
    let listener = tokio::net::TcpListener::bind((unique_loopback(), 0)).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server { url, bmc, task }
}

async fn connect(s: &Server, opts: ClientOptions) -> Result<Client, RedfishError> {
    Client::connect(
        BmcTarget::new("test-bmc", &s.url),
        Credentials::new("admin", "pw"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        opts,
    )
    .await
}

/// Options without the first-contact reads, for the tests that count the login's requests exactly.
fn login_only() -> ClientOptions {
    ClientOptions { first_contact_reads: &[], ..ClientOptions::default() }
}

async fn eventually_no_session(b: &Bmc) {
    for _ in 0..150 {
        if b.live() == 0 && b.logins.load(Ordering::SeqCst) > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("speculative session not deleted: live {}, logins {}", b.live(), b.logins.load(Ordering::SeqCst));
}

#[tokio::test]
async fn the_login_goes_out_with_the_root_and_is_used() {
    let s = start(Bmc::default()).await;
    let c = connect(&s, login_only()).await.unwrap();
    // Logged in before any request needed it: the first read costs no login round trip.
    assert_eq!(c.session_logins(), 1);
    assert_eq!(c.sessions_held(), 1);
    c.systems().await.unwrap();
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1);
    assert_eq!(c.close().await.unwrap(), 1);
    assert_eq!(s.bmc.live(), 0);
    let seen = s.bmc.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[2..], ["GET Systems", "DELETE session"], "{seen:?}");
}

#[tokio::test]
async fn without_speculation_the_login_waits_for_the_first_request() {
    let s = start(Bmc::default()).await;
    let c = connect(&s, ClientOptions { speculative_login: false, ..login_only() }).await.unwrap();
    assert_eq!(c.session_logins(), 0);
    c.systems().await.unwrap();
    assert_eq!(c.session_logins(), 1);
    c.close().await.unwrap();
    let seen = s.bmc.seen.lock().unwrap().clone();
    assert_eq!(seen, ["GET /redfish/v1/", "POST Sessions", "GET Systems", "DELETE session"]);
}

#[tokio::test]
async fn a_failing_root_leaves_no_session() {
    // The login answers after the root failed: connect waits for it and deletes it before returning.
    let s = start(Bmc { root: Root::Fails, login_delay_ms: 300, ..Bmc::default() }).await;
    let e = connect(&s, ClientOptions::default()).await.unwrap_err();
    assert!(matches!(e, RedfishError::Status { status: 500, .. }), "{e}");
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1, "the login was sent with the root GET");
    assert_eq!(s.bmc.live(), 0, "deleted before connect returned");
    assert_eq!(s.bmc.deletes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_connect_leaves_no_session() {
    // Cancelled while the root hangs, once the login has (or has not yet) been answered.
    for delay in [0, 600] {
        let s = start(Bmc { root: Root::Hangs, login_delay_ms: delay, ..Bmc::default() }).await;
        let r = tokio::time::timeout(Duration::from_millis(300), connect(&s, ClientOptions::default())).await;
        assert!(r.is_err(), "the root hangs for 2 s");
        eventually_no_session(&s.bmc).await;
        assert_eq!(s.bmc.deletes.load(Ordering::SeqCst), 1, "login delay {delay} ms");
    }
}

#[tokio::test]
async fn a_login_elsewhere_falls_back_to_the_roots_link() {
    let s = start(Bmc { root: Root::OtherLogin, ..Bmc::default() }).await;
    let c = connect(&s, ClientOptions::default()).await.unwrap();
    assert_eq!(c.session_logins(), 0, "the spec URI refused (405): nothing to adopt");
    c.systems().await.unwrap();
    assert_eq!(c.auth_in_use(), AuthInUse::Session);
    assert_eq!(c.close().await.unwrap(), 1);
    assert_eq!(s.bmc.live(), 0);
    let seen = s.bmc.seen.lock().unwrap().clone();
    assert!(seen.contains(&"POST Sessions/Members".to_owned()), "{seen:?}");
}

#[tokio::test]
async fn basic_auth_sends_no_login() {
    let s = start(Bmc::default()).await;
    let c = connect(&s, ClientOptions { auth: AuthMode::Basic, ..login_only() }).await.unwrap();
    c.close().await.unwrap();
    assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 0);
    assert_eq!(*s.bmc.seen.lock().unwrap(), ["GET /redfish/v1/"]);
}

#[tokio::test]
async fn an_unreachable_bmc_fails_at_once() {
    // Nothing listens: no connection comes up, so the login (waiting for the root GET's connection) is
    // never sent, and connect does not wait for it.
    let l = std::net::TcpListener::bind((unique_loopback(), 0)).unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let t0 = std::time::Instant::now();
    let r = Client::connect(
        BmcTarget::new("gone", format!("http://{addr}")),
        Credentials::new("admin", "pw"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        ClientOptions::default(),
    )
    .await;
    assert!(r.is_err());
    assert!(t0.elapsed() < Duration::from_secs(3), "took {:?}", t0.elapsed());
}

/// What the test BMC saw, in order, as one list.
fn seen(s: &Server) -> Vec<String> {
    s.bmc.seen.lock().unwrap().clone()
}

#[tokio::test]
async fn the_collections_are_read_with_the_root_and_used_once() {
    for expand in [false, true] {
        let s = start(Bmc { basic: true, expand, ..Bmc::default() }).await;
        let c = connect(&s, ClientOptions::default()).await.unwrap();
        // Connect returns once the login is answered: the read that rode with it is in by then too.
        assert!(seen(&s).contains(&"GET Systems (Basic)".to_owned()), "{:?}", seen(&s));
        let first = c.systems().await.unwrap();
        assert_eq!(first.items.len(), 1);
        assert_eq!(first.items[0].power_state, Some(lifeline_types::PowerState::On));
        // Nothing more was sent for it: no token read, and no `$expand` read though the root offers it.
        let before_second = seen(&s);
        assert!(
            !before_second.iter().any(|r| r.starts_with("GET Systems") && !r.ends_with("(Basic)")),
            "{before_second:?}"
        );
        // Used once: a later read goes to the BMC (a power state read later must be current). Within the
        // first visit it lists the collection as the first read did (the members a visit already read are
        // shared by its view, `sharing_reads`, not embedded again).
        c.systems().await.unwrap();
        let after = seen(&s);
        assert_eq!(after.last().map(String::as_str), Some("GET Systems"), "{after:?}");
        assert_eq!(c.close().await.unwrap(), 1);
        assert_eq!(s.bmc.logins.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn a_bmc_refusing_basic_costs_one_request_not_an_answer() {
    let s = start(Bmc { basic: false, ..Bmc::default() }).await;
    let c = connect(&s, ClientOptions::default()).await.unwrap();
    let l = c.systems().await.unwrap();
    assert_eq!(l.items.len(), 1);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    let got = seen(&s);
    let systems: Vec<&String> = got.iter().filter(|r| r.starts_with("GET Systems")).collect();
    assert_eq!(systems, ["GET Systems (Basic)", "GET Systems"], "{got:?}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_wrong_password_reads_nothing() {
    let s = start(Bmc { basic: true, ..Bmc::default() }).await;
    let c = Client::connect(
        BmcTarget::new("test-bmc", &s.url),
        Credentials::new("admin", "wrong"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        ClientOptions::default(),
    )
    .await
    .unwrap();
    let e = c.systems().await.unwrap_err();
    assert!(matches!(e, RedfishError::Login { .. } | RedfishError::Status { status: 401, .. }), "{e}");
    assert_eq!(s.bmc.live(), 0);
}
