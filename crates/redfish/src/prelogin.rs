//! Speculative session login: on first contact the login POST goes out together with the service-root GET,
//! to the URI the Redfish specification fixes for the Sessions collection (DSP0266 "Redfish-defined URIs":
//! `/redfish/v1/SessionService/Sessions`), instead of after the root named it. One round trip less per cold
//! connection: at 200 ms per round trip that is a sixth of a first-contact health read.
//!
//! The login waits for the root GET's connection to be up (TCP and TLS, no reply), then rides it as a
//! second HTTP/2 stream (`crate::client::connected` says why).
//!
//! Why it is safe:
//! - no credential goes anywhere the root GET would not go: both requests use the client's one TLS
//!   verifier, and on trust-on-first-use the first certificate seen is pinned for every concurrent handshake;
//! - a session it creates is deleted unless the client adopts it. The login runs in its own task, so a
//!   connect that is cancelled cannot lose the reply: when nobody waits for it any more the task deletes the
//!   session itself. A connect that fails (root unreadable, pin store failing) or that uses no sessions
//!   (Basic, no SessionService, a quirk) discards it and waits for that DELETE;
//! - a BMC whose collection is elsewhere answers 404/405 here, and the pool logs in lazily at the root's
//!   `Links.Sessions` as it did before (the speculation cost one request, never correctness).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use reqwest::Url;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::client::{Credentials, Transport};
use crate::error::RedfishError;
use crate::session::{LoginError, Session, login, logout};

/// Where DSP0266 puts the Sessions collection.
pub(crate) const SPEC_SESSIONS: &str = "/redfish/v1/SessionService/Sessions";

type Outcome = Result<Session, LoginError>;

/// Where the login task is: waiting for the connection (nothing sent), sending, or given up before sending.
const WAITING: u8 = 0;
const SENDING: u8 = 1;
const ABANDONED: u8 = 2;

/// A login in flight, started before the root was read.
pub(crate) struct Speculative {
    pub url: Url,
    t: Transport,
    rx: Option<oneshot::Receiver<Outcome>>,
    task: Option<JoinHandle<()>>,
    state: Arc<AtomicU8>,
}

impl Speculative {
    /// Sends the login now (in a task of its own).
    pub(crate) fn start(t: &Transport, creds: &Credentials) -> Result<Speculative, RedfishError> {
        let url = t.url(SPEC_SESSIONS)?;
        let (tx, rx) = oneshot::channel();
        let (t2, url2, creds) = (t.clone(), url.clone(), creds.clone());
        let state = Arc::new(AtomicU8::new(WAITING));
        let state2 = state.clone();
        let task = tokio::spawn(async move {
            wait_for_connection(&t2).await;
            // Given up while waiting (the root failed: no connection came up, or the connect was cancelled):
            // nothing was sent, so there is nothing to delete.
            if state2.compare_exchange(WAITING, SENDING, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                return;
            }
            let r = login(&t2, &url2, &creds).await;
            // The receiver is gone: the connect was cancelled or gave the login up. Nobody else can delete it.
            if let Err(Ok(s)) = tx.send(r) {
                delete(&t2, &s).await;
            }
        });
        Ok(Speculative { url, t: t.clone(), rx: Some(rx), task: Some(task), state })
    }

    /// Waits for the login's outcome (bounded by the login's own timeouts); `None` if its task died. The
    /// session, if any, is the caller's from here on (to put in its pool, which logs it out).
    pub(crate) async fn outcome(mut self) -> Option<Outcome> {
        let rx = self.rx.as_mut()?;
        let r = rx.await.ok();
        self.rx = None;
        r
    }

    /// Gives the login up: the session, if one was or will be created, is deleted before this returns
    /// (within the request timeout), and afterwards in the background if this is cancelled.
    pub(crate) async fn discard(mut self) {
        match self.take_ready() {
            // Already answered: delete it in a task (so a cancelled discard still deletes it) and wait.
            Some(s) => {
                let t = self.t.clone();
                let h = tokio::spawn(async move { delete(&t, &s).await });
                let _ = tokio::time::timeout(self.t.timeout * 2 + std::time::Duration::from_secs(2), h).await;
            }
            // Not sent yet (an unreachable BMC: the task still waits for a connection): it never will be.
            None if self.abandon() => {}
            // Not answered yet: its task sees the closed channel and deletes what it gets.
            None => {
                if let Some(task) = self.task.take() {
                    let limit = self.t.timeout * 2 + std::time::Duration::from_secs(2);
                    let _ = tokio::time::timeout(limit, task).await;
                }
            }
        }
    }

    /// Stops a login that has not been sent yet; `false` when it has been.
    fn abandon(&self) -> bool {
        self.state.compare_exchange(WAITING, ABANDONED, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// Closes the channel; returns the session when the login already succeeded (then it is ours to delete).
    fn take_ready(&mut self) -> Option<Session> {
        let mut rx = self.rx.take()?;
        rx.close();
        match rx.try_recv() {
            Ok(Ok(s)) => Some(s),
            _ => None,
        }
    }
}

impl Drop for Speculative {
    /// Cancelled before `outcome` or `discard` finished: delete a session that already exists in the
    /// background (one that does not exist yet is deleted by the login's task).
    fn drop(&mut self) {
        if self.rx.is_some() {
            self.abandon();
        }
        if let Some(s) = self.take_ready() {
            let t = self.t.clone();
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn(async move { delete(&t, &s).await });
                }
                Err(_) => tracing::warn!(bmc = %t.bmc, "speculative session left to expire (no runtime)"),
            }
        }
    }
}

/// Until the root GET's connection is up (`crate::client::connected`), so that an HTTP/2 BMC carries the
/// login on it instead of a second TLS handshake; at most the request timeout (then the login connects
/// itself, and meets whatever made the root's connection slow).
pub(crate) async fn wait_for_connection(t: &Transport) {
    let mut up = t.connected.clone();
    if tokio::time::timeout(t.timeout, up.wait_for(|n| *n > 0)).await.is_ok() {
        // hyper pools an HTTP/2 connection in the same poll that completed it, on the root GET's task:
        // let that finish first.
        tokio::task::yield_now().await;
    }
}

async fn delete(t: &Transport, s: &Session) {
    match logout(t, s).await {
        Ok(()) => tracing::debug!(bmc = %t.bmc, "speculative session deleted"),
        Err(e) => tracing::warn!(bmc = %t.bmc, error = %e, "deleting a speculative session failed"),
    }
}
