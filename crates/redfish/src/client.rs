//! The Redfish client for one BMC: connection, authentication, navigation by links, timeouts, limits.
//!
//! Why one `Client` per BMC: pins, sessions, quirks and the concurrency limit are all per BMC, and a
//! reqwest client per BMC lets the TLS verifier know whose certificate it is checking. Everything is found
//! by following links from the service root: member ids differ per vendor (`/Systems/1`,
//! `/Systems/System.Embedded.1`, `/Systems/<uuid>`), so none is ever hard-coded.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use lifeline_types::{Fingerprint, PowerAction, PowerState};

use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Chassis, ComputerSystem, LogEntries, LogService, Manager, SensorSet, ServiceRoot};
use crate::power::{ResetPlan, plan_reset};
use crate::quirks::{PlatformProfile, RuleSet};
use crate::session::{LoginError, Session, SessionGuard, SessionPool};
use crate::tls::{PinStore, SharedPinState, TlsTrust, client_config, lock};

/// Which BMC: a name for messages and pins (the inventory device name, or `host:port`) and its base URL
/// (`https://10.0.0.5`, `https://bmc:8443/redfish/v1`; any path is ignored).
#[derive(Debug, Clone)]
pub struct BmcTarget {
    pub name: String,
    pub url: String,
}

impl BmcTarget {
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        BmcTarget { name: name.into(), url: url.into() }
    }
}

#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl Credentials {
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Credentials { username: username.into(), password: password.into() }
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).field("password", &"***").finish()
    }
}

/// How to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Token sessions when the BMC has a SessionService (and no quirk says otherwise), else Basic.
    Auto,
    /// Always HTTP Basic.
    Basic,
}

/// What is actually in use after `connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthInUse {
    Session,
    Basic,
}

#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Per HTTP request, including the body (plus the platform's `slow=` quirk).
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Longest wait for a free request slot or session.
    pub queue_timeout: Duration,
    /// Requests in flight to this BMC at once.
    pub max_concurrent_requests: usize,
    /// Sessions this client may hold (a quirk may lower it).
    pub session_limit: usize,
    pub auth: AuthMode,
    pub rules: Arc<RuleSet>,
    /// For `power`: how often to poll, how long to wait for Off between the two halves of ForceOff+On.
    pub power_poll_interval: Duration,
    pub power_off_wait: Duration,
    /// Collection pages followed through `@odata.nextLink`.
    pub max_pages: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(5),
            queue_timeout: Duration::from_secs(60),
            max_concurrent_requests: 4,
            session_limit: 2,
            auth: AuthMode::Auto,
            rules: Arc::new(RuleSet::builtin()),
            power_poll_interval: Duration::from_millis(500),
            power_off_wait: Duration::from_secs(60),
            max_pages: 20,
        }
    }
}

/// HTTP plumbing shared by the client and the session pool.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub bmc: String,
    pub base: Url,
    pub http: reqwest::Client,
    pub pin: Option<SharedPinState>,
    pub timeout: Duration,
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl Transport {
    fn build(
        bmc: &str,
        base: &Url,
        tls: Option<rustls::ClientConfig>,
        opts: &ClientOptions,
    ) -> Result<reqwest::Client, RedfishError> {
        let origin = base.clone();
        // sushy redirects member names to UUID paths (307); follow only within the BMC, so tokens never leak.
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if same_origin(attempt.url(), &origin) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let b = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(opts.connect_timeout)
            .pool_max_idle_per_host(opts.max_concurrent_requests.max(1))
            .pool_idle_timeout(Duration::from_secs(30))
            .http1_only()
            .user_agent(concat!("lifeline-redfish/", env!("CARGO_PKG_VERSION")));
        let cfg = match tls {
            Some(cfg) => cfg,
            None => crate::tls::trust_nothing_config()
                .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })?,
        };
        b.tls_backend_preconfigured(cfg)
            .build()
            .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })
    }

    /// Resolve a link (path or absolute URL) against the BMC; refuse other hosts; drop `#fragments`
    /// (legacy Thermal members link to `Thermal#/Temperatures/0`).
    pub(crate) fn url(&self, link: &str) -> Result<Url, RedfishError> {
        let mut u = self.base.join(link).map_err(|e| RedfishError::Url {
            bmc: self.bmc.clone(),
            url: link.to_owned(),
            source: Box::new(e),
        })?;
        if !same_origin(&u, &self.base) {
            return Err(RedfishError::ForeignLink {
                bmc: self.bmc.clone(),
                base: self.base.to_string(),
                link: link.to_owned(),
            });
        }
        u.set_fragment(None);
        Ok(u)
    }

    /// Send, mapping transport failures: a refused pin becomes `CertificateChanged`.
    pub(crate) async fn send(
        &self,
        rb: reqwest::RequestBuilder,
        method: &'static str,
        url: &Url,
    ) -> Result<reqwest::Response, RedfishError> {
        // reqwest's own timeout covers the request; this outer one guarantees a bound even if it did not.
        let outer = self.timeout + Duration::from_secs(1);
        match tokio::time::timeout(outer, rb.send()).await {
            Err(_) => Err(RedfishError::Timeout {
                bmc: self.bmc.clone(),
                method,
                url: url.to_string(),
                after: outer,
            }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.map_err(e, method, url)),
        }
    }

    pub(crate) fn map_err(&self, e: reqwest::Error, method: &'static str, url: &Url) -> RedfishError {
        if let Some(pin) = &self.pin
            && let Some((pinned, presented)) = lock(pin).mismatch.take()
        {
            return RedfishError::CertificateChanged { bmc: self.bmc.clone(), pinned, presented };
        }
        if e.is_timeout() {
            return RedfishError::Timeout {
                bmc: self.bmc.clone(),
                method,
                url: url.to_string(),
                after: self.timeout,
            };
        }
        RedfishError::Http { bmc: self.bmc.clone(), method, url: url.to_string(), source: e }
    }
}

/// A Redfish error body's most useful message.
fn error_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    let ext = e
        .get("@Message.ExtendedInfo")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|i| i.get("Message"))
        .and_then(Value::as_str);
    ext.or_else(|| e.get("message").and_then(Value::as_str)).map(|s| s.chars().take(300).collect())
}

fn method_name(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        _ => "HTTP",
    }
}

struct Inner {
    t: Transport,
    creds: Credentials,
    opts: ClientOptions,
    root: ServiceRoot,
    /// The service root as read (or as handed to `connect_known`), for callers that cache it.
    root_doc: Arc<Value>,
    profile: PlatformProfile,
    slots: Arc<Semaphore>,
    sessions: Option<Arc<SessionPool>>,
    /// Session login turned out not to work (404/no token): Basic from now on.
    basic_fallback: AtomicBool,
    closed: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let Some(pool) = &self.sessions else { return };
        let left = pool.take_idle();
        if left.is_empty() {
            return;
        }
        // Best effort: `close().await` is the reliable path. Without a runtime the sessions time out on the BMC.
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                let t = self.t.clone();
                tracing::debug!(bmc = %t.bmc, n = left.len(), "client dropped without close(); logging out in background");
                h.spawn(async move {
                    for s in left {
                        if let Err(e) = crate::session::logout(&t, &s).await {
                            tracing::warn!(error = %e, "logout on drop failed");
                        }
                    }
                });
            }
            Err(_) => {
                tracing::warn!(bmc = %self.t.bmc, n = left.len(), "client dropped outside a runtime; sessions left to expire")
            }
        }
    }
}

/// A Redfish client for one BMC. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("bmc", &self.inner.t.bmc)
            .field("platform", &self.inner.profile.platform)
            .finish()
    }
}

/// A reply whose body has not been read yet, holding its request slot and session until then.
pub(crate) struct Reply {
    pub resp: reqwest::Response,
    pub url: Url,
    pub method: &'static str,
    pub guard: Option<SessionGuard>,
    pub _slot: Option<OwnedSemaphorePermit>,
}

/// A list read from a collection; members that could not be read are warnings, not failures.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub warnings: Vec<FieldWarning>,
}

/// Result of a power action: what was sent, and the state before and after.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PowerOutcome {
    pub action: PowerAction,
    /// `None` when nothing had to be sent (already in the requested state).
    pub plan: Option<ResetPlan>,
    pub before: PowerState,
    /// Read back right after the last request; a BMC may still be transitioning (confirming is the caller's).
    pub after: PowerState,
    pub warnings: Vec<FieldWarning>,
}

/// Outcome of `trust`: the pin that was replaced, and the new one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TrustOutcome {
    pub previous: Option<Fingerprint>,
    pub current: Fingerprint,
}

fn parse_base(target: &BmcTarget) -> Result<Url, RedfishError> {
    let mut u = Url::parse(&target.url).map_err(|e| RedfishError::Url {
        bmc: target.name.clone(),
        url: target.url.clone(),
        source: Box::new(e),
    })?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(RedfishError::Url {
            bmc: target.name.clone(),
            url: target.url.clone(),
            source: "expected http(s)://host[:port]".into(),
        });
    }
    u.set_path("/");
    u.set_query(None);
    u.set_fragment(None);
    Ok(u)
}

async fn tls_config(
    bmc: &str,
    trust: &TlsTrust,
    pinned: Option<Fingerprint>,
) -> Result<(rustls::ClientConfig, SharedPinState), RedfishError> {
    let trust2 = trust.clone();
    let r = tokio::task::spawn_blocking(move || client_config(&trust2, pinned))
        .await
        .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })?;
    r.map_err(|e| match (e, trust) {
        (crate::tls::TlsSetupError::Io(source, path), _) => {
            RedfishError::CaFile { bmc: bmc.to_owned(), path, source }
        }
        (crate::tls::TlsSetupError::Empty(path), _) => RedfishError::CaEmpty { bmc: bmc.to_owned(), path },
        (crate::tls::TlsSetupError::Rustls(source), _) => RedfishError::Build { bmc: bmc.to_owned(), source },
    })
}

impl Client {
    /// Connect: resolve the pin, fetch the service root (pinning the certificate on first use), classify the
    /// platform, choose authentication. No session is created until a request needs one.
    pub async fn connect(
        target: BmcTarget,
        creds: Credentials,
        trust: TlsTrust,
        opts: ClientOptions,
    ) -> Result<Client, RedfishError> {
        Self::connect_known(target, creds, trust, opts, None).await
    }

    /// Like [`Client::connect`], but with the service root document a previous client of the same BMC read
    /// ([`Client::service_root_document`]): no request is sent until the caller's first one, which saves a
    /// round trip per BMC in repeated fleet sweeps. The root is fetched anyway when there is no pin yet to
    /// enforce (trust on first use must see the certificate before anything else is sent).
    pub async fn connect_known(
        target: BmcTarget,
        creds: Credentials,
        trust: TlsTrust,
        opts: ClientOptions,
        known_root: Option<Arc<Value>>,
    ) -> Result<Client, RedfishError> {
        let bmc = target.name.clone();
        let base = parse_base(&target)?;
        let (tls, pin, pinned) = if base.scheme() == "https" {
            let pinned = match &trust {
                TlsTrust::Pin { store, explicit } => match explicit {
                    Some(p) => Some(*p),
                    None => store
                        .get_pin(&bmc)
                        .await
                        .map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?,
                },
                _ => None,
            };
            let (cfg, state) = tls_config(&bmc, &trust, pinned).await?;
            (Some(cfg), Some(state), pinned)
        } else {
            (None, None, None)
        };
        let http = Transport::build(&bmc, &base, tls, &opts)?;
        let t = Transport { bmc: bmc.clone(), base, http, pin, timeout: opts.request_timeout };

        let root_url = t.url("/redfish/v1/")?;
        let needs_first_use = matches!(trust, TlsTrust::Pin { .. }) && t.pin.is_some() && pinned.is_none();
        let root_doc = match known_root {
            Some(doc) if !needs_first_use => doc,
            _ => Arc::new(Self::fetch_root(&t, &creds, &trust, &root_url).await?),
        };
        Self::finish(t, creds, opts, root_doc, &root_url)
    }

    /// GET the service root (needs no auth by spec; some BMCs want it anyway) and store a first-use pin.
    async fn fetch_root(
        t: &Transport,
        creds: &Credentials,
        trust: &TlsTrust,
        root_url: &Url,
    ) -> Result<Value, RedfishError> {
        let bmc = &t.bmc;
        let mut resp = t.send(t.http.get(root_url.clone()).timeout(t.timeout), "GET", root_url).await?;
        if matches!(resp.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            let rb = t
                .http
                .get(root_url.clone())
                .timeout(t.timeout)
                .basic_auth(&creds.username, Some(&creds.password));
            resp = t.send(rb, "GET", root_url).await?;
        }
        let root_doc = read_json(t, resp, "GET", root_url).await?;

        if let (Some(state), TlsTrust::Pin { store, explicit: None }) = (&t.pin, trust) {
            let newly = lock(state).newly_pinned.take();
            if let Some(fp) = newly {
                tracing::info!(bmc = %bmc, fingerprint = %fp, "pinned TLS certificate on first use");
                store
                    .set_pin(bmc, fp)
                    .await
                    .map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
            }
        }
        Ok(root_doc)
    }

    fn finish(
        mut t: Transport,
        creds: Credentials,
        opts: ClientOptions,
        root_doc: Arc<Value>,
        root_url: &Url,
    ) -> Result<Client, RedfishError> {
        let bmc = t.bmc.clone();
        let root = ServiceRoot::from_value(&root_doc, root_url.path());
        let profile = opts.rules.profile(&root);
        t.timeout = opts.request_timeout + profile.extra_timeout();
        let sessions = if opts.auth == AuthMode::Basic || profile.no_session_service() {
            None
        } else {
            let login = root.sessions.clone().or_else(|| {
                root.session_service.as_ref().map(|s| format!("{}/Sessions", s.trim_end_matches('/')))
            });
            match login {
                Some(l) => {
                    let limit =
                        profile.session_limit().map_or(opts.session_limit, |q| q.min(opts.session_limit));
                    Some(SessionPool::new(t.url(&l)?, limit))
                }
                None => None,
            }
        };
        let slots = Arc::new(Semaphore::new(opts.max_concurrent_requests.max(1)));
        tracing::debug!(bmc = %bmc, platform = %profile.platform, quirks = ?profile.quirks, sessions = sessions.is_some(), "connected");
        Ok(Client {
            inner: Arc::new(Inner {
                t,
                creds,
                opts,
                root,
                root_doc,
                profile,
                slots,
                sessions,
                basic_fallback: AtomicBool::new(false),
                closed: AtomicBool::new(false),
            }),
        })
    }

    pub fn bmc(&self) -> &str {
        &self.inner.t.bmc
    }

    pub fn service_root(&self) -> &ServiceRoot {
        &self.inner.root
    }

    /// The service root document this client works from (to hand to a later [`Client::connect_known`]).
    pub fn service_root_document(&self) -> Arc<Value> {
        self.inner.root_doc.clone()
    }

    pub fn profile(&self) -> &PlatformProfile {
        &self.inner.profile
    }

    pub fn auth_in_use(&self) -> AuthInUse {
        if self.inner.sessions.is_some() && !self.inner.basic_fallback.load(Ordering::SeqCst) {
            AuthInUse::Session
        } else {
            AuthInUse::Basic
        }
    }

    /// Sessions this client currently holds on the BMC.
    pub fn sessions_held(&self) -> usize {
        self.inner.sessions.as_ref().map_or(0, |p| p.live())
    }

    /// Fingerprint and DER of the leaf certificate last presented (for audits of expiry, self-signature).
    pub fn peer_certificate(&self) -> Option<(Fingerprint, Vec<u8>)> {
        self.inner.t.pin.as_ref().and_then(|p| lock(p).last_seen.clone())
    }

    /// Send one request with auth, within the request-slot limit; re-login once on 401.
    pub(crate) async fn request(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
    ) -> Result<Reply, RedfishError> {
        self.request_inner(method, link, body, false).await
    }

    /// GET for a never-ending body (SSE): no total timeout (the caller applies an idle limit), and the request
    /// slot is released once headers arrive; the session stays lent to the stream.
    pub(crate) async fn request_stream(&self, link: &str) -> Result<Reply, RedfishError> {
        let mut r = self.request_inner(Method::GET, link, None, true).await?;
        r._slot = None;
        Ok(r)
    }

    async fn request_inner(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
        stream: bool,
    ) -> Result<Reply, RedfishError> {
        let inner = &self.inner;
        let t = &inner.t;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(RedfishError::Closed { bmc: t.bmc.clone() });
        }
        let url = t.url(link)?;
        let mname = method_name(&method);
        let slot =
            match tokio::time::timeout(inner.opts.queue_timeout, inner.slots.clone().acquire_owned()).await {
                Ok(Ok(p)) => p,
                Ok(Err(_)) => return Err(RedfishError::Closed { bmc: t.bmc.clone() }),
                Err(_) => {
                    return Err(RedfishError::Busy {
                        bmc: t.bmc.clone(),
                        limit: inner.opts.max_concurrent_requests,
                        after: inner.opts.queue_timeout,
                    });
                }
            };
        for attempt in 0..2 {
            let mut guard = self.session().await?;
            let mut rb = t.http.request(method.clone(), url.clone());
            rb = if stream { rb.header("Accept", "text/event-stream") } else { rb.timeout(t.timeout) };
            rb = match &guard {
                Some(g) => rb.header("X-Auth-Token", g.token()),
                None => rb.basic_auth(&inner.creds.username, Some(&inner.creds.password)),
            };
            if let Some(b) = body {
                rb = rb.json(b);
            }
            let resp = t.send(rb, mname, &url).await?;
            if resp.status() == StatusCode::UNAUTHORIZED
                && attempt == 0
                && let Some(g) = guard.take()
            {
                tracing::info!(bmc = %t.bmc, url = %url, "session rejected (401); logging in again");
                g.invalidate();
                continue;
            }
            return Ok(Reply { resp, url, method: mname, guard, _slot: Some(slot) });
        }
        unreachable!("the loop returns on its second attempt")
    }

    async fn session(&self) -> Result<Option<SessionGuard>, RedfishError> {
        let inner = &self.inner;
        let Some(pool) = &inner.sessions else { return Ok(None) };
        if inner.basic_fallback.load(Ordering::SeqCst) {
            return Ok(None);
        }
        match pool.checkout(&inner.t, &inner.creds, inner.opts.queue_timeout).await {
            Ok(g) => Ok(Some(g)),
            Err(LoginError::Unsupported(e)) => {
                tracing::warn!(bmc = %inner.t.bmc, error = %e, "session login unsupported; using HTTP Basic");
                inner.basic_fallback.store(true, Ordering::SeqCst);
                Ok(None)
            }
            Err(LoginError::Refused(e) | LoginError::Fatal(e)) => Err(e),
        }
    }

    /// GET a document as JSON, with the platform's repairs applied. Repairs are returned as notes.
    pub async fn get_json(&self, link: &str) -> Result<(Value, Vec<FieldWarning>), RedfishError> {
        let reply = self.request(Method::GET, link, None).await?;
        let url = reply.url.clone();
        let mut v = read_reply(&self.inner.t, reply).await?;
        let notes = self.inner.profile.repair(&mut v, url.path());
        Ok((v, notes))
    }

    /// POST/PATCH/DELETE with an optional JSON body; returns the reply document if there is one.
    pub async fn send_json(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>, RedfishError> {
        let reply = self.request(method, link, body).await?;
        let t = &self.inner.t;
        let status = reply.resp.status();
        let (url, m) = (reply.url.clone(), reply.method);
        let bytes = body_bytes(t, reply).await?;
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: t.bmc.clone(),
                method: m,
                url: url.to_string(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        Ok(serde_json::from_slice(&bytes).ok())
    }

    /// Members of a collection, following `nextLink` pages; embedded members are used as they are, bare links
    /// fetched. A page or member that fails becomes a warning.
    pub async fn members(&self, link: &str) -> Result<Listing<(String, Value)>, RedfishError> {
        self.members_limited(link, usize::MAX).await.map(|(l, _)| l)
    }

    /// Like `members`, reading at most `max` members (no further pages, no further fetches); the flag says
    /// whether more existed.
    pub(crate) async fn members_limited(
        &self,
        link: &str,
        max: usize,
    ) -> Result<(Listing<(String, Value)>, bool), RedfishError> {
        let mut warnings = Vec::new();
        let (doc, notes) = self.get_json(link).await?;
        warnings.extend(notes);
        let (mut members, mut next) = model::collection_members(&doc, link, &mut warnings);
        let mut pages = 1;
        let mut unread_pages = false;
        while let Some(n) = next.take() {
            if members.len() >= max {
                unread_pages = true;
                break;
            }
            if pages >= self.inner.opts.max_pages {
                warnings.push(FieldWarning {
                    at: link.to_owned(),
                    problem: format!("stopped after {pages} pages"),
                });
                break;
            }
            match self.get_json(&n).await {
                Ok((d, notes)) => {
                    warnings.extend(notes);
                    let (m, nx) = model::collection_members(&d, &n, &mut warnings);
                    members.extend(m);
                    next = nx;
                    pages += 1;
                }
                Err(e) => warnings
                    .push(FieldWarning { at: n.clone(), problem: format!("next page unreadable: {e}") }),
            }
        }
        let more = members.len() > max || unread_pages || warnings.iter().any(|w| w.problem.contains("page"));
        members.truncate(max);
        let fetches = members.into_iter().enumerate().map(|(i, m)| async move {
            let id = m.get("@odata.id").and_then(Value::as_str).map(str::to_owned);
            let embedded = m.as_object().is_some_and(|o| o.keys().any(|k| !k.starts_with('@')));
            match (id, embedded) {
                (Some(id), false) => {
                    self.get_json(&id).await.map(|(v, n)| (id.clone(), v, n)).map_err(|e| (id, e.to_string()))
                }
                (id, true) => {
                    let id = id.unwrap_or_else(|| format!("{link}#/Members/{i}"));
                    let mut v = m;
                    let notes = self.inner.profile.repair(&mut v, &id);
                    Ok((id, v, notes))
                }
                (None, false) => Err((format!("{link}#/Members/{i}"), "member is not a link".to_owned())),
            }
        });
        let mut items = Vec::new();
        for r in futures::future::join_all(fetches).await {
            match r {
                Ok((id, v, notes)) => {
                    warnings.extend(notes);
                    items.push((id, v));
                }
                Err((at, problem)) => warnings.push(FieldWarning { at, problem }),
            }
        }
        Ok((Listing { items, warnings }, more))
    }

    fn root_link(&self, link: &Option<String>, what: &'static str) -> Result<String, RedfishError> {
        link.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what,
        })
    }

    pub async fn systems(&self) -> Result<Listing<ComputerSystem>, RedfishError> {
        let link = self.root_link(&self.inner.root.systems, "Systems link")?;
        self.typed(&link, ComputerSystem::from_value, |s| &mut s.warnings).await
    }

    pub async fn system(&self, link: &str) -> Result<ComputerSystem, RedfishError> {
        let (v, notes) = self.get_json(link).await?;
        let mut s = ComputerSystem::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(s)
    }

    pub async fn chassis(&self) -> Result<Listing<Chassis>, RedfishError> {
        let link = self.root_link(&self.inner.root.chassis, "Chassis link")?;
        self.typed(&link, Chassis::from_value, |c| &mut c.warnings).await
    }

    pub async fn managers(&self) -> Result<Listing<Manager>, RedfishError> {
        let link = self.root_link(&self.inner.root.managers, "Managers link")?;
        self.typed(&link, Manager::from_value, |m| &mut m.warnings).await
    }

    async fn typed<T>(
        &self,
        link: &str,
        parse: fn(&Value, &str) -> T,
        warnings_of: fn(&mut T) -> &mut Vec<FieldWarning>,
    ) -> Result<Listing<T>, RedfishError> {
        let l = self.members(link).await?;
        let mut warnings = l.warnings;
        let items = l
            .items
            .into_iter()
            .map(|(id, v)| {
                let mut t = parse(&v, &id);
                warnings.append(warnings_of(&mut t));
                t
            })
            .collect();
        Ok(Listing { items, warnings })
    }

    /// Current power state, read fresh.
    pub async fn power_state(&self, system: &ComputerSystem) -> Result<PowerState, RedfishError> {
        let s = self.system(&system.odata_id).await?;
        Ok(s.power_state.unwrap_or(PowerState::Unknown))
    }

    /// Reset types the BMC allows: AllowableValues, else the ActionInfo document, else `None` (unknown).
    pub async fn reset_types(
        &self,
        system: &ComputerSystem,
    ) -> Result<(Option<Vec<String>>, Vec<FieldWarning>), RedfishError> {
        let mut warnings = Vec::new();
        let Some(reset) = &system.reset else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: system.odata_id.clone(),
                what: "#ComputerSystem.Reset action",
            });
        };
        if let Some(a) = &reset.allowable {
            return Ok((Some(a.clone()), warnings));
        }
        if let Some(info) = &reset.action_info {
            match self.get_json(info).await {
                Ok((v, notes)) => {
                    warnings.extend(notes);
                    let types = model::action_info_reset_types(&v, info, &mut warnings);
                    return Ok((types, warnings));
                }
                Err(e) => warnings
                    .push(FieldWarning { at: info.clone(), problem: format!("ActionInfo unreadable: {e}") }),
            }
        }
        warnings.push(FieldWarning {
            at: format!("{}/Actions/#ComputerSystem.Reset", system.odata_id),
            problem: "no AllowableValues; assuming the DMTF base reset types".into(),
        });
        Ok((None, warnings))
    }

    /// POST one reset. A reply lost after the request may have been sent is `ActionOutcomeUnknown` and is
    /// never resent here: the caller must read the power state first.
    pub async fn reset(&self, system: &ComputerSystem, reset_type: &str) -> Result<(), RedfishError> {
        let target =
            system.reset.as_ref().map(|r| r.target.clone()).ok_or_else(|| RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: system.odata_id.clone(),
                what: "#ComputerSystem.Reset action",
            })?;
        let body = serde_json::json!({ "ResetType": reset_type });
        match self.send_json(Method::POST, &target, Some(&body)).await {
            Ok(_) => Ok(()),
            Err(e @ (RedfishError::Timeout { .. } | RedfishError::Http { .. })) if !is_connect(&e) => {
                Err(RedfishError::ActionOutcomeUnknown {
                    bmc: self.bmc().to_owned(),
                    url: target,
                    reset_type: reset_type.to_owned(),
                    source: Box::new(e),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Perform a power action: read the state, choose reset type(s) from what the BMC allows minus quirks,
    /// send, read the state back. Already in the requested state: nothing is sent. `cycle`/`reset` of a
    /// host that is off powers it on.
    pub async fn power(
        &self,
        system: &ComputerSystem,
        action: PowerAction,
    ) -> Result<PowerOutcome, RedfishError> {
        let before = self.power_state(system).await?;
        let effective = match (action, before) {
            (PowerAction::On, PowerState::On) | (PowerAction::Off | PowerAction::Soft, PowerState::Off) => {
                return Ok(PowerOutcome { action, plan: None, before, after: before, warnings: Vec::new() });
            }
            (PowerAction::Cycle | PowerAction::Reset, PowerState::Off) => PowerAction::On,
            _ => action,
        };
        let (allowed, warnings) = self.reset_types(system).await?;
        let unsupported = self.inner.profile.unsupported_reset_types();
        let plan = plan_reset(effective, allowed.as_deref(), &unsupported).ok_or_else(|| {
            RedfishError::NoResetType {
                bmc: self.bmc().to_owned(),
                action,
                allowed: allowed.clone().unwrap_or_default(),
                unsupported: unsupported.clone(),
            }
        })?;
        match &plan {
            ResetPlan::Single(t) => self.reset(system, t).await?,
            ResetPlan::OffThenOn { off, on } => {
                self.reset(system, off).await?;
                self.wait_for(system, PowerState::Off, self.inner.opts.power_off_wait).await?;
                self.reset(system, on).await?;
            }
        }
        let after = self.power_state(system).await?;
        Ok(PowerOutcome { action, plan: Some(plan), before, after, warnings })
    }

    /// Poll until the system reports `wanted` or `limit` passes.
    pub async fn wait_for(
        &self,
        system: &ComputerSystem,
        wanted: PowerState,
        limit: Duration,
    ) -> Result<(), RedfishError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let last = self.power_state(system).await?;
            if last == wanted {
                return Ok(());
            }
            if tokio::time::Instant::now() + self.inner.opts.power_poll_interval > deadline {
                return Err(RedfishError::PowerWait {
                    bmc: self.bmc().to_owned(),
                    wanted,
                    last,
                    after: limit,
                });
            }
            tokio::time::sleep(self.inner.opts.power_poll_interval).await;
        }
    }

    /// Sensors of a chassis: the `Sensors` collection when present, else legacy `Thermal` + `Power`.
    ///
    /// With a `Sensors` collection, the power supplies' status is still read from legacy `Power` (at the same
    /// time): many BMCs list PSU input power as a sensor but report a failed supply only in
    /// `Power.PowerSupplies[].Status`, and a sweep that missed a dead PSU would be lying.
    pub async fn sensors(&self, chassis: &Chassis) -> Result<SensorSet, RedfishError> {
        let mut set = SensorSet::default();
        if let Some(link) = &chassis.sensors {
            let psu = async {
                match &chassis.power {
                    Some(p) => Some((p.clone(), self.get_json(p).await)),
                    None => None,
                }
            };
            let (l, psu) = tokio::join!(self.members(link), psu);
            let l = l?;
            set.warnings = l.warnings;
            for (id, v) in l.items {
                set.readings.push(model::sensor_from_value(&v, &id, &mut set.warnings));
            }
            match psu {
                Some((p, Ok((v, notes)))) => {
                    set.warnings.extend(notes);
                    let legacy = model::power_from_value(&v, &p, &mut set.warnings);
                    for r in legacy.into_iter().filter(|r| r.kind.as_deref() == Some("PowerSupply")) {
                        if !set.readings.iter().any(|s| s.name.is_some() && s.name == r.name) {
                            set.readings.push(r);
                        }
                    }
                }
                Some((p, Err(e))) => set
                    .warnings
                    .push(FieldWarning { at: p, problem: format!("power supplies unreadable: {e}") }),
                None => {}
            }
            return Ok(set);
        }
        if chassis.thermal.is_none() && chassis.power.is_none() {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: chassis.odata_id.clone(),
                what: "Sensors, Thermal or Power link",
            });
        }
        for (link, parse) in [
            (
                &chassis.thermal,
                model::thermal_from_value
                    as fn(&Value, &str, &mut Vec<FieldWarning>) -> Vec<model::SensorReading>,
            ),
            (&chassis.power, model::power_from_value),
        ] {
            let Some(link) = link else { continue };
            match self.get_json(link).await {
                Ok((v, notes)) => {
                    set.warnings.extend(notes);
                    let r = parse(&v, link, &mut set.warnings);
                    set.readings.extend(r);
                }
                Err(e) => {
                    set.warnings.push(FieldWarning { at: link.clone(), problem: format!("unreadable: {e}") })
                }
            }
        }
        Ok(set)
    }

    /// Log services behind a `LogServices` collection link (of a Manager, System or Chassis).
    pub async fn log_services(&self, link: &str) -> Result<Listing<LogService>, RedfishError> {
        self.typed(link, LogService::from_value, |l| &mut l.warnings).await
    }

    /// Entries of a log, at most `max` (newest-first order is the BMC's; many serve oldest first).
    pub async fn log_entries(&self, log: &LogService, max: usize) -> Result<LogEntries, RedfishError> {
        let Some(link) = &log.entries else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: log.odata_id.clone(),
                what: "Entries link",
            });
        };
        let (l, more) = self.members_limited(link, max).await?;
        let mut out = LogEntries {
            log: log.odata_id.clone(),
            warnings: l.warnings,
            truncated: more,
            ..Default::default()
        };
        for (id, v) in l.items {
            out.entries.push(model::log_entry_from_value(&v, &id, &mut out.warnings));
        }
        Ok(out)
    }

    /// Every SEL-like log on the BMC (Managers first, then Systems), with up to `max` entries each. A log is
    /// SEL-like by its type or name; when no log on the BMC is, logs whose entries are `EntryType: SEL` are
    /// used (the DMTF mockup names its SEL "Log1").
    pub async fn sel(&self, max: usize) -> Result<Listing<LogEntries>, RedfishError> {
        let mut out = Listing::default();
        let mut holders: Vec<String> = Vec::new();
        if self.inner.root.managers.is_some() {
            let m = self.managers().await?;
            out.warnings.extend(m.warnings);
            holders.extend(m.items.into_iter().filter_map(|m| m.log_services));
        }
        if self.inner.root.systems.is_some() {
            let s = self.systems().await?;
            out.warnings.extend(s.warnings);
            holders.extend(s.items.into_iter().filter_map(|s| s.log_services));
        }
        let mut all = Vec::new();
        for h in holders {
            match self.log_services(&h).await {
                Ok(l) => {
                    out.warnings.extend(l.warnings);
                    all.extend(l.items);
                }
                Err(e) => {
                    out.warnings.push(FieldWarning { at: h.clone(), problem: format!("unreadable: {e}") })
                }
            }
        }
        let named: Vec<&LogService> = all.iter().filter(|l| l.is_sel()).collect();
        let by_name = !named.is_empty();
        let candidates = if by_name { named } else { all.iter().collect() };
        for log in candidates {
            match self.log_entries(log, max).await {
                Ok(e) if by_name || e.entries.iter().any(|x| x.entry_type.as_deref() == Some("SEL")) => {
                    out.items.push(e)
                }
                Ok(_) => {}
                Err(e) => out
                    .warnings
                    .push(FieldWarning { at: log.odata_id.clone(), problem: format!("unreadable: {e}") }),
            }
        }
        Ok(out)
    }

    pub async fn clear_log(&self, log: &LogService) -> Result<(), RedfishError> {
        let target = log.clear_target.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: log.odata_id.clone(),
            what: "#LogService.ClearLog action",
        })?;
        self.send_json(Method::POST, &target, Some(&serde_json::json!({}))).await.map(|_| ())
    }

    pub async fn session_service(&self) -> Result<Option<model::SessionService>, RedfishError> {
        let Some(link) = &self.inner.root.session_service else { return Ok(None) };
        let (v, notes) = self.get_json(link).await?;
        let mut s = model::SessionService::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(Some(s))
    }

    pub async fn event_service(&self) -> Result<Option<model::EventService>, RedfishError> {
        let Some(link) = &self.inner.root.event_service else { return Ok(None) };
        let (v, notes) = self.get_json(link).await?;
        let mut s = model::EventService::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(Some(s))
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.inner.t
    }

    /// Log out every session (DELETE) and refuse further requests. Waits up to the queue timeout for
    /// requests in flight. Returns the number of sessions deleted, or the first logout error after trying all.
    pub async fn close(&self) -> Result<usize, RedfishError> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(0);
        }
        let Some(pool) = &inner.sessions else { return Ok(0) };
        let sessions: Vec<Session> = pool.drain(inner.opts.queue_timeout).await;
        let mut first_err = None;
        let mut deleted = 0;
        for s in &sessions {
            match crate::session::logout(&inner.t, s).await {
                Ok(()) => deleted += 1,
                Err(e) => {
                    tracing::warn!(error = %e, "logout failed");
                    first_err.get_or_insert(e);
                }
            }
        }
        inner.slots.close();
        match first_err {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }
}

fn is_connect(e: &RedfishError) -> bool {
    matches!(e, RedfishError::Http { source, .. } if source.is_connect())
}

async fn body_bytes(t: &Transport, reply: Reply) -> Result<bytes::Bytes, RedfishError> {
    let Reply { resp, url, method, guard, _slot } = reply;
    let r = match tokio::time::timeout(t.timeout, resp.bytes()).await {
        Err(_) => {
            Err(RedfishError::Timeout { bmc: t.bmc.clone(), method, url: url.to_string(), after: t.timeout })
        }
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => Err(t.map_err(e, method, &url)),
    };
    drop(guard);
    r
}

async fn read_reply(t: &Transport, reply: Reply) -> Result<Value, RedfishError> {
    let status = reply.resp.status();
    let (url, method) = (reply.url.clone(), reply.method);
    let bytes = body_bytes(t, reply).await?;
    parse_json(t, status, &bytes, method, &url)
}

async fn read_json(
    t: &Transport,
    resp: reqwest::Response,
    method: &'static str,
    url: &Url,
) -> Result<Value, RedfishError> {
    let status = resp.status();
    let bytes = match tokio::time::timeout(t.timeout, resp.bytes()).await {
        Err(_) => {
            return Err(RedfishError::Timeout {
                bmc: t.bmc.clone(),
                method,
                url: url.to_string(),
                after: t.timeout,
            });
        }
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return Err(t.map_err(e, method, url)),
    };
    parse_json(t, status, &bytes, method, url)
}

fn parse_json(
    t: &Transport,
    status: StatusCode,
    bytes: &[u8],
    method: &'static str,
    url: &Url,
) -> Result<Value, RedfishError> {
    if !status.is_success() {
        return Err(RedfishError::Status {
            bmc: t.bmc.clone(),
            method,
            url: url.to_string(),
            status: status.as_u16(),
            message: error_message(bytes),
        });
    }
    serde_json::from_slice(bytes).map_err(|source| RedfishError::Json {
        bmc: t.bmc.clone(),
        url: url.to_string(),
        source,
    })
}

/// Re-pin a BMC after an intended certificate replacement (`lifeline bmc trust`): connect accepting whatever
/// certificate is presented (the handshake signature is still checked), then store its fingerprint. If the
/// inventory pins a different certificate, nothing is stored: the inventory wins and must be edited.
pub async fn trust(
    target: &BmcTarget,
    store: &dyn PinStore,
    inventory_pin: Option<Fingerprint>,
    opts: &ClientOptions,
) -> Result<TrustOutcome, RedfishError> {
    let bmc = target.name.clone();
    let presented = probe_certificate(target, opts).await?.0;
    if let Some(inv) = inventory_pin
        && inv != presented
    {
        return Err(RedfishError::InventoryPinMismatch { bmc, inventory: inv, presented });
    }
    let previous =
        store.get_pin(&bmc).await.map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
    store
        .set_pin(&bmc, presented)
        .await
        .map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
    tracing::info!(bmc = %bmc, previous = ?previous, current = %presented, "re-pinned TLS certificate");
    Ok(TrustOutcome { previous, current: presented })
}

/// Fingerprint and DER of the certificate a BMC presents now (no pin enforced, nothing stored).
pub async fn probe_certificate(
    target: &BmcTarget,
    opts: &ClientOptions,
) -> Result<(Fingerprint, Vec<u8>), RedfishError> {
    let bmc = target.name.clone();
    let base = parse_base(target)?;
    if base.scheme() != "https" {
        return Err(RedfishError::NoCertificate { bmc, url: base.to_string() });
    }
    let store: Arc<dyn PinStore> = Arc::new(crate::tls::MemoryPinStore::new());
    let (cfg, state) = tls_config(&bmc, &TlsTrust::Pin { store, explicit: None }, None).await?;
    let http = Transport::build(&bmc, &base, Some(cfg), opts)?;
    let t =
        Transport { bmc: bmc.clone(), base, http, pin: Some(state.clone()), timeout: opts.request_timeout };
    let url = t.url("/redfish/v1/")?;
    // Any HTTP status will do: the handshake completed, so the signature matched the presented key.
    let _ = t.send(t.http.get(url.clone()).timeout(t.timeout), "GET", &url).await?;
    let seen = lock(&state).last_seen.clone();
    seen.ok_or(RedfishError::NoCertificate { bmc, url: url.to_string() })
}
