//! Redfish over HTTPS for every simulated BMC.
//!
//! One address per BMC (clients see distinct BMCs), one listener and one process for all of them
//! (`crate::listen` routes each connection by its local address). Requests are
//! dispatched by hand on path segments rather than through a per-BMC router: the resource ids differ per
//! flavor, and one shared dispatcher keeps 1,000 BMCs cheap. Connections are HTTP/2 when the client offers
//! `h2` by ALPN (as bmcweb serves), else HTTP/1.1 with keep-alive, over rustls; a BMC's faults (unresponsive, slow, sessions full, certificate change) are read on every
//! connection and request.

mod accounts;
mod bios;
mod bmcops;
mod chassis;
mod events;
pub mod flavor;
mod logs;
mod protocol;
pub mod replay;
mod resources;
mod sessions;
pub mod tls;
mod update;
mod vmedia;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ServerConfig;
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::actions::{Origin, Protocol};
use crate::host::Host;
pub use flavor::Flavor;
pub use tls::TlsError;

/// Largest request body accepted (a session login or a PATCH is tiny).
const MAX_BODY: usize = 64 * 1024;
/// Redfish `SessionTimeout`: idle sessions expire after this.
const SESSION_TIMEOUT: Duration = Duration::from_secs(1800);
/// An idle keep-alive connection is closed after this.
const IDLE_CONNECTION: Duration = Duration::from_secs(60);
/// A hung (unresponsive) BMC holds a connection at most this long, even if never cleared.
const HANG_LIMIT: Duration = Duration::from_secs(600);

#[derive(Debug)]
struct Session {
    id: String,
    token: String,
    user: String,
    created: String,
    last_used: Instant,
}

#[derive(Debug, Default)]
struct Sessions {
    list: Vec<Session>,
    next_id: u32,
    /// The BMC reset generation these sessions belong to; a BMC reset drops them all.
    reset_generation: u32,
}

struct Tls {
    generation: u32,
    config: Arc<ServerConfig>,
    cert: CertificateDer<'static>,
}

/// The Redfish face of one BMC.
pub struct RedfishBmc {
    pub host: Arc<Host>,
    pub flavor: &'static Flavor,
    addr: IpAddr,
    session_limit: usize,
    sessions: Mutex<Sessions>,
    /// Made on the first connection (a key pair per BMC would make 100,000 BMCs slow to start).
    tls: Mutex<Option<Tls>>,
    events: events::EventState,
    /// Offer `h2` by ALPN (on by default; off: an HTTP/1.1-only BMC, as sushy-tools and older firmware).
    http2: AtomicBool,
    /// Completed TLS handshakes, and how many of them chose HTTP/2 (tests count connections per sweep).
    tls_connections: AtomicUsize,
    h2_connections: AtomicUsize,
    resumed_connections: AtomicUsize,
    /// Requests received, by method (tests count a client's requests per visit).
    requests: [AtomicUsize; 4],
    /// The newest GETs received (path and query), at most [`RECENT_GETS`] (tests count pages read).
    recent_gets: Mutex<std::collections::VecDeque<String>>,
    /// Server-driven paging: a collection with more members than this, asked for without `$top`, is
    /// served this many at a time with a `Members@odata.nextLink` (as iLO pages its logs). 0: whole.
    page_size: AtomicUsize,
    /// A captured tree this BMC serves instead of the flavor's own documents (the replay flavour).
    replay: Option<replay::Replay>,
}

/// How many of the newest GETs [`RedfishBmc::recent_gets`] keeps.
pub const RECENT_GETS: usize = 4096;

/// Requests a simulated BMC has received since it started, by method (HEAD and others as `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCounts {
    pub get: usize,
    pub post: usize,
    pub delete: usize,
    pub other: usize,
}

impl RequestCounts {
    pub fn total(&self) -> usize {
        self.get + self.post + self.delete + self.other
    }
}

/// Connections a simulated BMC has accepted since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnectionCounts {
    /// Completed TLS handshakes (full or resumed).
    pub tls: usize,
    /// Those that negotiated HTTP/2.
    pub h2: usize,
    /// Those that resumed a TLS session (no certificate sent).
    pub resumed: usize,
}

impl std::fmt::Debug for RedfishBmc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedfishBmc").field("host", &self.host.name()).field("addr", &self.addr).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RedfishBmc {
    pub fn new(host: Arc<Host>, addr: IpAddr) -> Result<Arc<RedfishBmc>, TlsError> {
        let flavor = Flavor::get(host.bmc_config().flavor);
        Ok(Arc::new(RedfishBmc {
            flavor,
            addr,
            session_limit: host.bmc_config().session_limit,
            sessions: Mutex::new(Sessions::default()),
            tls: Mutex::new(None),
            events: events::EventState::default(),
            http2: AtomicBool::new(true),
            tls_connections: AtomicUsize::new(0),
            h2_connections: AtomicUsize::new(0),
            resumed_connections: AtomicUsize::new(0),
            requests: Default::default(),
            recent_gets: Mutex::default(),
            page_size: AtomicUsize::new(0),
            replay: None,
            host,
        }))
    }

    /// A BMC that serves the captured `tree` with the host's power, sessions, SEL and faults on top
    /// (see [`replay`]).
    pub fn replaying(
        host: Arc<Host>,
        addr: IpAddr,
        tree: Arc<replay::ReplayTree>,
    ) -> Result<Arc<RedfishBmc>, TlsError> {
        let mut bmc = Arc::into_inner(RedfishBmc::new(host, addr)?).expect("a new BMC has one owner");
        bmc.replay =
            Some(replay::Replay::new(tree, &bmc.host.sel_entries()).with_reset_start(bmc.host.last_reset()));
        Ok(Arc::new(bmc))
    }

    /// The captured tree this BMC replays, if it is a replaying one.
    pub fn replay_tree(&self) -> Option<&Arc<replay::ReplayTree>> {
        self.replay.as_ref().map(|r| &r.tree)
    }

    /// The certificate currently served (DER), e.g. for a test that pins it (made now if it was not yet).
    pub fn certificate(&self) -> CertificateDer<'static> {
        self.tls_config().map(|t| t.1).unwrap_or_else(|| CertificateDer::from(Vec::new()))
    }

    fn tls_config(&self) -> Option<(Arc<ServerConfig>, CertificateDer<'static>)> {
        let want = self.host.bmc().cert_generation();
        let mut t = lock(&self.tls);
        if t.as_ref().is_none_or(|t| t.generation != want) {
            match tls::server_config(self.host.name(), self.addr) {
                Ok((config, cert)) => *t = Some(Tls { generation: want, config, cert }),
                Err(e) => tracing::warn!(bmc = self.host.name(), error = %e, "certificate generation failed"),
            }
        }
        t.as_ref().map(|t| (t.config.clone(), t.cert.clone()))
    }

    /// Offer HTTP/2 by ALPN from the next connection on (`false`: HTTP/1.1 only).
    pub fn set_http2(&self, on: bool) {
        self.http2.store(on, Ordering::Relaxed);
    }

    /// TLS connections accepted so far.
    pub fn connections(&self) -> ConnectionCounts {
        ConnectionCounts {
            tls: self.tls_connections.load(Ordering::Relaxed),
            h2: self.h2_connections.load(Ordering::Relaxed),
            resumed: self.resumed_connections.load(Ordering::Relaxed),
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> RequestCounts {
        let n = |i: usize| self.requests[i].load(Ordering::Relaxed);
        RequestCounts { get: n(0), post: n(1), delete: n(2), other: n(3) }
    }

    /// The newest GETs received (path and query, oldest first), at most [`RECENT_GETS`].
    pub fn recent_gets(&self) -> Vec<String> {
        lock(&self.recent_gets).iter().cloned().collect()
    }

    /// Serve collections at most `n` members a page (with `Members@odata.nextLink`) when a client does
    /// not ask for `$top`, as BMCs page long logs; `None`: whole (the default).
    pub fn set_page_size(&self, n: Option<usize>) {
        self.page_size.store(n.unwrap_or(0), Ordering::Relaxed);
    }

    fn count(&self, method: &Method) {
        let i = match *method {
            Method::GET => 0,
            Method::POST => 1,
            Method::DELETE => 2,
            _ => 3,
        };
        self.requests[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Number of open Redfish sessions.
    pub fn session_count(&self) -> usize {
        self.sessions().list.len()
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        let mut s = lock(&self.sessions);
        let g = self.host.bmc().reset_generation();
        if s.reset_generation != g {
            s.list.clear();
            s.reset_generation = g;
        }
        s.list.retain(|x| x.last_used.elapsed() < SESSION_TIMEOUT);
        s
    }

    fn latency(&self) -> Duration {
        self.host.scaled(self.flavor.latency) + self.host.bmc().slow().unwrap_or_default()
    }

    pub(crate) fn system_path(&self) -> String {
        format!("/redfish/v1/Systems/{}", self.flavor.system_id)
    }
    pub(crate) fn chassis_path(&self) -> String {
        format!("/redfish/v1/Chassis/{}", self.flavor.chassis_id)
    }
    pub(crate) fn manager_path(&self) -> String {
        format!("/redfish/v1/Managers/{}", self.flavor.manager_id)
    }
    pub(crate) fn log_services_path(&self) -> String {
        if self.flavor.sel_under_system {
            format!("{}/LogServices", self.system_path())
        } else {
            format!("{}/LogServices", self.manager_path())
        }
    }
}

/// Serves one accepted connection (the fleet's shared listener hands each one to its BMC).
pub(crate) async fn serve_connection(tcp: tokio::net::TcpStream, bmc: Arc<RedfishBmc>) {
    connection(tcp, bmc).await;
}

/// Accepts connections for one BMC on a listener of its own until `cancel` fires. Connection tasks stop
/// with it too.
pub async fn serve(listener: TcpListener, bmc: Arc<RedfishBmc>, cancel: CancellationToken) {
    loop {
        let tcp = tokio::select! {
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(bmc = bmc.host.name(), error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => return,
        };
        let bmc = bmc.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = connection(tcp, bmc) => {}
                _ = cancel.cancelled() => {}
            }
        });
    }
}

/// The Redfish service does not answer: the whole BMC hangs (`bmc-unresponsive`) or only its web server
/// (`redfish-down`, IPMI still answers).
fn down(bmc: &RedfishBmc) -> bool {
    let f = bmc.host.bmc();
    f.unresponsive() || f.redfish_down()
}

/// Holds a request or connection while the service is down (what a hung web server looks like).
async fn hang(bmc: &RedfishBmc) {
    let deadline = Instant::now() + HANG_LIMIT;
    while down(bmc) && Instant::now() < deadline {
        let _ = tokio::time::timeout(Duration::from_millis(500), bmc.host.bmc().changed()).await;
    }
}

async fn connection(tcp: tokio::net::TcpStream, bmc: Arc<RedfishBmc>) {
    if down(&bmc) {
        hang(&bmc).await;
        return;
    }
    let _ = tcp.set_nodelay(true);
    let peer = tcp.peer_addr().ok();
    let Some((mut config, _)) = bmc.tls_config() else { return };
    if !bmc.http2.load(Ordering::Relaxed) {
        let mut c = (*config).clone();
        c.alpn_protocols = vec![tls::ALPN_HTTP1.to_vec()];
        config = Arc::new(c);
    }
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        _ => return,
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(tls::ALPN_H2);
    bmc.tls_connections.fetch_add(1, Ordering::Relaxed);
    if h2 {
        bmc.h2_connections.fetch_add(1, Ordering::Relaxed);
    }
    if tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
        bmc.resumed_connections.fetch_add(1, Ordering::Relaxed);
    }
    let svc = hyper::service::service_fn(move |req| {
        let bmc = bmc.clone();
        async move { Ok::<_, Infallible>(handle(bmc, req, peer).await) }
    });
    let io = TokioIo::new(tls);
    if h2 {
        // A peer that vanishes is noticed by pings (HTTP/2 has no header-read timeout to close it).
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(IDLE_CONNECTION)
            .keep_alive_timeout(Duration::from_secs(20))
            .serve_connection(io, svc)
            .await;
    } else {
        let _ = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(IDLE_CONNECTION)
            .keep_alive(true)
            .serve_connection(io, svc)
            .await;
    }
}

/// Paths that need no credentials (DSP0266: service root, OData documents, session login).
fn is_public(method: &Method, path: &str) -> bool {
    matches!(path, "/redfish" | "/redfish/v1" | "/redfish/v1/odata" | "/redfish/v1/$metadata")
        || (method == Method::POST
            && matches!(
                path,
                "/redfish/v1/SessionService/Sessions" | "/redfish/v1/SessionService/Sessions/Members"
            ))
}

async fn handle<B>(bmc: Arc<RedfishBmc>, req: Request<B>, peer: Option<SocketAddr>) -> Response
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    bmc.count(req.method());
    if req.method() == Method::GET {
        let mut r = lock(&bmc.recent_gets);
        if r.len() >= RECENT_GETS {
            r.pop_front();
        }
        r.push_back(
            req.uri().path_and_query().map_or_else(|| req.uri().path().to_owned(), |p| p.to_string()),
        );
    }
    if down(&bmc) {
        hang(&bmc).await;
    }
    let latency = bmc.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let (parts, body) = req.into_parts();
    let raw = parts.uri.path();
    let path = if raw.len() > 1 { raw.trim_end_matches('/') } else { raw }.to_owned();
    let who = if is_public(&parts.method, &path) { None } else { Some(authenticate(&bmc, &parts.headers)) };
    let user = match who {
        Some(Err(resp)) => return finish(resp),
        Some(Ok(user)) => Some(user),
        None => None,
    };
    if let Err(resp) = protocol::check_odata_version(&parts.headers) {
        return finish(resp);
    }
    let mut query = match protocol::parse_query(parts.uri.query()) {
        Ok(q) => q,
        Err(resp) => return finish(resp),
    };
    let page = bmc.page_size.load(Ordering::Relaxed);
    if page > 0 && query.top.is_none() && !query.only {
        query.top = Some(page);
    }
    if query.expand && !bmc.flavor.expand {
        return finish(protocol::not_implemented("$expand"));
    }
    let origin = Origin::new(Protocol::Redfish, peer, user);
    // A firmware image is read as it streams in, never whole (see `update`).
    if parts.method == Method::POST && path == update::MULTIPART {
        return finish(update::multipart(&bmc, &parts.headers, Body::new(body), &origin).await);
    }
    let body = match axum::body::to_bytes(Body::new(body), MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return finish(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "GeneralError",
                "The request body is too large.",
                &[],
            ));
        }
    };
    // HEAD is GET without the body (hyper drops it), so every GET route serves HEAD too.
    let read = parts.method == Method::GET || parts.method == Method::HEAD;
    let method = if read { Method::GET } else { parts.method.clone() };
    let resp = route(&bmc, &method, &path, &parts.headers, &body, &origin).await;
    if read && resp.status() == StatusCode::OK {
        return finish(decorate(&bmc, resp, &query, &path, &parts.headers, &origin).await);
    }
    finish(resp)
}

/// One request to the BMC's documents: the replayed tree's, or the flavor's own.
async fn route(
    bmc: &Arc<RedfishBmc>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
    origin: &Origin,
) -> Response {
    match &bmc.replay {
        Some(r) => replay::dispatch(bmc, r, method, path, headers, body, origin).await,
        None => resources::dispatch(bmc, method, path, headers, body, origin).await,
    }
}

/// One request through the whole service (authentication, query options, dispatch, decoration), without a
/// connection: what the fuzz targets (`crates/sim/fuzz`) drive. Only in `cargo fuzz` builds.
#[cfg(fuzzing)]
#[doc(hidden)]
pub async fn fuzz_request(bmc: Arc<RedfishBmc>, req: Request<Body>) -> Response {
    handle(bmc, req, None).await
}

/// Headers every response carries.
fn finish(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert("OData-Version", HeaderValue::from_static("4.0"));
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// A successful GET: query parameters applied, `Allow` and `Link` added (see [`protocol`]).
async fn decorate(
    bmc: &Arc<RedfishBmc>,
    resp: Response,
    query: &protocol::Query,
    path: &str,
    headers: &HeaderMap,
    origin: &Origin,
) -> Response {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !is_json {
        let mut resp = resp;
        protocol::add_headers(resp.headers_mut(), path, None);
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    if query.is_plain()
        && let Some(Rendered(v)) = parts.extensions.remove::<Rendered>()
    {
        // The body is exactly what the rewrite below would produce for a query with nothing to apply.
        protocol::add_headers(&mut parts.headers, path, Some(&v));
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "GeneralError", "rendering failed", &[]);
    };
    let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let mut path = path.to_owned();
    if query.only {
        match protocol::only_member(&v) {
            Err(resp) => return resp,
            Ok(Some(member)) => {
                let r = route(bmc, &Method::GET, &member, headers, &Bytes::new(), origin).await;
                if r.status() == StatusCode::OK
                    && let Ok(b) = axum::body::to_bytes(r.into_body(), usize::MAX).await
                    && let Ok(m) = serde_json::from_slice::<Value>(&b)
                {
                    v = m;
                    path = member;
                }
            }
            Ok(None) => {}
        }
    }
    if query.expand {
        expand_members(bmc, &mut v, headers, origin).await;
    }
    let v = protocol::apply(v, query, &path);
    protocol::add_headers(&mut parts.headers, &path, Some(&v));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(v.to_string()))
}

/// `$expand` of a collection: each member link replaced by the member (one level); a member that cannot be
/// read stays a link, as a service does when a member vanishes while it renders.
async fn expand_members(bmc: &Arc<RedfishBmc>, v: &mut Value, headers: &HeaderMap, origin: &Origin) {
    let Some(members) = v.get_mut("Members").and_then(Value::as_array_mut) else { return };
    for m in members.iter_mut() {
        let Some(link) = m.get("@odata.id").and_then(Value::as_str).map(str::to_owned) else { continue };
        if m.as_object().is_some_and(|o| o.len() > 1) {
            continue;
        }
        let r = route(bmc, &Method::GET, &link, headers, &Bytes::new(), origin).await;
        if r.status() == StatusCode::OK
            && let Ok(b) = axum::body::to_bytes(r.into_body(), usize::MAX).await
            && let Ok(doc) = serde_json::from_slice::<Value>(&b)
        {
            *m = doc;
        }
    }
}

/// Checks `X-Auth-Token` (a session) or HTTP Basic; returns the user name.
fn authenticate(bmc: &RedfishBmc, headers: &HeaderMap) -> Result<String, Response> {
    if let Some(token) = headers.get("X-Auth-Token").and_then(|v| v.to_str().ok()) {
        let mut s = bmc.sessions();
        if let Some(sess) = s.list.iter_mut().find(|x| x.token == token) {
            sess.last_used = Instant::now();
            return Ok(sess.user.clone());
        }
        return Err(unauthorized());
    }
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")))
        && let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(basic.trim())
        && let Ok(raw) = String::from_utf8(raw)
        && let Some((user, pass)) = raw.split_once(':')
        && check_password(bmc, user, pass)
    {
        return Ok(user.to_owned());
    }
    Err(unauthorized())
}

/// A login against the BMC's user database (counts toward its lockout, like a real BMC).
fn check_password(bmc: &RedfishBmc, user: &str, pass: &str) -> bool {
    bmc.host.accounts().login(user, pass, Some(1)).is_ok()
}

fn unauthorized() -> Response {
    let mut r = error(
        StatusCode::UNAUTHORIZED,
        "NoValidSession",
        "There is no valid session established with the implementation.",
        &[],
    );
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"Redfish\""));
    r
}

/// A Redfish error body with one extended-info message from the Base registry.
pub(crate) fn error_body(id: &str, message: &str, resolution: &str, args: &[&str]) -> Value {
    let mid = format!("Base.1.15.0.{id}");
    json!({"error": {
        "code": mid,
        "message": message,
        "@Message.ExtendedInfo": [{
            "@odata.type": "#Message.v1_1_1.Message",
            "MessageId": mid,
            "Message": message,
            "MessageArgs": args,
            "Severity": "Warning",
            "MessageSeverity": "Warning",
            "Resolution": resolution
        }]
    }})
}

pub(crate) fn error(status: StatusCode, id: &str, message: &str, args: &[&str]) -> Response {
    let resolution = match status {
        StatusCode::UNAUTHORIZED => "Establish a session or supply valid credentials.",
        StatusCode::NOT_FOUND => "Provide a valid resource identifier and resubmit the request.",
        _ => "Correct the request and resubmit it.",
    };
    json_response(status, error_body(id, message, resolution, args))
}

pub(crate) fn json_response(status: StatusCode, v: Value) -> Response {
    let mut r = (status, v.to_string()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    r.extensions_mut().insert(Rendered(v));
    r
}

/// The document a [`json_response`] body was rendered from, kept so that a plain GET (no query options)
/// gets its `Link` header without parsing its own body again: the simulator shares the benchmark's cores
/// with the client it measures, and every request it spends less on is CPU the client gets.
#[derive(Clone)]
struct Rendered(Value);

/// Binds a Redfish listener: `addr` with the given port (0 = any).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let sock = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(256)
}
