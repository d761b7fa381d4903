//! Redfish token sessions: one session per client, its token shared by every request in flight.
//!
//! Why one shared token: BMCs allow few concurrent sessions (often 2-8, shared with the web UI and other
//! tools), and a token is only a credential, not a channel: DSP0266 lets any number of requests carry it at
//! once. A client that logged in per concurrent request would take several of the BMC's slots (and pay a
//! login round trip each) just to read one BMC a few documents at a time. So: one session, created lazily
//! by the first request that needs it (single flight: concurrent first requests wait for that one login),
//! re-created once when the BMC answers 401 (expired, BMC rebooted) — again once for every request that saw
//! the same dead token — and DELETEd on `close` (best effort on drop).

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

#[derive(Debug)]
pub(crate) enum LoginError {
    /// The BMC has no working session login here: use Basic instead.
    Unsupported(RedfishError),
    /// The BMC refused (limit reached, overloaded).
    Refused(RedfishError),
    Fatal(RedfishError),
}

/// Requests that may hold the token at once (far above any per-BMC request limit; `drain` waits for all).
const USERS: u32 = 1 << 16;

#[derive(Debug)]
pub(crate) struct SessionPool {
    login_url: Url,
    /// The session in use, if logged in.
    current: Mutex<Option<Arc<Session>>>,
    /// Held while logging in, so concurrent requests wait for one login instead of each making one.
    login: tokio::sync::Mutex<()>,
    /// One permit per request holding the token; closed by `drain`.
    users: Arc<Semaphore>,
    /// Sessions that exist on the BMC (0 or 1).
    live: AtomicUsize,
    /// Logins made (the first and every re-login), for tests and logs.
    logins: AtomicUsize,
    /// How a speculative login at this pool's URL failed (`crate::prelogin`): the first login's answer,
    /// already had, so the first checkout returns it instead of asking again.
    first_failure: Mutex<Option<LoginError>>,
    /// The BMC refused these credentials (401 to a login, at this URL): every later checkout gets that
    /// answer without asking again. A health read and an event read at once each asked, and each try
    /// counts toward the BMC's lockout of the account (three failed logins per visit, measured).
    rejected: Mutex<Option<(String, u16)>>,
    /// Told of each session logged in here before its token is lent (`ClientOptions::record_sessions`).
    record: Option<crate::client::SessionRecorder>,
}

/// The token lent to one request; many guards share one session.
#[derive(Debug)]
pub(crate) struct SessionGuard {
    session: Arc<Session>,
    pool: Arc<SessionPool>,
    _permit: OwnedSemaphorePermit,
}

impl SessionGuard {
    pub(crate) fn token(&self) -> &str {
        &self.session.token
    }

    /// The BMC no longer accepts this token (401): forget it (it is gone on the BMC side), unless another
    /// request already replaced it.
    pub(crate) fn invalidate(self) {
        let mut cur = lock(&self.pool.current);
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, &self.session)) {
            *cur = None;
            self.pool.live.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionPool {
    pub(crate) fn new(login_url: Url, record: Option<crate::client::SessionRecorder>) -> Arc<Self> {
        Arc::new(SessionPool {
            login_url,
            current: Mutex::new(None),
            login: tokio::sync::Mutex::new(()),
            users: Arc::new(Semaphore::new(USERS as usize)),
            live: AtomicUsize::new(0),
            logins: AtomicUsize::new(0),
            first_failure: Mutex::new(None),
            rejected: Mutex::new(None),
            record,
        })
    }

    /// Writes a session just opened down (see `record`), before any request carries its token.
    pub(crate) async fn record_opened(&self, bmc: &str, s: &Session) {
        if let (Some(r), Some(uri)) = (&self.record, &s.uri) {
            r.0.opened(bmc, uri.as_str(), &s.token).await;
        }
    }

    pub(crate) fn login_url(&self) -> &Url {
        &self.login_url
    }

    /// Takes a session made by a speculative login as the current one (a token is valid BMC-wide, whichever
    /// collection URI created it). Only before the client is shared: nothing can be logged in yet.
    pub(crate) fn adopt(&self, s: Session) {
        self.logins.fetch_add(1, Ordering::SeqCst);
        self.live.fetch_add(1, Ordering::SeqCst);
        *lock(&self.current) = Some(Arc::new(s));
    }

    /// Takes a session an earlier client of this BMC released (`crate::client::held`) as the current one,
    /// unless this client already has one or is closed: then the session comes back to the caller. Not a
    /// login (no request was sent for it).
    pub(crate) fn adopt_held(&self, s: Session) -> Result<(), Session> {
        let mut cur = lock(&self.current);
        if cur.is_some() || self.users.is_closed() {
            return Err(s);
        }
        self.live.fetch_add(1, Ordering::SeqCst);
        *cur = Some(Arc::new(s));
        Ok(())
    }

    /// The speculative login at this pool's own URL failed: the first checkout reports that, as if it had
    /// logged in itself (a second attempt would get the same answer, and count twice toward a lockout).
    pub(crate) fn set_first_failure(&self, e: LoginError) {
        self.note_rejection(&e);
        *lock(&self.first_failure) = Some(e);
    }

    /// Remembers a refusal of the credentials (see `rejected`).
    fn note_rejection(&self, e: &LoginError) {
        if let LoginError::Fatal(RedfishError::Login { url, status: 401, .. }) = e {
            *lock(&self.rejected) = Some((url.clone(), 401));
        }
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    pub(crate) fn logins(&self) -> usize {
        self.logins.load(Ordering::SeqCst)
    }

    fn current(&self) -> Option<Arc<Session>> {
        lock(&self.current).clone()
    }

    /// Borrow the session's token, logging in first when there is none (one login at a time).
    pub(crate) async fn checkout(
        self: &Arc<Self>,
        t: &Transport,
        creds: &Credentials,
        wait: Duration,
    ) -> Result<SessionGuard, LoginError> {
        let closed = || LoginError::Fatal(RedfishError::Closed { bmc: t.bmc.clone() });
        let permit = self.users.clone().try_acquire_owned().map_err(|_| closed())?;
        if let Some(s) = self.current() {
            return Ok(SessionGuard { session: s, pool: self.clone(), _permit: permit });
        }
        let busy = || LoginError::Fatal(RedfishError::Busy { bmc: t.bmc.clone(), limit: 1, after: wait });
        let _login = tokio::time::timeout(wait, self.login.lock()).await.map_err(|_| busy())?;
        // Another request logged in while this one waited.
        if let Some(s) = self.current() {
            return Ok(SessionGuard { session: s, pool: self.clone(), _permit: permit });
        }
        if self.users.is_closed() {
            return Err(closed());
        }
        if let Some(e) = lock(&self.first_failure).take() {
            return Err(e);
        }
        if let Some((url, status)) = lock(&self.rejected).clone() {
            return Err(LoginError::Fatal(RedfishError::Login { bmc: t.bmc.clone(), url, status }));
        }
        let s = match login(t, &self.login_url, creds).await {
            Ok(s) => Arc::new(s),
            Err(e) => {
                self.note_rejection(&e);
                return Err(e);
            }
        };
        self.record_opened(&t.bmc, &s).await;
        self.logins.fetch_add(1, Ordering::SeqCst);
        self.live.fetch_add(1, Ordering::SeqCst);
        *lock(&self.current) = Some(s.clone());
        Ok(SessionGuard { session: s, pool: self.clone(), _permit: permit })
    }

    /// Take the session out (for logout), after waiting up to `wait` for the requests holding its token;
    /// no request gets the token afterwards.
    pub(crate) async fn drain(&self, wait: Duration) -> Vec<Session> {
        let all = tokio::time::timeout(wait, self.users.acquire_many(USERS)).await;
        if let Ok(Ok(p)) = all {
            p.forget();
        }
        self.users.close();
        // A login in flight finishes before the session is taken (it would be orphaned otherwise).
        let _login = tokio::time::timeout(wait, self.login.lock()).await;
        self.take_idle()
    }

    /// The session left at drop time (no `close` was called), or after `drain`.
    pub(crate) fn take_idle(&self) -> Vec<Session> {
        let taken = lock(&self.current).take();
        if taken.is_some() {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
        taken.map(|s| (*s).clone()).into_iter().collect()
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
            let body = tokio::time::timeout(t.timeout, resp.bytes()).await.ok().and_then(Result::ok);
            if let Some(message) = session_limit_message(s, body.as_deref().unwrap_or_default()) {
                return Err(LoginError::Refused(RedfishError::SessionLimit {
                    bmc: t.bmc.clone(),
                    url: url.to_string(),
                    status,
                    message,
                    listed: None,
                    freed: 0,
                }));
            }
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

/// A refused login's answer, when it says the BMC's session table is full: the DMTF Base registry's
/// `SessionLimitExceeded`, iDRAC's `RAC0218` ("The maximum number of user sessions is reached."), words
/// naming a session limit, or a bare 503 (the status both use). Returns the BMC's own message (the first
/// extended info's, else the error's), else the status's meaning. Pure: any bytes are read without panic.
pub(crate) fn session_limit_message(status: u16, body: &[u8]) -> Option<String> {
    let doc: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let err = doc.as_ref().and_then(|d| d.get("error"));
    let infos: Vec<&serde_json::Value> = err
        .and_then(|e| e.get("@Message.ExtendedInfo"))
        .and_then(|i| i.as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(|m| m.as_str()).map(str::to_owned);
    let mut words: Vec<String> =
        infos.iter().flat_map(|i| [text(i, "MessageId"), text(i, "Message")]).flatten().collect();
    words.extend(err.into_iter().flat_map(|e| [text(e, "code"), text(e, "message")]).flatten());
    if doc.is_none() {
        words.push(String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned());
    }
    let says_limit = words.iter().any(|w| {
        let w = w.to_ascii_lowercase();
        w.contains("sessionlimitexceeded")
            || w.contains("rac0218")
            || (w.contains("session") && (w.contains("limit") || w.contains("maximum number")))
    });
    if !says_limit && status != 503 {
        return None;
    }
    let message = infos
        .iter()
        .find_map(|i| text(i, "Message"))
        .or_else(|| err.and_then(|e| text(e, "message")))
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| format!("HTTP {status}: service unavailable"));
    Some(message.chars().take(300).collect())
}

/// How many sessions the BMC lists in its Sessions collection at `url`, read with HTTP Basic (which opens
/// no session): at a refused login, the limit it is at.
pub(crate) async fn listed_sessions(t: &Transport, url: &str, creds: &Credentials) -> Option<usize> {
    let url = Url::parse(url).ok()?;
    let rb = t.http.get(url.clone()).timeout(t.timeout).basic_auth(&creds.username, Some(&creds.password));
    let resp = t.send(rb, "GET", &url).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let doc: serde_json::Value = tokio::time::timeout(t.timeout, resp.json()).await.ok()?.ok()?;
    doc.get("Members@odata.count")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .or_else(|| doc.get("Members").and_then(|m| m.as_array()).map(Vec::len))
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

#[cfg(test)]
mod tests {
    use super::session_limit_message;
    use proptest::prelude::*;

    #[test]
    fn session_limit_answers_are_read_as_bmcs_give_them() {
        // iDRAC: a general error whose extended info is RAC0218.
        let idrac = br#"{"error":{"code":"Base.1.12.GeneralError","message":"A general error has occurred. See ExtendedInfo for more information","@Message.ExtendedInfo":[{"Message":"The maximum number of user sessions is reached.","MessageId":"IDRAC.2.9.RAC0218","Resolution":"Close one or more sessions before opening another session."}]}}"#;
        assert_eq!(
            session_limit_message(503, idrac).as_deref(),
            Some("The maximum number of user sessions is reached.")
        );
        // The DMTF Base registry's message, whatever the status.
        let dmtf = br#"{"error":{"code":"Base.1.8.SessionLimitExceeded","message":"The session establishment failed due to the number of simultaneous sessions exceeding the limit of the implementation."}}"#;
        assert!(session_limit_message(400, dmtf).unwrap().contains("simultaneous sessions"));
        // A bare 503 (no body) is a full session table as far as a login can tell.
        assert_eq!(session_limit_message(503, b"").as_deref(), Some("HTTP 503: service unavailable"));
        // Other refusals are not.
        let bad = br#"{"error":{"code":"Base.1.8.PropertyMissing","message":"UserName is missing"}}"#;
        assert_eq!(session_limit_message(400, bad), None);
        assert_eq!(session_limit_message(403, b"<html>Forbidden</html>"), None);
        assert!(session_limit_message(429, b"Session limit reached").is_some());
    }

    proptest! {
        #[test]
        fn any_answer_is_read_without_panic(status in 300u16..600, body in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Some(m) = session_limit_message(status, &body) {
                prop_assert!(!m.is_empty() && m.chars().count() <= 300);
            }
        }
    }
}
