//! Sending one authenticated request: the per-BMC request slots, a session token (or HTTP Basic when the
//! BMC has no usable SessionService), one re-login on 401, and the JSON helpers built on it.

use std::sync::atomic::Ordering;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Client;
use super::transport::{Reply, body_bytes, error_message, method_name, read_reply};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::session::{LoginError, SessionGuard};

/// What a request carries.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    None,
    Json(&'a Value),
    /// A body made afresh for each attempt (a re-login resends it), with its content type and length, and
    /// the time the whole request may take (an image upload takes longer than a JSON request).
    Upload {
        make: &'a (dyn Fn() -> Result<reqwest::Body, RedfishError> + Sync),
        content_type: &'a str,
        length: u64,
        within: std::time::Duration,
    },
}

impl<'a> From<Option<&'a Value>> for Payload<'a> {
    fn from(b: Option<&'a Value>) -> Self {
        b.map_or(Payload::None, Payload::Json)
    }
}

impl Client {
    /// Send one request with auth, within the request-slot limit; re-login once on 401.
    pub(crate) async fn request(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
    ) -> Result<Reply, RedfishError> {
        self.request_inner(method, link, body.into(), false, &[]).await
    }

    /// POST an uploaded body (a multipart firmware push), with the same auth, slots and re-login.
    pub(crate) async fn request_upload(
        &self,
        link: &str,
        payload: Payload<'_>,
    ) -> Result<Reply, RedfishError> {
        self.request_inner(Method::POST, link, payload, false, &[]).await
    }

    /// [`Client::request`] with extra headers (`If-Match`).
    pub(crate) async fn request_with(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
        headers: &[(&'static str, &str)],
    ) -> Result<Reply, RedfishError> {
        self.request_inner(method, link, body.into(), false, headers).await
    }

    /// GET for a never-ending body (SSE): no total timeout (the caller applies an idle limit), and the request
    /// slot is released once headers arrive; the session stays lent to the stream.
    pub(crate) async fn request_stream(&self, link: &str) -> Result<Reply, RedfishError> {
        let mut r = self.request_inner(Method::GET, link, Payload::None, true, &[]).await?;
        r._slot = None;
        Ok(r)
    }

    async fn request_inner(
        &self,
        method: Method,
        link: &str,
        body: Payload<'_>,
        stream: bool,
        headers: &[(&'static str, &str)],
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
        let work = async {
            for attempt in 0..2 {
                let mut guard = self.session().await?;
                let mut rb = t.http.request(method.clone(), url.clone());
                let within = match body {
                    Payload::Upload { within, .. } => within,
                    _ => t.timeout,
                };
                rb = if stream { rb.header("Accept", "text/event-stream") } else { rb.timeout(within) };
                rb = match &guard {
                    Some(g) => rb.header("X-Auth-Token", g.token()),
                    None => rb.basic_auth(&inner.creds.username, Some(&inner.creds.password)),
                };
                for (k, v) in headers {
                    rb = rb.header(*k, *v);
                }
                match body {
                    Payload::None => {}
                    Payload::Json(b) => rb = rb.json(b),
                    Payload::Upload { make, content_type, length, .. } => {
                        rb = rb
                            .header("Content-Type", content_type)
                            .header("Content-Length", length.to_string())
                            .body(make()?);
                    }
                }
                let resp = t.send_within(rb, mname, &url, within).await?;
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
        };
        // Until this client has a connection up, its first request goes alone (and the others wait for that
        // connection): see `opening`.
        match self.opening().await {
            None => work.await,
            Some(gate) => {
                tokio::pin!(work);
                let mut up = t.connected.clone();
                tokio::select! {
                    r = &mut work => r,
                    // The watch's read guard is dropped in here: it must not live across the await below.
                    () = async { drop(up.wait_for(|n| *n > 0).await) } => {
                        drop(gate);
                        work.await
                    }
                }
            }
        }
    }

    /// The gate of a client with no connection up yet: `Some` for the one request that may open it, after
    /// the requests before it gave up theirs without a connection; `None` once one is up. Why: until ALPN
    /// has answered, hyper cannot know that the BMC multiplexes, so requests sent at once to a client with
    /// no connection each open a TLS connection of their own. A client that adopted a kept session
    /// (`held`) sends its first reads all at once, and on 1,000 simulated BMCs the extra handshakes made a
    /// warm sweep cost more CPU than logging in (whose single-flight login had opened the one connection).
    async fn opening(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        let up = || *self.inner.t.connected.borrow() > 0;
        if up() {
            return None;
        }
        let gate = self.inner.opening.lock().await;
        (!up()).then_some(gate)
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
            Err(LoginError::Refused(e @ RedfishError::SessionLimit { .. })) => {
                self.at_session_limit(pool, e).await
            }
            Err(LoginError::Refused(e) | LoginError::Fatal(e)) => Err(e),
        }
    }

    /// The BMC refused the login at its session limit: the caller's own stale sessions there are deleted
    /// first (`free_stale_sessions`) and the login tried once more; a refusal that stands names the limit
    /// (the sessions the BMC lists) and what was freed.
    async fn at_session_limit(
        &self,
        pool: &std::sync::Arc<crate::session::SessionPool>,
        first: RedfishError,
    ) -> Result<Option<SessionGuard>, RedfishError> {
        let inner = &self.inner;
        let freed = match &inner.opts.free_stale_sessions {
            Some(free) => (free.0)(inner.t.bmc.clone()).await,
            None => 0,
        };
        let mut err = first;
        if freed > 0 {
            match pool.checkout(&inner.t, &inner.creds, inner.opts.queue_timeout).await {
                Ok(g) => {
                    tracing::warn!(bmc = %inner.t.bmc, freed, "the BMC was at its session limit: deleted stale sessions of ours there and logged in");
                    return Ok(Some(g));
                }
                Err(LoginError::Refused(e) | LoginError::Fatal(e) | LoginError::Unsupported(e)) => err = e,
            }
        }
        if let RedfishError::SessionLimit { url, listed, freed: f, .. } = &mut err {
            *f = freed;
            *listed = crate::session::listed_sessions(&inner.t, url, &inner.creds).await;
        }
        Err(err)
    }

    /// GET a document as JSON, with the platform's repairs applied. Repairs are returned as notes.
    pub async fn get_json(&self, link: &str) -> Result<(Value, Vec<FieldWarning>), RedfishError> {
        self.get_shared(link).await
    }

    /// [`Client::get_json`] from the BMC, never shared (`memo`).
    pub(super) async fn get_json_now(&self, link: &str) -> Result<(Value, Vec<FieldWarning>), RedfishError> {
        if let Some(early) = &self.inner.early
            && let Some(mut v) = early.take(link).await
        {
            let path = link.split('?').next().unwrap_or(link);
            let notes = self.inner.profile.repair(&mut v, path);
            return Ok((v, notes));
        }
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
        self.send_json_if_match(method, link, body, None).await
    }

    /// [`Client::send_json`] with `If-Match` (a change guarded by the ETag the caller read).
    pub(crate) async fn send_json_if_match(
        &self,
        method: Method,
        link: &str,
        body: Option<&Value>,
        etag: Option<&str>,
    ) -> Result<Option<Value>, RedfishError> {
        let reply = match etag {
            Some(e) => self.request_with(method, link, body, &[("If-Match", e)]).await?,
            None => self.request(method, link, body).await?,
        };
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
}
