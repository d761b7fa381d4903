//! The fleet handle: one [`BmcPool`] per process holds the limits that must be global (fan-out semaphore,
//! per-BMC power locks, recent power reports for idempotent retries) and the caller's hooks (audit sink,
//! protocol memory, pin store). A [`Bmc`] is a cheap handle on one target within it.
//!
//! Each operation opens a connection, does its work and closes it (Close Session / logout), all within
//! `op_timeout`; nothing stays logged in between commands, so a BMC's small session table is never held
//! by an idle Lifeline. The exception is a sweep's IPMI reads when the options carry [`crate::KeptSessions`]
//! (the server): those take the BMC's kept session and give it back (see [`crate::kept`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use lifeline_ipmi::wire::Privilege;
use lifeline_types::{AuditAction, BmcProtocol, PowerAction, PowerState};
use serde_json::json;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use crate::audit::{AuditId, AuditIntent, AuditOutcome, AuditSink};
use crate::conn::{self, Conn};
use crate::error::{BmcError, error_chain};
use crate::events::EventLog;
use crate::fru::Inventory;
use crate::health::HealthSummary;
use crate::memory::{MemoryProtocolMemory, ProtocolMemory};
use crate::options::BmcOptions;
use crate::pool_learn::Persisted;
use crate::power::{self, ConnOps, PowerReport};
use crate::sdr_cache::SdrCache;
use crate::target::BmcTarget;

/// Power reports kept for idempotent retries (per pool).
const RECENT_REPORTS: usize = 4096;

pub(crate) struct PoolInner {
    pub opts: BmcOptions,
    pub memory: Arc<dyn ProtocolMemory>,
    pub fanout: Arc<Semaphore>,
    pub suites: conn::SuiteCache,
    pub sdr_cache: Arc<SdrCache>,
    conns: StdMutex<HashMap<String, Arc<Semaphore>>>,
    /// Redfish discovery per BMC name, reused by the next connection (see `conn::RedfishPaths`).
    pub(crate) redfish_paths: StdMutex<HashMap<String, conn::RedfishPaths>>,
    locks: StdMutex<HashMap<String, Arc<Mutex<()>>>>,
    recent: StdMutex<VecDeque<((String, String), PowerReport)>>,
    /// IPMI transmissions per answered request, per BMC, from its last sweep visit: the next visit starts
    /// with a budget that fits the link (connecting included) instead of learning it again.
    pub link_costs: StdMutex<HashMap<String, f64>>,
    /// BMCs already warned about for plain-HTTP Redfish (once per BMC per pool, not per request).
    plain_http_warned: StdMutex<std::collections::HashSet<String>>,
    /// BMCs whose last connection or visit failed: their next first contact sends no Basic reads with the
    /// login (`lifeline_redfish::FIRST_CONTACT_READS`), so a wrong password counts one failed login per
    /// visit toward the BMC's lockout, not three.
    failed_last: StdMutex<std::collections::HashSet<String>>,
    /// Discovery from earlier processes, loaded into `suites` and `redfish_paths` on first use.
    pub(crate) discovery_loaded: tokio::sync::OnceCell<()>,
    /// What the memory holds per BMC, so only changes are written.
    pub(crate) persisted: StdMutex<HashMap<String, Persisted>>,
    /// The shared IPMI transport every session of this pool is opened on (kept ones included: each holds
    /// it, so it outlives them), created on first use: a sweep of 1,000 BMCs then uses a few sockets and
    /// reader tasks instead of one of each per BMC (see `lifeline_ipmi::client::Mux`).
    ipmi_mux: StdMutex<Option<lifeline_ipmi::client::Mux>>,
    /// BMCs this pool has cleared of dead owners' IPMI sessions (one-shot pools only: see `OpenCtx::swept`).
    pub(crate) ipmi_swept: crate::kept_ipmi::Swept,
}

/// Every BMC Lifeline talks to, with the global limits.
#[derive(Clone)]
pub struct BmcPool {
    pub(crate) inner: Arc<PoolInner>,
    /// Where this handle's actions are audited (as whose actor). Per handle, not per pool: one pool per
    /// process serves every actor (see [`BmcPool::with_audit`]).
    pub(crate) audit: Arc<dyn AuditSink>,
}

impl std::fmt::Debug for BmcPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BmcPool").field("opts", &self.inner.opts).finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl BmcPool {
    /// A pool with an in-memory protocol memory (use [`BmcPool::with_memory`] for the store's).
    pub fn new(opts: BmcOptions, audit: Arc<dyn AuditSink>) -> Self {
        Self::with_memory(opts, audit, Arc::new(MemoryProtocolMemory::new()))
    }

    pub fn with_memory(opts: BmcOptions, audit: Arc<dyn AuditSink>, memory: Arc<dyn ProtocolMemory>) -> Self {
        let fanout = Arc::new(Semaphore::new(opts.fanout.max(1)));
        BmcPool {
            audit,
            inner: Arc::new(PoolInner {
                opts,
                memory,
                fanout,
                suites: conn::SuiteCache::default(),
                sdr_cache: Arc::default(),
                conns: StdMutex::new(HashMap::new()),
                redfish_paths: StdMutex::new(HashMap::new()),
                locks: StdMutex::new(HashMap::new()),
                recent: StdMutex::new(VecDeque::new()),
                link_costs: StdMutex::new(HashMap::new()),
                plain_http_warned: StdMutex::new(std::collections::HashSet::new()),
                failed_last: StdMutex::new(std::collections::HashSet::new()),
                discovery_loaded: tokio::sync::OnceCell::new(),
                persisted: StdMutex::new(HashMap::new()),
                ipmi_mux: StdMutex::new(None),
                ipmi_swept: Default::default(),
            }),
        }
    }

    pub fn options(&self) -> &BmcOptions {
        &self.inner.opts
    }

    /// The same pool (fan-out and per-BMC connection limits, per-BMC locks, kept sessions, learned paths
    /// and cipher suites, recent power reports) acting for another actor: its actions audited through
    /// `audit`. Why one pool per process: the limits protect the BMCs only if every request counts against
    /// the same ones.
    pub fn with_audit(&self, audit: Arc<dyn AuditSink>) -> BmcPool {
        BmcPool { inner: self.inner.clone(), audit }
    }

    /// Whether two handles share one pool.
    pub fn same_pool(&self, other: &BmcPool) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn bmc(&self, target: BmcTarget) -> Bmc {
        Bmc {
            pool: self.inner.clone(),
            audit: self.audit.clone(),
            target: Arc::new(target),
            first_reads: SYSTEM_READS,
        }
    }

    /// The pool's shared IPMI transport, if it was created yet (tests and metrics: its sockets and routes).
    pub fn ipmi_mux_stats(&self) -> Option<lifeline_ipmi::client::MuxStats> {
        lock(&self.inner.ipmi_mux).as_ref().map(|m| m.stats())
    }

    /// IPMI SDR repositories (served from the pool's cache, read from a BMC) since the pool was created.
    pub fn sdr_cache_stats(&self) -> (u64, u64) {
        self.inner.sdr_cache.stats()
    }
}

/// A connection opened by [`Bmc::open_conn`], holding its per-BMC connection slot.
pub(crate) struct Opened {
    pub protocol: BmcProtocol,
    pub conn: Conn,
    _slot: tokio::sync::OwnedSemaphorePermit,
    /// The session was a kept one (not logged in for this use).
    pub reused: bool,
    /// Give the session to the kept sessions after a successful use (its key), instead of closing it.
    keep: Option<String>,
    /// A request on it failed for want of an answer (timeout, closed session): never kept.
    pub broken: bool,
}

impl Opened {
    /// Whether the session goes to the kept sessions after a successful use.
    pub fn keep_eligible(&self) -> bool {
        self.keep.is_some()
    }

    /// Notes a failure that says the session or the link failed (not a refused read) and passes `r` on.
    pub fn check<T>(&mut self, r: Result<T, BmcError>) -> Result<T, BmcError> {
        if let Err(e) = &r
            && (e.is_unreachable()
                || matches!(e, BmcError::Ipmi { source: lifeline_ipmi::Error::Closed { .. }, .. }))
        {
            self.broken = true;
        }
        r
    }
}

impl PoolInner {
    fn power_lock(&self, bmc: &str) -> Arc<Mutex<()>> {
        lock(&self.locks).entry(bmc.to_owned()).or_default().clone()
    }

    fn connection_slots(&self, bmc: &str) -> Arc<Semaphore> {
        let n = self.opts.per_bmc_connections.max(1);
        lock(&self.conns).entry(bmc.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(n))).clone()
    }

    /// The pool's IPMI mux, created now if needed (in the runtime its reader tasks run on). `None` when its
    /// sockets cannot be bound: sessions then use sockets of their own, as before.
    pub(crate) fn ipmi_mux(&self) -> Option<lifeline_ipmi::client::Mux> {
        let mut m = lock(&self.ipmi_mux);
        if m.is_none() {
            match lifeline_ipmi::client::Mux::for_fleet() {
                Ok(mux) => *m = Some(mux),
                Err(e) => tracing::warn!(error = %e, "IPMI mux sockets not bound; one socket per session"),
            }
        }
        m.clone()
    }

    fn recent(&self, bmc: &str, id: &str) -> Option<PowerReport> {
        lock(&self.recent).iter().rev().find(|((b, i), _)| b == bmc && i == id).map(|(_, r)| r.clone())
    }

    fn remember(&self, bmc: &str, id: &str, r: &PowerReport) {
        let mut q = lock(&self.recent);
        if q.len() >= RECENT_REPORTS {
            q.pop_front();
        }
        q.push_back(((bmc.to_owned(), id.to_owned()), r.clone()));
    }

    pub(crate) fn link_cost(&self, bmc: &str) -> Option<f64> {
        lock(&self.link_costs).get(bmc).copied()
    }

    pub(crate) fn set_link_cost(&self, bmc: &str, per_request: f64) {
        lock(&self.link_costs).insert(bmc.to_owned(), per_request);
    }

    pub(crate) async fn permit(&self) -> OwnedSemaphorePermit {
        // The semaphore is never closed.
        self.fanout.clone().acquire_owned().await.unwrap_or_else(|_| unreachable!("fan-out semaphore closed"))
    }
}

/// One BMC within a pool.
#[derive(Clone)]
pub struct Bmc {
    pool: Arc<PoolInner>,
    audit: Arc<dyn AuditSink>,
    target: Arc<BmcTarget>,
    /// What a Redfish first contact reads with its login (`lifeline_redfish::FIRST_CONTACT_READS`): the
    /// systems, which every server operation starts from; a sweep that reads event logs adds the managers.
    first_reads: &'static [&'static str],
}

/// The systems collection: where a power, health or inventory operation starts.
pub(crate) const SYSTEM_READS: &[&str] = &["/redfish/v1/Systems"];

impl std::fmt::Debug for Bmc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bmc").field("target", &self.target).finish()
    }
}

impl Bmc {
    pub fn target(&self) -> &BmcTarget {
        &self.target
    }

    pub fn name(&self) -> &str {
        &self.target.name
    }

    /// The same BMC reached over `protocol` (a BMC reset through the door that still answers).
    pub fn over(&self, protocol: BmcProtocol) -> Bmc {
        let mut t = (*self.target).clone();
        t.protocol = protocol;
        Bmc {
            pool: self.pool.clone(),
            audit: self.audit.clone(),
            target: Arc::new(t),
            first_reads: self.first_reads,
        }
    }

    /// This handle, with a Redfish first contact that also reads `reads` with its login (paths the
    /// specification fixes; see `lifeline_redfish::FIRST_CONTACT_READS`).
    pub(crate) fn reading_first(mut self, reads: &'static [&'static str]) -> Bmc {
        self.first_reads = reads;
        self
    }

    /// Open, run `f`, close; within the fan-out limit (unless `permit` is given) and `limit`.
    pub(crate) async fn with_conn<T: Send>(
        &self,
        privilege: Privilege,
        limit: Duration,
        f: impl for<'a> FnOnce(&'a mut Conn) -> BoxFuture<'a, Result<T, BmcError>> + Send,
    ) -> Result<(BmcProtocol, T), BmcError> {
        let _permit = self.pool.permit().await;
        self.with_conn_permitted(privilege, limit, f).await
    }

    pub(crate) async fn with_conn_permitted<T: Send>(
        &self,
        privilege: Privilege,
        limit: Duration,
        f: impl for<'a> FnOnce(&'a mut Conn) -> BoxFuture<'a, Result<T, BmcError>> + Send,
    ) -> Result<(BmcProtocol, T), BmcError> {
        let t = &self.target;
        let work = async {
            let mut o = self.open_conn_unbounded(privilege).await?;
            let r = f(&mut o.conn).await;
            let protocol = o.protocol;
            self.finish(o, r.is_ok()).await;
            r.map(|v| (protocol, v))
        };
        tokio::time::timeout(limit, work).await.map_err(|_| BmcError::Timeout {
            bmc: t.name.clone(),
            what: "BMC operation",
            after: limit,
        })?
    }

    /// Take a connection slot and open a connection, within `limit` (the caller holds a fan-out permit).
    pub(crate) async fn open_conn(&self, privilege: Privilege, limit: Duration) -> Result<Opened, BmcError> {
        tokio::time::timeout(limit, self.open_conn_unbounded(privilege)).await.map_err(|_| {
            BmcError::Timeout { bmc: self.target.name.clone(), what: "connecting", after: limit }
        })?
    }

    /// As [`Bmc::open_conn`] for a sweep's reads: the BMC's kept session when there is one (an IPMI
    /// session, or a Redfish session's token, adopted by the new client), and the session is to be kept
    /// after use (when the options carry [`crate::KeptSessions`]).
    pub(crate) async fn open_conn_kept(&self, limit: Duration) -> Result<Opened, BmcError> {
        let t = &self.target;
        let Some(kept) = self.pool.opts.kept.as_ref() else {
            return self.open_conn(Privilege::User, limit).await;
        };
        let key = crate::kept::key(t);
        let fut = async {
            let slots = self.pool.connection_slots(&t.name);
            // The semaphore is never closed.
            let slot =
                slots.acquire_owned().await.unwrap_or_else(|_| unreachable!("connection slots closed"));
            let kept_ipmi = match t.protocol {
                BmcProtocol::Redfish => None,
                _ => kept.take(&t.name, &key).await,
            };
            if let Some(c) = kept_ipmi {
                return Ok(Opened {
                    protocol: BmcProtocol::Ipmi,
                    conn: Conn::Ipmi(c),
                    _slot: slot,
                    reused: true,
                    keep: Some(key),
                    broken: false,
                });
            }
            let mut o = self.open_with_slot(Privilege::User, slot).await?;
            match &o.conn {
                Conn::Ipmi(_) => o.keep = Some(key),
                Conn::Redfish(rc) => {
                    let key = crate::kept::redfish_key(t);
                    // Before the client's first request: its reads then go out with the kept token, and a
                    // token the BMC has dropped since costs one 401 and a login (the client's own re-login).
                    if let Some(held) = kept.take_redfish(&t.name, &key).await {
                        rc.client.adopt_session(held).await;
                    }
                    o.keep = Some(key);
                }
            }
            Ok(o)
        };
        tokio::time::timeout(limit, fut).await.map_err(|_| BmcError::Timeout {
            bmc: t.name.clone(),
            what: "connecting",
            after: limit,
        })?
    }

    /// A kept session failed in use: log in afresh (the new session takes its place, and is kept after a
    /// successful use), then drop the old one (best-effort Close Session in the background: it may be
    /// dead, so no retransmissions are spent on it). Keeps the caller's connection slot.
    ///
    /// Logging in first keeps a dead BMC session from costing a Close Session's retransmissions. But a
    /// session that failed in use (a lost burst of datagrams) may still hold its slot, and a BMC with one
    /// slot, or a full session table, refuses the new login: then the old session is closed first
    /// (awaited, within what is left of `limit`) and the login is tried once more.
    pub(crate) async fn reopen_kept(&self, o: &mut Opened, limit: Duration) -> Result<(), BmcError> {
        let t = &self.target;
        let deadline = tokio::time::Instant::now() + limit;
        let timed_out = || BmcError::Timeout { bmc: t.name.clone(), what: "connecting", after: limit };
        let first = tokio::time::timeout_at(deadline, self.open_raw(Privilege::User))
            .await
            .map_err(|_| timed_out())?;
        let (protocol, fresh) = match (first, &o.conn) {
            (Err(e), Conn::Ipmi(old)) if e.is_out_of_sessions() => {
                tracing::debug!(bmc = %t.name, "no free session slot for a new login; closing the failed kept session first");
                if let Err(e) =
                    tokio::time::timeout_at(deadline, old.session.close()).await.map_err(|_| timed_out())?
                {
                    tracing::debug!(bmc = %t.name, error = %error_chain(&e), "closing the failed kept session failed");
                }
                tokio::time::timeout_at(deadline, self.open_raw(Privilege::User))
                    .await
                    .map_err(|_| timed_out())??
            }
            (r, _) => r?,
        };
        let old = std::mem::replace(&mut o.conn, fresh);
        o.protocol = protocol;
        o.reused = false;
        if protocol != BmcProtocol::Ipmi {
            o.keep = None;
        }
        match (old, self.pool.opts.kept.as_ref()) {
            (Conn::Ipmi(c), Some(kept)) => kept.dropped(c),
            (old, _) => drop(old),
        }
        Ok(())
    }

    async fn open_conn_unbounded(&self, privilege: Privilege) -> Result<Opened, BmcError> {
        let t = &self.target;
        let slots = self.pool.connection_slots(&t.name);
        // The semaphore is never closed.
        let slot = slots.acquire_owned().await.unwrap_or_else(|_| unreachable!("connection slots closed"));
        self.open_with_slot(privilege, slot).await
    }

    async fn open_with_slot(
        &self,
        privilege: Privilege,
        slot: OwnedSemaphorePermit,
    ) -> Result<Opened, BmcError> {
        let (protocol, conn) = self.open_raw(privilege).await?;
        Ok(Opened { protocol, conn, _slot: slot, reused: false, keep: None, broken: false })
    }

    /// Opens a connection (the caller holds a connection slot and bounds the time).
    async fn open_raw(&self, privilege: Privilege) -> Result<(BmcProtocol, Conn), BmcError> {
        let t = &self.target;
        self.pool.load_discoveries().await;
        let ctx = conn::OpenCtx {
            suites: &self.pool.suites,
            privilege,
            redfish: self.pool.redfish_paths(&t.name),
            sdr_cache: Some(self.pool.sdr_cache.clone()),
            mux: (t.protocol != BmcProtocol::Redfish).then(|| self.pool.ipmi_mux()).flatten(),
            first_contact_reads: if lock(&self.pool.failed_last).contains(&t.name) {
                &[]
            } else {
                self.first_reads
            },
            swept: self.pool.opts.kept.is_none().then_some(&self.pool.ipmi_swept),
        };
        let (protocol, conn) = match conn::open(t, &self.pool.opts, self.pool.memory.as_ref(), &ctx).await {
            Ok(c) => c,
            Err(e) => {
                lock(&self.pool.failed_last).insert(t.name.clone());
                // A remembered suite that failed was dropped from the cache: drop it from the memory too.
                self.pool.persist(&t.name).await;
                return Err(e);
            }
        };
        if protocol == BmcProtocol::Redfish
            && !t.redfish_tls
            && lock(&self.pool.plain_http_warned).insert(t.name.clone())
        {
            tracing::warn!(
                bmc = %t.name,
                url = %t.redfish_url(),
                "Redfish over plain HTTP (no TLS): the password and session tokens cross the network in clear"
            );
        }
        Ok((protocol, conn))
    }

    /// Remember what the connection discovered (or forget it after a failure) and close it. The caller
    /// bounds the time.
    pub(crate) async fn finish(&self, o: Opened, ok: bool) {
        let t = &self.target;
        if ok {
            self.pool.learn(&t.name, t.redfish_url(), &o.conn);
            lock(&self.pool.failed_last).remove(&t.name);
        } else {
            self.pool.unlearn(&t.name);
            lock(&self.pool.failed_last).insert(t.name.clone());
        }
        self.pool.persist(&t.name).await;
        let Opened { conn, keep, reused, .. } = o;
        let conn = match (conn, keep, self.pool.opts.kept.as_ref()) {
            (Conn::Ipmi(c), Some(key), Some(kept)) if ok => return kept.put(&t.name, key, c).await,
            (Conn::Redfish(c), Some(key), Some(kept)) if ok => {
                // `None`: the client used HTTP Basic (nothing to keep), and it is closed either way.
                if let Some(held) = c.client.release_session().await {
                    let closer = crate::kept_redfish::Closer {
                        target: lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url()),
                        trust: conn::tls_trust(t, &self.pool.opts.tls),
                        opts: self.pool.opts.redfish.clone(),
                    };
                    kept.put_redfish(&t.name, key, held, closer).await;
                }
                return;
            }
            // A kept session that failed: it may be dead, so no Close Session with retransmissions.
            (Conn::Ipmi(c), Some(_), Some(kept)) if reused => return kept.dropped(c),
            (conn, ..) => conn,
        };
        if let Err(e) = conn.close().await {
            tracing::warn!(bmc = %t.name, error = %error_chain(&e), "closing the BMC connection failed");
        }
    }

    /// The protocol this BMC is reached over (`auto`: remembered, or probed now and remembered).
    pub async fn protocol(&self) -> Result<BmcProtocol, BmcError> {
        if self.target.protocol != BmcProtocol::Auto {
            return Ok(self.target.protocol);
        }
        let remembered = self
            .pool
            .memory
            .recall(&self.target.name)
            .await
            .map_err(|source| BmcError::ProtocolMemory { bmc: self.target.name.clone(), source })?;
        match remembered {
            Some(p) => Ok(p),
            None => Ok(self
                .with_conn(Privilege::User, self.pool.opts.op_timeout, |_| Box::pin(async { Ok(()) }))
                .await?
                .0),
        }
    }

    pub async fn power_state(&self) -> Result<PowerState, BmcError> {
        let limit = self.pool.opts.op_timeout;
        Ok(self.with_conn(Privilege::User, limit, |c| Box::pin(c.power_state())).await?.1)
    }

    pub async fn health(&self) -> Result<HealthSummary, BmcError> {
        let limit = self.pool.opts.op_timeout;
        let mut h = self.with_conn(Privilege::User, limit, |c| Box::pin(c.health())).await?.1;
        crate::below::GpuCount::judge(&mut h, self.target.expected_gpus);
        Ok(h)
    }

    /// The newest `newest` event log entries, newest first.
    pub async fn events(&self, newest: usize) -> Result<EventLog, BmcError> {
        let limit = self.pool.opts.op_timeout;
        Ok(self.with_conn(Privilege::User, limit, move |c| Box::pin(c.events(newest))).await?.1)
    }

    pub async fn inventory(&self) -> Result<Inventory, BmcError> {
        let limit = self.pool.opts.op_timeout;
        Ok(self.with_conn(Privilege::User, limit, |c| Box::pin(c.inventory())).await?.1)
    }

    async fn intent(
        &self,
        action: AuditAction,
        request_id: Option<&str>,
        detail: serde_json::Value,
    ) -> Result<AuditId, BmcError> {
        let rec = AuditIntent {
            at: Utc::now(),
            bmc: self.target.name.clone(),
            action,
            request_id: request_id.map(str::to_owned),
            detail,
        };
        self.audit.intent(&rec).await.map_err(|source| BmcError::AuditUnavailable {
            bmc: self.target.name.clone(),
            action: action.to_string(),
            source,
        })
    }

    /// Record the outcome; a failure here cannot undo the action, so it is logged and returned as a note.
    async fn outcome(
        &self,
        intent: AuditId,
        action: AuditAction,
        ok: bool,
        detail: serde_json::Value,
    ) -> Option<String> {
        let rec = AuditOutcome { at: Utc::now(), intent, bmc: self.target.name.clone(), action, ok, detail };
        match self.audit.outcome(&rec).await {
            Ok(()) => None,
            Err(e) => {
                tracing::error!(bmc = %self.target.name, %action, error = %e, "audit outcome not recorded");
                Some(format!("audit outcome not recorded: {e}"))
            }
        }
    }

    fn target_detail(&self) -> serde_json::Value {
        let t = &self.target;
        json!({
            "address": t.address,
            "protocol": t.protocol,
            "redfish_port": t.redfish_port,
            "ipmi_port": t.ipmi_port,
            "username": t.username,
        })
    }

    /// A confirmed power action (see [`crate::power`] for what "confirmed" means per protocol).
    ///
    /// Serialised per BMC: a second action on the same BMC waits for the first to finish. With a
    /// `request_id`, a retry of a request this pool already ran returns the first report (`replayed: true`)
    /// and sends nothing. Audited: no intent row, no action.
    pub async fn power(
        &self,
        action: PowerAction,
        request_id: Option<String>,
    ) -> Result<PowerReport, BmcError> {
        let name = self.target.name.clone();
        let lock = self.pool.power_lock(&name);
        let _serial = lock.lock().await;
        if let Some(id) = &request_id
            && let Some(mut prev) = self.pool.recent(&name, id)
        {
            prev.replayed = true;
            return Ok(prev);
        }
        let verb = AuditAction::power(action);
        let intent = self.intent(verb, request_id.as_deref(), self.target_detail()).await?;
        let popts = self.pool.opts.power.clone();
        let limit = self.pool.opts.op_timeout + popts.timeout;
        let rid = request_id.clone();
        let bmc_name = name.clone();
        let result = self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move {
                    let protocol = match c {
                        Conn::Ipmi(_) => BmcProtocol::Ipmi,
                        Conn::Redfish(_) => BmcProtocol::Redfish,
                    };
                    let mut ops = ConnOps { conn: c, opts: popts.clone() };
                    power::confirm(&mut ops, &bmc_name, protocol, action, rid, &popts).await
                })
            })
            .await
            .map(|(_, r)| r);
        let (ok, detail) = match &result {
            Ok(r) => (r.confirmed, serde_json::to_value(r).unwrap_or_default()),
            Err(e) => (false, json!({ "error": error_chain(e) })),
        };
        let note = self.outcome(intent, verb, ok, detail).await;
        let mut result = result;
        if let (Ok(r), Some(n)) = (&mut result, note) {
            r.note = Some(match r.note.take() {
                Some(prev) => format!("{prev}; {n}"),
                None => n,
            });
        }
        if let (Ok(r), Some(id)) = (&result, &request_id) {
            self.pool.remember(&name, id, r);
        }
        result
    }

    /// Clear the BMC's system event log (IPMI Clear SEL; Redfish `ClearLog` on SEL-like logs). Audited and
    /// serialised with power actions.
    pub async fn clear_events(&self) -> Result<(), BmcError> {
        let lock = self.pool.power_lock(&self.target.name);
        let _serial = lock.lock().await;
        let verb = AuditAction::SelClear;
        let intent = self.intent(verb, None, self.target_detail()).await?;
        let limit = self.pool.opts.op_timeout;
        let r = self.with_conn(Privilege::Administrator, limit, |c| Box::pin(c.clear_events())).await;
        let detail = match &r {
            Ok((p, _)) => json!({ "protocol": p }),
            Err(e) => json!({ "error": error_chain(e) }),
        };
        self.outcome(intent, verb, r.is_ok(), detail).await;
        r.map(|_| ())
    }

    pub(crate) fn pool(&self) -> &Arc<PoolInner> {
        &self.pool
    }
}

impl Conn {
    pub(crate) async fn health(&mut self) -> Result<HealthSummary, BmcError> {
        match self {
            Conn::Ipmi(c) => c.health().await,
            Conn::Redfish(c) => c.health().await,
        }
    }
    pub(crate) async fn events(&mut self, newest: usize) -> Result<EventLog, BmcError> {
        match self {
            Conn::Ipmi(c) => c.events(newest).await,
            Conn::Redfish(c) => c.events(newest).await,
        }
    }
    pub(crate) async fn clear_events(&mut self) -> Result<(), BmcError> {
        match self {
            Conn::Ipmi(c) => c.clear_events().await,
            Conn::Redfish(c) => c.clear_events().await,
        }
    }
    pub(crate) async fn inventory(&mut self) -> Result<Inventory, BmcError> {
        match self {
            Conn::Ipmi(c) => c.inventory().await,
            Conn::Redfish(c) => c.inventory().await,
        }
    }
}
