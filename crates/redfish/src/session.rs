//! Redfish token sessions, pooled within the BMC's session limit.
//!
//! Why: BMCs allow few concurrent sessions (often 2-8, shared with the web UI and other tools); a client
//! that logs in per request exhausts them and locks humans out, one that never logs out leaks them until the
//! BMC's timeout (often 30 min). So: at most `limit` sessions, each lent to one request at a time, created
//! lazily, re-created once when the BMC answers 401 (expired), and DELETEd on `close` (best effort on drop).
//! When the BMC refuses a new session while we already hold some, somebody else is using slots: the pool
//! shrinks to what it holds instead of failing.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::Url;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::client::{Credentials, Transport};
use crate::error::RedfishError;

#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub token: String,
    /// Where to DELETE it; `None` if the BMC gave neither Location nor `@odata.id` (then it times out there).
    pub uri: Option<Url>,
}

pub(crate) enum LoginError {
    /// The BMC has no working session login here: use Basic instead.
    Unsupported(RedfishError),
    /// The BMC refused (limit reached, overloaded): may be retried with an existing session.
    Refused(RedfishError),
    Fatal(RedfishError),
}

#[derive(Debug)]
pub(crate) struct SessionPool {
    login_url: Url,
    limit: usize,
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<Session>>,
    /// Sessions that exist on the BMC (idle + lent out).
    live: AtomicUsize,
    /// Permits given up because the BMC refused more sessions.
    shrunk: AtomicUsize,
}

/// A session lent to one request; returns to the pool on drop unless invalidated.
#[derive(Debug)]
pub(crate) struct SessionGuard {
    session: Option<Session>,
    pool: Arc<SessionPool>,
    _permit: OwnedSemaphorePermit,
}

impl SessionGuard {
    pub(crate) fn token(&self) -> &str {
        self.session.as_ref().map(|s| s.token.as_str()).unwrap_or_default()
    }

    /// The BMC no longer accepts this token (401): forget it; it is gone on the BMC side.
    pub(crate) fn invalidate(mut self) {
        if self.session.take().is_some() {
            self.pool.live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            lock(&self.pool.idle).push(s);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionPool {
    pub(crate) fn new(login_url: Url, limit: usize) -> Arc<Self> {
        let limit = limit.max(1);
        Arc::new(SessionPool {
            login_url,
            limit,
            permits: Arc::new(Semaphore::new(limit)),
            idle: Mutex::new(Vec::new()),
            live: AtomicUsize::new(0),
            shrunk: AtomicUsize::new(0),
        })
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit - self.shrunk.load(Ordering::SeqCst)
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Borrow a session, logging in if none is idle and the limit allows.
    pub(crate) async fn checkout(
        self: &Arc<Self>,
        t: &Transport,
        creds: &Credentials,
        wait: Duration,
    ) -> Result<SessionGuard, LoginError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let permit = match tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await {
                Ok(Ok(p)) => p,
                Ok(Err(_)) => return Err(LoginError::Fatal(RedfishError::Closed { bmc: t.bmc.clone() })),
                Err(_) => {
                    return Err(LoginError::Fatal(RedfishError::Busy {
                        bmc: t.bmc.clone(),
                        limit: self.limit(),
                        after: wait,
                    }));
                }
            };
            if let Some(s) = lock(&self.idle).pop() {
                return Ok(SessionGuard { session: Some(s), pool: self.clone(), _permit: permit });
            }
            match login(t, &self.login_url, creds).await {
                Ok(s) => {
                    self.live.fetch_add(1, Ordering::SeqCst);
                    return Ok(SessionGuard { session: Some(s), pool: self.clone(), _permit: permit });
                }
                Err(LoginError::Refused(e)) if self.live() > 0 && self.limit() > 1 => {
                    // Others hold the BMC's remaining slots: never ask for this one again, wait for ours.
                    tracing::warn!(bmc = %t.bmc, error = %e, held = self.live(), "BMC refused another session; shrinking pool");
                    self.shrunk.fetch_add(1, Ordering::SeqCst);
                    permit.forget();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Take every idle session out (for logout), waiting up to `wait` for lent ones to come back.
    pub(crate) async fn drain(&self, wait: Duration) -> Vec<Session> {
        let n = u32::try_from(self.limit()).unwrap_or(u32::MAX);
        let all = tokio::time::timeout(wait, self.permits.acquire_many(n)).await;
        let sessions: Vec<Session> = lock(&self.idle).drain(..).collect();
        self.live.fetch_sub(sessions.len(), Ordering::SeqCst);
        if let Ok(Ok(p)) = all {
            p.forget();
        }
        self.permits.close();
        sessions
    }

    /// Idle sessions left at drop time (no `close` was called).
    pub(crate) fn take_idle(&self) -> Vec<Session> {
        lock(&self.idle).drain(..).collect()
    }
}

/// POST `{UserName, Password}` to the Sessions collection.
pub(crate) async fn login(t: &Transport, url: &Url, creds: &Credentials) -> Result<Session, LoginError> {
    let body = serde_json::json!({"UserName": creds.username, "Password": creds.password});
    let rb = t.http.post(url.clone()).timeout(t.timeout).json(&body);
    let resp = t.send(rb, "POST", url).await.map_err(LoginError::Fatal)?;
    let status = resp.status().as_u16();
    match status {
        404 | 405 | 501 => {
            return Err(LoginError::Unsupported(RedfishError::Login {
                bmc: t.bmc.clone(),
                url: url.to_string(),
                status,
            }));
        }
        401 => {
            return Err(LoginError::Fatal(RedfishError::Login {
                bmc: t.bmc.clone(),
                url: url.to_string(),
                status,
            }));
        }
        s if !(200..300).contains(&s) => {
            return Err(LoginError::Refused(RedfishError::Login {
                bmc: t.bmc.clone(),
                url: url.to_string(),
                status,
            }));
        }
        _ => {}
    }
    let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let Some(token) = header("x-auth-token") else {
        // sushy-static answers every POST with 204 and no token: no real session service.
        return Err(LoginError::Unsupported(RedfishError::Missing {
            bmc: t.bmc.clone(),
            url: url.to_string(),
            what: "X-Auth-Token header in the login reply",
        }));
    };
    let location = header("location");
    let body: Option<serde_json::Value> =
        tokio::time::timeout(t.timeout, resp.json()).await.ok().and_then(Result::ok);
    let from_body =
        body.as_ref().and_then(|b| b.get("@odata.id")).and_then(|v| v.as_str()).map(str::to_owned);
    let uri = location.or(from_body).and_then(|l| t.url(&l).ok());
    if uri.is_none() {
        tracing::warn!(bmc = %t.bmc, "login reply names no session URI; the session cannot be deleted on close");
    }
    Ok(Session { token, uri })
}

/// DELETE a session (logout). Errors are returned for the caller to log: logout is best effort.
pub(crate) async fn logout(t: &Transport, s: &Session) -> Result<(), RedfishError> {
    let Some(uri) = &s.uri else { return Ok(()) };
    let rb = t.http.delete(uri.clone()).timeout(t.timeout).header("X-Auth-Token", &s.token);
    let resp = t.send(rb, "DELETE", uri).await?;
    let status = resp.status().as_u16();
    // 404/401: already gone (expired or deleted by an administrator).
    if resp.status().is_success() || status == 404 || status == 401 {
        Ok(())
    } else {
        Err(RedfishError::Status {
            bmc: t.bmc.clone(),
            method: "DELETE",
            url: uri.to_string(),
            status,
            message: None,
        })
    }
}
