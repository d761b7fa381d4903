//! The Redfish client for one BMC: connection, authentication, navigation by links, timeouts, limits.
//!
//! Why one `Client` per BMC: pins, sessions, quirks and the concurrency limit are all per BMC, and a
//! reqwest client per BMC lets the TLS verifier know whose certificate it is checking. Everything is found
//! by following links from the service root: member ids differ per vendor (`/Systems/1`,
//! `/Systems/System.Embedded.1`, `/Systems/<uuid>`), so none is ever hard-coded.

//!
//! Submodules by concern: `transport` (HTTP, URLs, errors), `request` (auth and one request), `nav`
//! (collections and links), `power`, `sensors`, `logs`, `trust` (certificate re-pinning and probing).

pub(crate) mod accounts;
mod bios;
mod components;
mod connected;
mod early;
mod held;
mod lognav;
mod logs;
mod manage;
mod memo;
mod nav;
pub(crate) mod paging;
mod power;
mod probe;
mod request;
mod sensors;
pub mod since;
mod transport;
mod trust;
mod update;
mod vmedia;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde_json::Value;
use tokio::sync::Semaphore;

use lifeline_types::{Fingerprint, PowerAction, PowerState};

use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::ServiceRoot;
use crate::power::ResetPlan;
use crate::prelogin::Speculative;
use crate::quirks::{PlatformProfile, RuleSet};
use crate::session::{LoginError, Session, SessionPool};
use crate::tls::{TlsTrust, lock};

pub use components::ServiceConditions;
pub use early::FIRST_CONTACT_READS;
pub use held::HeldSession;
pub use logs::EventLogs;
pub use probe::{Probe, probe_service_root};
#[cfg(fuzzing)]
pub use transport::resolve_link;
pub(crate) use transport::{Reply, Transport};
use transport::{parse_base, read_json, tls_config};
pub use trust::{presented_certificate, probe_certificate, trust};
pub use update::{TaskPoll, UpdateAccepted};
pub use vmedia::MediaCollection;

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
    /// Requests in flight to this BMC at once (they share one session token; with HTTP/1.1 each is a
    /// keep-alive connection, with HTTP/2 a stream of one connection). 6 by default: what every browser
    /// opens to one host, so a BMC's web server (whose UI is a browser page) is built for it; and what a
    /// first-contact health read needs in its widest round trip (bmcweb without `$expand`: two event logs
    /// with their entries and the chassis at once), where 4 made that BMC's visit a round trip longer.
    pub max_concurrent_requests: usize,
    pub auth: AuthMode,
    pub rules: Arc<RuleSet>,
    /// For `power`: how often to poll, how long to wait for Off between the two halves of ForceOff+On.
    pub power_poll_interval: Duration,
    pub power_off_wait: Duration,
    /// Collection pages followed through `@odata.nextLink`.
    pub max_pages: usize,
    /// Offer HTTP/2 by ALPN (the BMC decides; HTTP/1.1 otherwise). `false`: HTTP/1.1 only, for a BMC whose
    /// HTTP/2 misbehaves.
    pub http2: bool,
    /// TLS sessions kept across the clients built from these options (clones share it), so the next
    /// client of a BMC resumes instead of a full handshake (`crate::resume`).
    pub resumption: crate::resume::ResumptionCache,
    /// On first contact (the root is read), send the session login at the same time, to the URI the spec
    /// fixes (`crate::prelogin`): one round trip less. `false` for a probe that logs in to nothing.
    pub speculative_login: bool,
    /// On first contact, also read these spec-fixed collections with HTTP Basic in the root's round trip
    /// (`early`): one round trip less for a visit that starts from them. Empty: none. Default:
    /// [`FIRST_CONTACT_READS`].
    pub first_contact_reads: &'static [&'static str],
    /// Called when the BMC refuses a login at its session limit: deletes sessions of the caller's own that
    /// no live process uses there any more, and the login is tried once more when it deleted any.
    pub free_stale_sessions: Option<StaleSessionFreer>,
    /// Told of each session this client opens (before any request carries its token) and of each it
    /// deletes, so that a process killed while it holds one leaves it findable (see [`SessionRecord`]).
    pub record_sessions: Option<SessionRecorder>,
}

/// Where a caller writes down the sessions its clients open while they live: a process killed with one
/// open (kill -9, a crash) cannot delete it, and a later process finds it there and frees the BMC's slot
/// ([`StaleSessionFreer`]). A record that fails is the implementation's to log: it never fails a request.
#[async_trait::async_trait]
pub trait SessionRecord: Send + Sync {
    /// `bmc`'s session at `uri`, authenticated by `token`, is open (called before the token is used).
    async fn opened(&self, bmc: &str, uri: &str, token: &str);
    /// `bmc`'s session at `uri` was deleted: strike it off.
    async fn closed(&self, bmc: &str, uri: &str);
}

/// A shared [`SessionRecord`].
#[derive(Clone)]
pub struct SessionRecorder(pub Arc<dyn SessionRecord>);

impl std::fmt::Debug for SessionRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionRecorder")
    }
}

/// Deletes the caller's own stale sessions on a BMC (its name is the argument) and returns how many it
/// deleted: a process killed while it kept a session there left it, and a BMC with 8 slots (an iDRAC) fills.
#[derive(Clone)]
pub struct StaleSessionFreer(
    pub Arc<dyn Fn(String) -> futures::future::BoxFuture<'static, usize> + Send + Sync>,
);

impl std::fmt::Debug for StaleSessionFreer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaleSessionFreer")
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(15),
            connect_timeout: Duration::from_secs(5),
            queue_timeout: Duration::from_secs(60),
            max_concurrent_requests: 6,
            auth: AuthMode::Auto,
            rules: Arc::new(RuleSet::builtin()),
            power_poll_interval: Duration::from_millis(500),
            power_off_wait: Duration::from_secs(60),
            max_pages: 20,
            http2: true,
            resumption: crate::resume::ResumptionCache::default(),
            speculative_login: true,
            first_contact_reads: FIRST_CONTACT_READS,
            free_stale_sessions: None,
            record_sessions: None,
        }
    }
}

impl ClientOptions {
    /// These options for one credential check (an audit's guessed default, a rotation's login test): HTTP
    /// Basic, and no request with the password but the caller's own, neither the early login nor the
    /// first-contact reads. A BMC counts each refused request toward locking the account, and the caller's
    /// guard counts checks: two requests per check locked `admin` out before the guard's limit.
    pub fn credential_check(self) -> ClientOptions {
        ClientOptions { auth: AuthMode::Basic, speculative_login: false, first_contact_reads: &[], ..self }
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
    /// The first-contact reads (`early`), when this client made the first contact.
    early: Option<early::EarlyReads>,
    /// Held by the request that goes out while no connection is up yet (`request::Client::opening`).
    opening: tokio::sync::Mutex<()>,
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
                let record = self.opts.record_sessions.clone();
                tracing::debug!(bmc = %t.bmc, n = left.len(), "client dropped without close(); logging out in background");
                h.spawn(async move {
                    for s in left {
                        match crate::session::logout(&t, &s).await {
                            Ok(()) => record_closed(record.as_ref(), &t.bmc, &s).await,
                            Err(e) => tracing::warn!(error = %e, "logout on drop failed"),
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

/// Strikes a deleted session off the caller's record (see [`SessionRecord`]).
async fn record_closed(record: Option<&SessionRecorder>, bmc: &str, s: &Session) {
    if let (Some(r), Some(uri)) = (record, &s.uri) {
        r.0.closed(bmc, uri.as_str()).await;
    }
}

/// A Redfish client for one BMC. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
    /// GETs shared by the users of this view (`memo`); `None`: every GET goes to the BMC.
    memo: Option<Arc<memo::ReadMemo>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("bmc", &self.inner.t.bmc)
            .field("platform", &self.inner.profile.platform)
            .finish()
    }
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
        let (t, pinned) = Self::build_transport(&target, &trust, &opts).await?;

        let root_url = t.url("/redfish/v1/")?;
        let needs_first_use = matches!(trust, TlsTrust::Pin { .. }) && t.pin.is_some() && pinned.is_none();
        let (root_doc, early, reads) = match known_root {
            Some(doc) if !needs_first_use => (doc, None, None),
            _ => {
                // The login goes out with the root GET (`crate::prelogin`); dropped here on cancellation,
                // which deletes the session it makes.
                let early = if opts.auth == AuthMode::Auto && opts.speculative_login {
                    Some(Speculative::start(&t, &creds)?)
                } else {
                    None
                };
                // So do the first-contact reads (`early`): aborted when dropped, and Basic leaves nothing.
                let reads = (!opts.first_contact_reads.is_empty())
                    .then(|| early::EarlyReads::start(&t, &creds, opts.first_contact_reads));
                match Self::fetch_root(&t, &creds, &trust, &root_url).await {
                    Ok(doc) => (Arc::new(doc), early, reads),
                    Err(e) => {
                        if let Some(s) = early {
                            s.discard().await;
                        }
                        return Err(e);
                    }
                }
            }
        };
        let client = match Self::finish(t, creds, opts, root_doc, &root_url, reads) {
            Ok(c) => c,
            Err(e) => {
                if let Some(s) = early {
                    s.discard().await;
                }
                return Err(e);
            }
        };
        if let Some(s) = early {
            client.adopt_speculative(s).await;
        }
        Ok(client)
    }

    /// The HTTP transport to `target` (TLS with its pin, resumption, HTTP/2 by ALPN) and the pin the store
    /// held before (`None`: trust on first use still to happen). Sends nothing.
    pub(crate) async fn build_transport(
        target: &BmcTarget,
        trust: &TlsTrust,
        opts: &ClientOptions,
    ) -> Result<(Transport, Option<Fingerprint>), RedfishError> {
        let bmc = target.name.clone();
        let base = parse_base(target)?;
        let (tls, pin, pinned) = if base.scheme() == "https" {
            let pinned = match trust {
                TlsTrust::Pin { store, explicit } => match explicit {
                    Some(p) => Some(*p),
                    None => store
                        .get_pin(&bmc)
                        .await
                        .map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?,
                },
                _ => None,
            };
            let resume = crate::tls::Resume::Shared {
                cache: opts.resumption.clone(),
                bmc: bmc.clone(),
                base: base.to_string(),
            };
            let (cfg, state) = tls_config(&bmc, trust, pinned, resume).await?;
            (Some(cfg), Some(state), pinned)
        } else {
            (None, None, None)
        };
        let up = connected::Connected::new();
        let http = Transport::build(&bmc, &base, tls, opts, &up)?;
        let t = Transport { bmc, base, http, pin, timeout: opts.request_timeout, connected: up.subscribe() };
        Ok((t, pinned))
    }

    /// Uses the speculative login's outcome: its session becomes the pool's (whatever URI made it, a token
    /// is valid BMC-wide); its failure at the pool's own URL is the first login's answer; anything else is
    /// given up (deleted), and the pool logs in lazily where the root says.
    async fn adopt_speculative(&self, s: Speculative) {
        let Some(pool) = &self.inner.sessions else {
            s.discard().await;
            return;
        };
        let same_url = *pool.login_url() == s.url;
        match s.outcome().await {
            Some(Ok(session)) => {
                pool.record_opened(&self.inner.t.bmc, &session).await;
                pool.adopt(session)
            }
            // An answer from the BMC (not a broken connection, which a second try may not meet).
            Some(Err(
                e @ (LoginError::Unsupported(_)
                | LoginError::Refused(_)
                | LoginError::Fatal(RedfishError::Login { .. })),
            )) if same_url => pool.set_first_failure(e),
            Some(Err(_)) | None => {
                tracing::debug!(bmc = %self.bmc(), login = %pool.login_url(), "speculative login failed; logging in where the root says")
            }
        }
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
        early: Option<early::EarlyReads>,
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
                Some(l) => Some(SessionPool::new(t.url(&l)?, opts.record_sessions.clone())),
                None => None,
            }
        };
        let slots = Arc::new(Semaphore::new(opts.max_concurrent_requests.max(1)));
        tracing::debug!(bmc = %bmc, platform = %profile.platform, quirks = ?profile.quirks, sessions = sessions.is_some(), "connected");
        Ok(Client {
            memo: None,
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
                early,
                opening: tokio::sync::Mutex::new(()),
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

    /// Sessions this client currently holds on the BMC (0 or 1: concurrent requests share one token).
    pub fn sessions_held(&self) -> usize {
        self.inner.sessions.as_ref().map_or(0, |p| p.live())
    }

    /// Session logins this client has made (the first and every re-login after a 401).
    pub fn session_logins(&self) -> usize {
        self.inner.sessions.as_ref().map_or(0, |p| p.logins())
    }

    /// Fingerprint and DER of the leaf certificate last presented (for audits of expiry, self-signature);
    /// `None` when every connection of this client resumed a session (use [`probe_certificate`] to see it).
    pub fn peer_certificate(&self) -> Option<(Fingerprint, Vec<u8>)> {
        self.inner.t.pin.as_ref().and_then(|p| lock(p).last_seen.clone())
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.inner.t
    }

    /// Log out every session (DELETE) and refuse further requests. Waits up to the queue timeout for
    /// requests in flight. Returns the number of sessions deleted, or the first logout error after trying all.
    pub async fn close(&self) -> Result<usize, RedfishError> {
        let inner = &self.inner;
        let Some(sessions) = self.take_sessions().await else { return Ok(0) };
        let mut first_err = None;
        let mut deleted = 0;
        for s in &sessions {
            match crate::session::logout(&inner.t, s).await {
                Ok(()) => {
                    record_closed(inner.opts.record_sessions.as_ref(), &inner.t.bmc, s).await;
                    deleted += 1;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "logout failed");
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }

    /// Marks the client closed and takes its sessions out (for [`Client::close`] to delete, or
    /// [`Client::release_session`] to hand on), after waiting up to the queue timeout for the requests
    /// holding their token; no request is sent afterwards. `None`: it was already closed.
    async fn take_sessions(&self) -> Option<Vec<Session>> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::SeqCst) {
            return None;
        }
        let Some(pool) = &inner.sessions else { return Some(Vec::new()) };
        let sessions = pool.drain(inner.opts.queue_timeout).await;
        inner.slots.close();
        Some(sessions)
    }
}
