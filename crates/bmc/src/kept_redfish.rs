//! Kept Redfish sessions: the Redfish half of [`crate::KeptSessions`]. A long-lived process (the server)
//! keeps the session token of each session-based Redfish BMC between sweeps, so a sweep's visit sends no
//! login and no logout: two requests fewer, and two of a warm visit's four sequential round trips.
//!
//! Why these rules (see [`crate::kept`] for the IPMI half, whose limits they share):
//! - At most one kept session per BMC, as for IPMI: a BMC's session table is small and shared with its web
//!   UI and other tools. A second one given back for the same BMC is deleted at once.
//! - What is kept is the token and the URI that deletes it (`lifeline_redfish::HeldSession`), never a
//!   connection: 10,000 kept sessions hold no socket between sweeps.
//! - No keepalive: a Redfish session lives for the BMC's `SessionTimeout` (30 s at least by the schema,
//!   commonly 30 to 60 minutes) since its last request, well past a sweep interval. A token that expired
//!   anyway (a BMC reset, a short timeout) is answered with 401 and the client logs in once: the cost of a
//!   visit without kept sessions, never a failed visit.
//! - A session no sweep used for `close_idle_after` is deleted, and `close_all` deletes every one (the
//!   server's graceful end), each DELETE bounded by `close_timeout`: nothing is left on any BMC.
//! - A process killed with sessions kept cannot delete them, so each kept session is written to a
//!   [`SessionLedger`] (the engine's, over the store: this crate knows no store) when first kept, and struck
//!   off when deleted. The next process reclaims a dead owner's session ([`crate::Bmc::reclaim_redfish`]):
//!   kept for its next operation (no login), or deleted when one is kept already. A BMC with eight session
//!   slots (an iDRAC) is then never filled by crashes.

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use lifeline_redfish::{ClientOptions, HeldSession, TlsTrust};
use tokio::time::Instant;

/// Where kept Redfish sessions are written down while they live, so that a process that dies leaves them
/// findable. Failures are the implementation's to log: a ledger never fails an operation.
#[async_trait]
pub trait SessionLedger: Send + Sync {
    /// `bmc`'s session at `uri` (with `token`) is kept by this process.
    async fn kept(&self, bmc: &str, uri: &str, token: &str);
    /// `bmc`'s session at `uri` was deleted (or found gone): strike it off.
    async fn closed(&self, bmc: &str, uri: &str);
    /// Sessions (URI, token) recorded on `bmc` by owners that are gone, handed to this process to delete
    /// when the BMC refuses a login at its session limit. None by default.
    async fn stale(&self, _bmc: &str) -> Vec<(String, String)> {
        Vec::new()
    }
    /// An IPMI session with this BMC-side id is open on `bmc` (see [`crate::kept_ipmi`]). Not written
    /// down by default.
    async fn ipmi_opened(&self, _bmc: &str, _session_id: u32) {}
    /// The IPMI session `session_id` on `bmc` is closed (or the BMC no longer has it): strike it off.
    async fn ipmi_closed(&self, _bmc: &str, _session_id: u32) {}
    /// IPMI session ids recorded on `bmc` by owners that are gone, handed to this process to close (taken
    /// over in the ledger first, so two processes never close the same one). None by default.
    async fn stale_ipmi(&self, _bmc: &str) -> Vec<u32> {
        Vec::new()
    }
}

/// A [`SessionLedger`] shared by every connection of a pool ([`crate::BmcOptions::ledger`]).
#[derive(Clone)]
pub struct SharedLedger(pub Arc<dyn SessionLedger>);

impl std::fmt::Debug for SharedLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedLedger")
    }
}

/// The ledger as the Redfish client's [`lifeline_redfish::SessionRecord`]: a one-shot command writes each
/// session down when its client opens it and strikes it off when the client deletes it, so a command
/// killed mid-operation (kill -9, a lost terminal) leaves its session findable for the next one.
struct LedgerRecord(Arc<dyn SessionLedger>);

#[async_trait]
impl lifeline_redfish::SessionRecord for LedgerRecord {
    async fn opened(&self, bmc: &str, uri: &str, token: &str) {
        self.0.kept(bmc, uri, token).await;
    }
    async fn closed(&self, bmc: &str, uri: &str) {
        self.0.closed(bmc, uri).await;
    }
}

pub(crate) fn session_recorder(ledger: Arc<dyn SessionLedger>) -> lifeline_redfish::SessionRecorder {
    lifeline_redfish::SessionRecorder(Arc::new(LedgerRecord(ledger)))
}

/// The [`lifeline_redfish::StaleSessionFreer`] of one BMC: deletes the stale sessions the ledger hands over
/// (each DELETE within `limit`, authenticated by the session's own token), striking off each one deleted.
pub(crate) fn stale_session_freer(
    ledger: Arc<dyn SessionLedger>,
    target: lifeline_redfish::BmcTarget,
    trust: TlsTrust,
    opts: ClientOptions,
    limit: Duration,
) -> lifeline_redfish::StaleSessionFreer {
    let target = Arc::new(target);
    lifeline_redfish::StaleSessionFreer(Arc::new(move |bmc: String| {
        let (ledger, target, trust, opts) = (ledger.clone(), target.clone(), trust.clone(), opts.clone());
        Box::pin(async move {
            let mut deleted = 0;
            for (uri, token) in ledger.stale(&bmc).await {
                let Some(held) = HeldSession::from_recorded(&uri, &token) else { continue };
                match tokio::time::timeout(limit, held.logout(&target, &trust, &opts)).await {
                    Ok(Ok(())) => {
                        ledger.closed(&bmc, &uri).await;
                        deleted += 1;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(%bmc, %uri, error = %e, "a stale session of ours could not be deleted")
                    }
                    Err(_) => tracing::warn!(%bmc, %uri, "deleting a stale session of ours timed out"),
                }
            }
            deleted
        })
    }))
}

/// What [`crate::Bmc::reclaim_redfish`] did with a dead process's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reclaimed {
    /// Kept: the next operation on the BMC adopts it instead of logging in.
    Kept,
    /// Deleted on the BMC (a session was kept for it already, or nothing keeps sessions here).
    Deleted,
    /// Could not be deleted (the BMC did not answer): left to the BMC's session timeout.
    Failed,
}

/// What deleting a kept session needs without a client: where the BMC is and how its certificate is
/// trusted (the token authenticates the DELETE).
pub(crate) struct Closer {
    pub target: lifeline_redfish::BmcTarget,
    pub trust: TlsTrust,
    pub opts: ClientOptions,
}

pub(crate) struct Entry {
    /// Who the session is for (URL, user): a changed target never gets an old session.
    pub key: String,
    pub held: HeldSession,
    pub closer: Closer,
    /// Last use by an operation.
    pub used: Instant,
}

/// The kept Redfish sessions, by BMC name.
#[derive(Default)]
pub(crate) struct RedfishKept {
    map: StdMutex<HashMap<String, Entry>>,
    /// Where each BMC's kept session is written down; the session URI last written per BMC (a session
    /// kept again after a use is not written twice).
    ledger: std::sync::OnceLock<Arc<dyn SessionLedger>>,
    written: StdMutex<HashMap<String, String>>,
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Deletes a kept session, within `limit`; struck off the ledger once the BMC confirmed it (a session that
/// could not be deleted stays written down for the next process to delete).
pub(crate) async fn close_entry(e: Entry, limit: Duration, ledger: Option<Arc<dyn SessionLedger>>) -> bool {
    let bmc = e.closer.target.name.clone();
    let uri = e.held.uri().map(str::to_owned);
    let Closer { target, trust, opts } = e.closer;
    let deleted = match tokio::time::timeout(limit, e.held.logout(&target, &trust, &opts)).await {
        Ok(Ok(())) => true,
        Ok(Err(err)) => {
            tracing::debug!(%bmc, error = %err, "deleting a kept Redfish session failed");
            false
        }
        Err(_) => {
            tracing::debug!(%bmc, "deleting a kept Redfish session timed out");
            false
        }
    };
    if let (true, Some(l), Some(uri)) = (deleted, ledger, uri) {
        l.closed(&bmc, &uri).await;
    }
    deleted
}

/// Deletes many kept sessions, a bounded number at once.
pub(crate) async fn close_entries(
    all: Vec<Entry>,
    limit: Duration,
    at_once: usize,
    ledger: Option<Arc<dyn SessionLedger>>,
) {
    futures::stream::iter(all)
        .for_each_concurrent(at_once, move |e| {
            let l = ledger.clone();
            async move {
                close_entry(e, limit, l).await;
            }
        })
        .await
}

impl RedfishKept {
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    pub fn set_ledger(&self, l: Arc<dyn SessionLedger>) {
        let _ = self.ledger.set(l);
    }

    pub fn ledger(&self) -> Option<Arc<dyn SessionLedger>> {
        self.ledger.get().cloned()
    }

    /// Writes `bmc`'s kept session down unless it is the one written last.
    pub async fn write_down(&self, bmc: &str, uri: Option<&str>, token: &str) {
        let (Some(l), Some(uri)) = (self.ledger(), uri) else { return };
        if lock(&self.written).get(bmc).map(String::as_str) == Some(uri) {
            return;
        }
        l.kept(bmc, uri, token).await;
        lock(&self.written).insert(bmc.to_owned(), uri.to_owned());
    }

    pub fn names(&self) -> Vec<String> {
        lock(&self.map).keys().cloned().collect()
    }

    /// Takes `bmc`'s kept session. `Err`: one was kept for another identity (address or user changed);
    /// the caller deletes it.
    pub fn take(&self, bmc: &str, key: &str) -> Result<Option<HeldSession>, Entry> {
        match lock(&self.map).remove(bmc) {
            None => Ok(None),
            Some(e) if e.key == key => Ok(Some(e.held)),
            Some(e) => Err(e),
        }
    }

    /// Keeps `e` unless a session is already kept for `bmc`: then `e` comes back to be deleted.
    pub fn put(&self, bmc: &str, e: Entry) -> Option<Entry> {
        let mut map = lock(&self.map);
        if map.contains_key(bmc) {
            return Some(e);
        }
        map.insert(bmc.to_owned(), e);
        None
    }

    /// Takes out the sessions no operation used for `idle` (to be deleted).
    pub fn take_idle(&self, idle: Duration) -> Vec<Entry> {
        let mut map = lock(&self.map);
        let now = Instant::now();
        let names: Vec<String> =
            map.iter().filter(|(_, e)| now - e.used >= idle).map(|(k, _)| k.clone()).collect();
        names.iter().filter_map(|k| map.remove(k)).collect()
    }

    /// Takes out every session (to be deleted).
    pub fn drain(&self) -> Vec<Entry> {
        lock(&self.map).drain().map(|(_, e)| e).collect()
    }
}

impl crate::Bmc {
    /// A Redfish session a dead process of ours left on this BMC (found in the ledger, with its token): kept
    /// for the next operation here to adopt (no login; a token the BMC dropped since costs one 401 and a
    /// login), or deleted when this pool keeps no sessions or keeps one for this BMC already. A deleted one
    /// is struck off the ledger; a kept one stays written down, now as this process's.
    pub async fn reclaim_redfish(&self, uri: &str, token: &str) -> Reclaimed {
        let t = self.target();
        let Some(held) = HeldSession::from_recorded(uri, token) else { return Reclaimed::Failed };
        let pool = self.pool();
        let e = Entry {
            key: crate::kept::redfish_key(t),
            held,
            closer: Closer {
                target: lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url()),
                trust: crate::conn::tls_trust(t, &pool.opts.tls),
                opts: pool.opts.redfish.clone(),
            },
            used: Instant::now(),
        };
        let (extra, limit, ledger) = match &pool.opts.kept {
            Some(k) => (k.adopt_recorded(&t.name, e), k.options().close_timeout, k.ledger()),
            None => (Some(e), Duration::from_secs(3), None),
        };
        match extra {
            None => Reclaimed::Kept,
            Some(e) => match close_entry(e, limit, ledger).await {
                true => Reclaimed::Deleted,
                false => Reclaimed::Failed,
            },
        }
    }
}
