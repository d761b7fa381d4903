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

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use futures::StreamExt;
use lifeline_redfish::{ClientOptions, HeldSession, TlsTrust};
use tokio::time::Instant;

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
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Deletes a kept session, within `limit`.
pub(crate) async fn close_entry(e: Entry, limit: Duration) {
    let bmc = e.closer.target.name.clone();
    let Closer { target, trust, opts } = e.closer;
    match tokio::time::timeout(limit, e.held.logout(&target, &trust, &opts)).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!(%bmc, error = %err, "deleting a kept Redfish session failed"),
        Err(_) => tracing::debug!(%bmc, "deleting a kept Redfish session timed out"),
    }
}

/// Deletes many kept sessions, a bounded number at once.
pub(crate) async fn close_entries(all: Vec<Entry>, limit: Duration, at_once: usize) {
    futures::stream::iter(all).for_each_concurrent(at_once, move |e| close_entry(e, limit)).await
}

impl RedfishKept {
    pub fn len(&self) -> usize {
        lock(&self.map).len()
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
