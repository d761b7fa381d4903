//! Kept IPMI sessions: a long-lived process (the server) keeps at most one USER-level session per BMC open
//! between sweeps, so a sweep's status reads cost one request and one reply per BMC instead of the six
//! round trips and the key derivation of a login (and the Close Session after it).
//!
//! Why these rules:
//! - At most one kept session per BMC: BMC session tables are small (ipmi_sim and many real BMCs hold a
//!   handful), and a kept session must never stop an operator's tool from logging in. A caller that finds
//!   the BMC's session in use opens its own and, when it gives it back while one is already kept, that one
//!   is closed at once.
//! - A keepalive (Get Device ID) on every session idle for [`KeepOptions::keepalive_after`], well inside
//!   the BMC's inactivity timeout (60 s by the spec; some firmware uses 30 s), so a sweep every minute finds
//!   its sessions alive. A session whose keepalive fails is dropped (the next user opens a fresh one).
//! - A session no operation used for [`KeepOptions::close_idle_after`] is closed: a BMC taken out of the
//!   sweep must not hold one of our sessions for ever.
//! - [`KeptSessions::close_all`] sends Close Session to every kept session (the server's graceful shutdown),
//!   and after it nothing is kept any more; dropping the last handle drops every session, and a dropped
//!   session sends Close Session on its own (best effort), so no orphan is left on any BMC.
//! - Only IPMI read sessions are kept. Power actions still open an ADMINISTRATOR session and close it:
//!   privilege stays minimal while idle, and an action never shares a session with a sweep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::conn::IpmiConn;
use crate::kept_redfish::{self, RedfishKept};
use crate::target::BmcTarget;

/// Keepalives (and idle closes) one keeper tick runs at once. Why bounded: with 10,000 kept sessions all due
/// in the same tick, a task each would be 10,000 tasks and their futures allocated at once, and a burst of
/// 10,000 requests; 64 at a time finish a tick's keepalives in well under a second on a live network.
const AT_ONCE: usize = 64;

/// When kept sessions are refreshed and given up.
#[derive(Debug, Clone)]
pub struct KeepOptions {
    /// A kept session idle this long gets a keepalive (Get Device ID). Below every BMC's session
    /// inactivity timeout (IPMI's default is 60 s; some firmware uses 30 s).
    pub keepalive_after: Duration,
    /// A kept session that no operation used for this long is closed.
    pub close_idle_after: Duration,
    /// Bound of one Close Session at [`KeptSessions::close_all`].
    pub close_timeout: Duration,
}

impl Default for KeepOptions {
    fn default() -> Self {
        KeepOptions {
            keepalive_after: Duration::from_secs(20),
            close_idle_after: Duration::from_secs(600),
            close_timeout: Duration::from_secs(3),
        }
    }
}

/// What the kept sessions did since they were created (tests and metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptStats {
    /// Sessions kept now (IPMI and Redfish).
    pub kept: usize,
    /// Of which Redfish sessions ([`crate::kept_redfish`]).
    pub redfish_kept: usize,
    /// Times an operation used a kept session instead of logging in.
    pub reused: u64,
    /// Sessions handed to the keeper after use (newly kept or kept again).
    pub returned: u64,
    /// Keepalives answered.
    pub keepalives: u64,
    /// Sessions dropped because they failed (keepalive or use).
    pub dropped: u64,
    /// Sessions closed by us (a second one for a BMC, idle too long, `close_all`).
    pub closed: u64,
}

#[derive(Default)]
struct Counters {
    reused: AtomicU64,
    returned: AtomicU64,
    keepalives: AtomicU64,
    dropped: AtomicU64,
    closed: AtomicU64,
}

struct Entry {
    /// Who the session is for (address, port, user): a changed target never gets an old session.
    key: String,
    conn: IpmiConn,
    /// Last use by an operation (keepalives do not count).
    used: Instant,
    /// Last request on the session (an operation's or a keepalive).
    sent: Instant,
}

struct Inner {
    opts: KeepOptions,
    map: StdMutex<HashMap<String, Entry>>,
    closing: AtomicBool,
    keeper: StdMutex<Option<tokio::task::JoinHandle<()>>>,
    /// Keepalives and idle closes in flight (their sessions are out of `map` meanwhile): `close_all` waits
    /// for them so that none outlives the shutdown.
    tasks: StdMutex<tokio::task::JoinSet<()>>,
    /// BMCs whose session is out for a keepalive: `take` waits for it rather than logging in beside it
    /// (a second session on a BMC with a small table, and one of the two closed again right after).
    out: StdMutex<std::collections::HashSet<String>>,
    back: tokio::sync::Notify,
    counters: Counters,
    /// The kept Redfish session tokens.
    rf: RedfishKept,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(h) = lock(&self.keeper).take() {
            h.abort();
        }
        // The entries drop with the map: each session sends its Close Session from its own drop. A Redfish
        // token has no such drop: its DELETEs go out in the background (without a runtime, the sessions
        // are left to time out on their BMCs).
        let rf = self.rf.drain();
        if rf.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(kept_redfish::close_entries(rf, self.opts.close_timeout, AT_ONCE, self.rf.ledger()));
            }
            Err(_) => tracing::warn!(
                n = rf.len(),
                "kept Redfish sessions dropped outside a runtime; left to expire"
            ),
        }
    }
}

/// The kept sessions of one process, shared by every pool built from the same [`crate::BmcOptions`].
#[derive(Clone)]
pub struct KeptSessions {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for KeptSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptSessions").field("opts", &self.inner.opts).field("stats", &self.stats()).finish()
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The identity a kept session is valid for.
pub(crate) fn key(t: &BmcTarget) -> String {
    format!("{}:{}/{}", t.address, t.ipmi_port, t.username)
}

/// The identity a kept Redfish session is valid for.
pub(crate) fn redfish_key(t: &BmcTarget) -> String {
    format!("{}/{}", t.redfish_url(), t.username)
}

async fn close_conn(conn: IpmiConn, limit: Duration) {
    let bmc = conn.bmc.clone();
    match tokio::time::timeout(limit, conn.session.close()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%bmc, error = %e, "closing a kept IPMI session failed"),
        Err(_) => tracing::debug!(%bmc, "closing a kept IPMI session timed out"),
    }
}

impl KeptSessions {
    pub fn new(opts: KeepOptions) -> Self {
        KeptSessions {
            inner: Arc::new(Inner {
                opts,
                map: StdMutex::new(HashMap::new()),
                out: StdMutex::new(std::collections::HashSet::new()),
                back: tokio::sync::Notify::new(),
                closing: AtomicBool::new(false),
                keeper: StdMutex::new(None),
                tasks: StdMutex::new(tokio::task::JoinSet::new()),
                counters: Counters::default(),
                rf: RedfishKept::default(),
            }),
        }
    }

    pub fn options(&self) -> &KeepOptions {
        &self.inner.opts
    }

    /// Sessions kept now (IPMI and Redfish), counting one out for a keepalive: it is still ours on the BMC.
    pub fn len(&self) -> usize {
        // Map before out, as the keeper takes them, so a session moving between the two is seen once.
        let map = lock(&self.inner.map);
        let out = lock(&self.inner.out).iter().filter(|b| !map.contains_key(*b)).count();
        map.len() + out + self.inner.rf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The BMCs (by name) that have a kept session now.
    pub fn bmcs(&self) -> Vec<String> {
        let mut v: Vec<String> = {
            let map = lock(&self.inner.map);
            let out = lock(&self.inner.out);
            map.keys().chain(out.iter()).cloned().collect()
        };
        v.extend(self.inner.rf.names());
        v.sort();
        v.dedup();
        v
    }

    pub fn stats(&self) -> KeptStats {
        let c = &self.inner.counters;
        KeptStats {
            kept: self.len(),
            redfish_kept: self.inner.rf.len(),
            reused: c.reused.load(Ordering::Relaxed),
            returned: c.returned.load(Ordering::Relaxed),
            keepalives: c.keepalives.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            closed: c.closed.load(Ordering::Relaxed),
        }
    }

    /// Whether [`KeptSessions::close_all`] ran (nothing is kept after it).
    pub fn is_closed(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire)
    }

    /// Takes `bmc`'s kept session for the caller's use (`None`: none kept, or kept for another identity,
    /// which is then dropped).
    pub(crate) async fn take(&self, bmc: &str, key: &str) -> Option<IpmiConn> {
        let deadline = Instant::now() + self.keepalive_bound();
        let e = loop {
            let back = self.inner.back.notified();
            if let Some(e) = lock(&self.inner.map).remove(bmc) {
                break e;
            }
            if !lock(&self.inner.out).contains(bmc) {
                return None;
            }
            if tokio::time::timeout_at(deadline, back).await.is_err() {
                return None;
            }
        };
        if e.key != key {
            // The target changed (address, port or user): this session is of no use any more.
            self.inner.counters.closed.fetch_add(1, Ordering::Relaxed);
            drop(e);
            return None;
        }
        self.inner.counters.reused.fetch_add(1, Ordering::Relaxed);
        Some(e.conn)
    }

    /// Gives a session back after a successful use: kept, unless one is already kept for `bmc` or the
    /// sessions are closed, in which case it is closed now.
    pub(crate) async fn put(&self, bmc: &str, key: String, conn: IpmiConn) {
        let inner = &self.inner;
        inner.counters.returned.fetch_add(1, Ordering::Relaxed);
        let extra = if inner.closing.load(Ordering::Acquire) {
            Some(conn)
        } else {
            let mut map = lock(&inner.map);
            if map.contains_key(bmc) {
                Some(conn)
            } else {
                let now = Instant::now();
                map.insert(bmc.to_owned(), Entry { key, conn, used: now, sent: now });
                None
            }
        };
        match extra {
            Some(conn) => {
                inner.counters.closed.fetch_add(1, Ordering::Relaxed);
                close_conn(conn, inner.opts.close_timeout).await;
            }
            None => self.start_keeper(),
        }
    }

    /// A session that failed in use: dropped (its drop still sends a best-effort Close Session, in case the
    /// BMC only lost our requests, not the session).
    pub(crate) fn dropped(&self, conn: IpmiConn) {
        self.inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(bmc = %conn.bmc, "kept IPMI session failed; dropped");
        drop(conn);
    }

    /// Takes `bmc`'s kept Redfish session for a client of the same identity (`key`); one kept for another
    /// identity is deleted.
    pub(crate) async fn take_redfish(&self, bmc: &str, key: &str) -> Option<lifeline_redfish::HeldSession> {
        match self.inner.rf.take(bmc, key) {
            Ok(Some(h)) => {
                self.inner.counters.reused.fetch_add(1, Ordering::Relaxed);
                Some(h)
            }
            Ok(None) => None,
            Err(old) => {
                self.inner.counters.closed.fetch_add(1, Ordering::Relaxed);
                kept_redfish::close_entry(old, self.inner.opts.close_timeout, self.inner.rf.ledger()).await;
                None
            }
        }
    }

    /// Gives a Redfish session back after a successful use: kept, unless one is already kept for `bmc` or
    /// the sessions are closed, in which case it is deleted now.
    pub(crate) async fn put_redfish(
        &self,
        bmc: &str,
        key: String,
        held: lifeline_redfish::HeldSession,
        closer: kept_redfish::Closer,
    ) {
        let inner = &self.inner;
        inner.counters.returned.fetch_add(1, Ordering::Relaxed);
        let (uri, token) = (held.uri().map(str::to_owned), held.token().to_owned());
        let e = kept_redfish::Entry { key, held, closer, used: Instant::now() };
        let extra = if inner.closing.load(Ordering::Acquire) { Some(e) } else { inner.rf.put(bmc, e) };
        match extra {
            Some(e) => {
                inner.counters.closed.fetch_add(1, Ordering::Relaxed);
                kept_redfish::close_entry(e, inner.opts.close_timeout, inner.rf.ledger()).await;
            }
            None => {
                inner.rf.write_down(bmc, uri.as_deref(), &token).await;
                self.start_keeper();
            }
        }
    }

    /// Writes every Redfish session kept from now on to `ledger` (and strikes it off when deleted), so a
    /// process that dies leaves its sessions findable. Set once, before the first session is kept.
    pub fn set_ledger(&self, ledger: Arc<dyn kept_redfish::SessionLedger>) {
        self.inner.rf.set_ledger(ledger);
    }

    pub(crate) fn ledger(&self) -> Option<Arc<dyn kept_redfish::SessionLedger>> {
        self.inner.rf.ledger()
    }

    /// Keeps a session a dead process of ours left on `bmc` (see [`crate::Bmc::reclaim_redfish`]); `Some`:
    /// one is kept for `bmc` already (or nothing is kept any more), and this one is to be deleted.
    pub(crate) fn adopt_recorded(&self, bmc: &str, e: kept_redfish::Entry) -> Option<kept_redfish::Entry> {
        let inner = &self.inner;
        if inner.closing.load(Ordering::Acquire) {
            return Some(e);
        }
        let extra = inner.rf.put(bmc, e);
        if extra.is_none() {
            self.start_keeper();
        }
        extra
    }

    /// Closes every kept session (Close Session, each bounded by `close_timeout`, all at once) and keeps
    /// none from now on. Returns how many were closed.
    pub async fn close_all(&self) -> usize {
        let inner = &self.inner;
        inner.closing.store(true, Ordering::Release);
        if let Some(h) = lock(&inner.keeper).take() {
            h.abort();
        }
        let all: Vec<Entry> = lock(&inner.map).drain().map(|(_, e)| e).collect();
        let rf = inner.rf.drain();
        let n = all.len() + rf.len();
        inner.counters.closed.fetch_add(n as u64, Ordering::Relaxed);
        let limit = inner.opts.close_timeout;
        // Sessions out for a keepalive come back to a closed keeper, which closes them.
        let tasks = std::mem::take(&mut *lock(&inner.tasks));
        let pending = async {
            let mut tasks = tasks;
            while tasks.join_next().await.is_some() {}
        };
        let closes = futures::future::join_all(all.into_iter().map(|e| close_conn(e.conn, limit)));
        // Redfish DELETEs a bounded number at once: each builds a TLS connection.
        let rf_closes = kept_redfish::close_entries(rf, limit, AT_ONCE, inner.rf.ledger());
        let bound = limit * 2 + Duration::from_secs(1) + self.keepalive_bound();
        let everything = futures::future::join3(closes, rf_closes, pending);
        if tokio::time::timeout(bound, everything).await.is_err() {
            tracing::warn!("kept BMC sessions: closing did not finish in {bound:?}; the rest close on drop");
        }
        if n > 0 {
            tracing::info!(sessions = n, "kept BMC sessions closed");
        }
        n
    }

    /// Longest a keepalive may take (the session's retransmissions are not known here: a generous bound).
    fn keepalive_bound(&self) -> Duration {
        Duration::from_secs(10)
    }

    fn start_keeper(&self) {
        let mut k = lock(&self.inner.keeper);
        if k.is_some() || self.inner.closing.load(Ordering::Acquire) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        *k = Some(rt.spawn(keeper(Arc::downgrade(&self.inner))));
    }
}

/// Refreshes idle sessions and closes unused ones until the sessions are dropped or closed.
async fn keeper(weak: Weak<Inner>) {
    let tick = {
        let Some(inner) = weak.upgrade() else { return };
        (inner.opts.keepalive_after / 4).clamp(Duration::from_millis(50), Duration::from_secs(5))
    };
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        let (due, idle) = {
            let mut map = lock(&inner.map);
            let now = Instant::now();
            let idle_names: Vec<String> = map
                .iter()
                .filter(|(_, e)| now - e.used >= inner.opts.close_idle_after)
                .map(|(k, _)| k.clone())
                .collect();
            let idle: Vec<Entry> = idle_names.iter().filter_map(|k| map.remove(k)).collect();
            let due_names: Vec<String> = map
                .iter()
                .filter(|(_, e)| now - e.sent >= inner.opts.keepalive_after)
                .map(|(k, _)| k.clone())
                .collect();
            let due: Vec<(String, Entry)> =
                due_names.into_iter().filter_map(|k| map.remove(&k).map(|e| (k, e))).collect();
            // Out before the map is let go, so a sweep's `take` (and `len`) never finds the session in neither:
            // `take` waits for it rather than logging in.
            lock(&inner.out).extend(due.iter().map(|(bmc, _)| bmc.clone()));
            (due, idle)
        };
        let rf_idle = inner.rf.take_idle(inner.opts.close_idle_after);
        let mut tasks = lock(&inner.tasks);
        while tasks.try_join_next().is_some() {}
        let limit = inner.opts.close_timeout;
        if !rf_idle.is_empty() {
            inner.counters.closed.fetch_add(rf_idle.len() as u64, Ordering::Relaxed);
            tracing::debug!(sessions = rf_idle.len(), "deleting kept Redfish sessions no operation used");
            tasks.spawn(kept_redfish::close_entries(rf_idle, limit, AT_ONCE, inner.rf.ledger()));
        }
        if !idle.is_empty() {
            inner.counters.closed.fetch_add(idle.len() as u64, Ordering::Relaxed);
            tracing::debug!(sessions = idle.len(), "closing kept IPMI sessions no operation used");
            tasks.spawn(
                futures::stream::iter(idle).for_each_concurrent(AT_ONCE, move |e| close_conn(e.conn, limit)),
            );
        }
        if !due.is_empty() {
            let weak = Arc::downgrade(&inner);
            tasks.spawn(
                futures::stream::iter(due)
                    .for_each_concurrent(AT_ONCE, move |(bmc, e)| keepalive(weak.clone(), bmc, e)),
            );
        }
    }
}

/// One keepalive (Get Device ID) on a session that is out of the map: back in it when answered (closed if
/// another session was kept for the BMC meanwhile, or the sessions are closing), dropped when not.
async fn keepalive(weak: Weak<Inner>, bmc: String, e: Entry) {
    let ok = e.conn.session.call(&lifeline_ipmi::wire::app::GetDeviceId).await;
    let Some(inner) = weak.upgrade() else { return };
    // Back in the map (or dropped) before waiters look again.
    let _back = Back(&inner, bmc.clone());
    match ok {
        Ok(_) => {
            inner.counters.keepalives.fetch_add(1, Ordering::Relaxed);
            let extra = {
                let mut map = lock(&inner.map);
                if inner.closing.load(Ordering::Acquire) || map.contains_key(&bmc) {
                    Some(e)
                } else {
                    map.insert(bmc, Entry { sent: Instant::now(), ..e });
                    None
                }
            };
            if let Some(e) = extra {
                inner.counters.closed.fetch_add(1, Ordering::Relaxed);
                close_conn(e.conn, inner.opts.close_timeout).await;
            }
        }
        Err(err) => {
            tracing::debug!(%bmc, error = %err, "keepalive on a kept IPMI session failed; dropped");
            inner.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Marks a keepalive's session as no longer out, and wakes `take`s waiting for it, however the keepalive ended.
struct Back<'a>(&'a Inner, String);

impl Drop for Back<'_> {
    fn drop(&mut self) {
        lock(&self.0.out).remove(&self.1);
        self.0.back.notify_waiters();
    }
}
