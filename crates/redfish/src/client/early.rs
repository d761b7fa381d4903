//! First-contact reads: on first contact the spec-fixed collections a sweep starts from
//! (`/redfish/v1/Systems`, `/redfish/v1/Managers`) are read with HTTP Basic in the same round trip as the
//! service root and the speculative login (`crate::prelogin`), instead of after the login's token came back.
//! At 200 ms per round trip that is a fifth of a first-contact health read (five round trips become four).
//!
//! Why Basic here only: a token does not exist yet when these go out; every later request uses the session.
//! Redfish services must accept Basic (DSP0266, "HTTP Basic authentication"); a BMC that refuses it answers
//! 401 and the collection is read again with the token when it is needed, so a refusal costs one request,
//! never an answer.
//!
//! Why it is safe:
//! - a read is used only for the link the root names, and only within the connect's first request timeout
//!   (the first visit); later reads of the same link go to the BMC;
//! - no credential goes anywhere the root GET would not go (one TLS verifier per client, as the login);
//! - Basic makes no session, so nothing is left on the BMC whatever happens; the reads are tasks that are
//!   aborted when the client is dropped;
//! - a wrong password would make three failed logins per first contact instead of one (the login and two
//!   reads) toward a BMC's lockout; the pool therefore asks for no reads on a BMC whose last visit failed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;
use tokio::task::JoinHandle;

use super::{Credentials, Transport, read_json};

/// What `lifeline sweep` starts from: the systems (power, health) and the managers (event logs).
pub const FIRST_CONTACT_READS: &[&str] = &["/redfish/v1/Systems", "/redfish/v1/Managers"];

enum Slot {
    /// In flight or answered: the document, or `None` when the BMC refused or failed it.
    Pending(JoinHandle<Option<Value>>),
    /// Handed to a reader: later readers go to the BMC.
    Taken,
}

/// The first-contact reads of one client.
pub(crate) struct EarlyReads {
    started: Instant,
    /// How long after the start a read may still be used (the connect's request timeout).
    usable: std::time::Duration,
    slots: Mutex<HashMap<String, Slot>>,
}

fn key(link: &str) -> &str {
    link.trim_end_matches('/')
}

impl EarlyReads {
    /// Starts one GET per link (each in a task of its own, sent once the root GET's connection is up).
    pub(crate) fn start(t: &Transport, creds: &Credentials, links: &[&str]) -> EarlyReads {
        let slots = links
            .iter()
            .filter_map(|link| {
                let url = t.url(link).ok()?;
                let (t, creds) = (t.clone(), creds.clone());
                let task = tokio::spawn(async move {
                    crate::prelogin::wait_for_connection(&t).await;
                    let rb =
                        t.http.get(url.clone()).timeout(t.timeout).basic_auth(&creds.username, Some(&creds.password));
                    let resp = t.send(rb, "GET", &url).await.ok()?;
                    if !resp.status().is_success() {
                        tracing::debug!(bmc = %t.bmc, %url, status = resp.status().as_u16(), "first-contact read refused");
                        return None;
                    }
                    read_json(&t, resp, "GET", &url).await.ok()
                });
                Some((key(link).to_owned(), Slot::Pending(task)))
            })
            .collect();
        EarlyReads { started: Instant::now(), usable: t.timeout, slots: Mutex::new(slots) }
    }

    fn fresh(&self) -> bool {
        self.started.elapsed() < self.usable
    }

    /// Whether `link` was read (or is being read) on first contact and may still be used: the caller reads
    /// the collection as listed rather than asking for `$expand` (which would be a request more).
    pub(crate) fn covers(&self, link: &str) -> bool {
        self.fresh() && self.lock().contains_key(key(link))
    }

    /// The document read for `link`, once; `None` when there is none (or it failed, or is too old).
    pub(crate) async fn take(&self, link: &str) -> Option<Value> {
        if !self.fresh() {
            return None;
        }
        let task = match self.lock().get_mut(key(link)) {
            Some(slot @ Slot::Pending(_)) => match std::mem::replace(slot, Slot::Taken) {
                Slot::Pending(task) => task,
                Slot::Taken => return None,
            },
            _ => return None,
        };
        let abort = task.abort_handle();
        // Cancelled while waiting: the read is of no use to anyone else.
        let _guard = AbortOnDrop(abort);
        task.await.ok().flatten()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Drop for EarlyReads {
    fn drop(&mut self) {
        for slot in self.lock().values() {
            if let Slot::Pending(task) = slot {
                task.abort();
            }
        }
    }
}
