//! HTTP plumbing of one BMC: the base URL, redirects kept within the BMC, bounded sends, and turning replies
//! into JSON or typed errors. Shared by the client, the session pool and the certificate probe.

use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use lifeline_types::Fingerprint;

use super::{BmcTarget, ClientOptions};
use crate::error::RedfishError;
use crate::session::SessionGuard;
use crate::tls::{Resume, SharedPinState, TlsTrust, client_config, lock};

/// HTTP plumbing shared by the client and the session pool.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub bmc: String,
    pub base: Url,
    pub http: reqwest::Client,
    pub pin: Option<SharedPinState>,
    pub timeout: Duration,
    /// Connections `http` has established (`super::connected`).
    pub connected: tokio::sync::watch::Receiver<u64>,
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// [`Transport::url`] without a transport (a pure function of the base URL, so it can be fuzzed).
pub fn resolve_link(bmc: &str, base: &Url, link: &str) -> Result<Url, RedfishError> {
    let mut u = base.join(link).map_err(|e| RedfishError::Url {
        bmc: bmc.to_owned(),
        url: link.to_owned(),
        source: Box::new(e),
    })?;
    if !same_origin(&u, base) {
        return Err(RedfishError::ForeignLink {
            bmc: bmc.to_owned(),
            base: base.to_string(),
            link: link.to_owned(),
        });
    }
    u.set_fragment(None);
    Ok(u)
}

impl Transport {
    pub(super) fn build(
        bmc: &str,
        base: &Url,
        tls: Option<rustls::ClientConfig>,
        opts: &ClientOptions,
        connected: &super::connected::Connected,
    ) -> Result<reqwest::Client, RedfishError> {
        let origin = base.clone();
        // sushy redirects member names to UUID paths (307); follow only within the BMC, so tokens never leak.
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("more than 5 redirects")
            } else if same_origin(attempt.url(), &origin) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let b = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(opts.connect_timeout)
            .pool_max_idle_per_host(opts.max_concurrent_requests.max(1))
            .pool_idle_timeout(Duration::from_secs(30))
            .connector_layer(connected.clone())
            .user_agent(concat!("lifeline-redfish/", env!("CARGO_PKG_VERSION")));
        let mut cfg = match tls {
            Some(cfg) => cfg,
            None => crate::tls::trust_nothing_config()
                .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })?,
        };
        let b = if opts.http2 {
            b
        } else {
            cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
            b.http1_only()
        };
        b.tls_backend_preconfigured(cfg)
            .build()
            .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })
    }

    /// Resolve a link (path or absolute URL) against the BMC; refuse other hosts; drop `#fragments`
    /// (legacy Thermal members link to `Thermal#/Temperatures/0`).
    pub(crate) fn url(&self, link: &str) -> Result<Url, RedfishError> {
        resolve_link(&self.bmc, &self.base, link)
    }

    /// Send, mapping transport failures: a refused pin becomes `CertificateChanged`.
    pub(crate) async fn send(
        &self,
        rb: reqwest::RequestBuilder,
        method: &'static str,
        url: &Url,
    ) -> Result<reqwest::Response, RedfishError> {
        self.send_within(rb, method, url, self.timeout).await
    }

    /// [`Transport::send`] with the time the request may take (an upload's own).
    pub(crate) async fn send_within(
        &self,
        rb: reqwest::RequestBuilder,
        method: &'static str,
        url: &Url,
        within: Duration,
    ) -> Result<reqwest::Response, RedfishError> {
        // reqwest's own timeout covers the request; this outer one guarantees a bound even if it did not.
        let outer = within + Duration::from_secs(1);
        match tokio::time::timeout(outer, rb.send()).await {
            Err(_) => Err(RedfishError::Timeout {
                bmc: self.bmc.clone(),
                method,
                url: url.to_string(),
                after: outer,
            }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(self.map_err(e, method, url)),
        }
    }

    pub(crate) fn map_err(&self, e: reqwest::Error, method: &'static str, url: &Url) -> RedfishError {
        if let Some(pin) = &self.pin
            && let Some((pinned, presented)) = lock(pin).mismatch
        {
            return RedfishError::CertificateChanged { bmc: self.bmc.clone(), pinned, presented };
        }
        if e.is_timeout() {
            return RedfishError::Timeout {
                bmc: self.bmc.clone(),
                method,
                url: url.to_string(),
                after: self.timeout,
            };
        }
        RedfishError::Http { bmc: self.bmc.clone(), method, url: url.to_string(), source: e }
    }
}

/// A Redfish error body's most useful message.
pub(super) fn error_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    let ext = e
        .get("@Message.ExtendedInfo")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|i| i.get("Message"))
        .and_then(Value::as_str);
    ext.or_else(|| e.get("message").and_then(Value::as_str)).map(|s| s.chars().take(300).collect())
}

pub(super) fn method_name(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        _ => "HTTP",
    }
}

/// A reply whose body has not been read yet, holding its request slot and session until then.
pub(crate) struct Reply {
    pub resp: reqwest::Response,
    pub url: Url,
    pub method: &'static str,
    pub guard: Option<SessionGuard>,
    pub _slot: Option<OwnedSemaphorePermit>,
}

pub(super) fn parse_base(target: &BmcTarget) -> Result<Url, RedfishError> {
    let mut u = Url::parse(&target.url).map_err(|e| RedfishError::Url {
        bmc: target.name.clone(),
        url: target.url.clone(),
        source: Box::new(e),
    })?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(RedfishError::Url {
            bmc: target.name.clone(),
            url: target.url.clone(),
            source: "expected http(s)://host[:port]".into(),
        });
    }
    u.set_path("/");
    u.set_query(None);
    u.set_fragment(None);
    Ok(u)
}

pub(super) async fn tls_config(
    bmc: &str,
    trust: &TlsTrust,
    pinned: Option<Fingerprint>,
    resume: Resume,
) -> Result<(rustls::ClientConfig, SharedPinState), RedfishError> {
    // Only a CA file is blocking I/O; pins and in-memory CAs are built here, without a thread hand-off per
    // BMC (a fleet sweep connects to thousands).
    let r = if matches!(trust, TlsTrust::CaFile(_)) {
        let trust2 = trust.clone();
        tokio::task::spawn_blocking(move || client_config(&trust2, pinned, &resume))
            .await
            .map_err(|e| RedfishError::Build { bmc: bmc.to_owned(), source: Box::new(e) })?
    } else {
        client_config(trust, pinned, &resume)
    };
    r.map_err(|e| match (e, trust) {
        (crate::tls::TlsSetupError::Io(source, path), _) => {
            RedfishError::CaFile { bmc: bmc.to_owned(), path, source }
        }
        (crate::tls::TlsSetupError::Empty(path), _) => RedfishError::CaEmpty { bmc: bmc.to_owned(), path },
        (crate::tls::TlsSetupError::Rustls(source), _) => RedfishError::Build { bmc: bmc.to_owned(), source },
    })
}

pub(super) fn is_connect(e: &RedfishError) -> bool {
    matches!(e, RedfishError::Http { source, .. } if source.is_connect())
}

/// The most bytes one reply may carry. A document is kilobytes and an expanded log of thousands of entries
/// a few megabytes; a BMC that sends without end must not fill the controller's memory, one per BMC.
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// The whole body of `resp`, within the request timeout and [`MAX_BODY_BYTES`].
async fn bounded_body(
    t: &Transport,
    mut resp: reqwest::Response,
    method: &'static str,
    url: &Url,
) -> Result<bytes::Bytes, RedfishError> {
    let too_large = || RedfishError::BodyTooLarge {
        bmc: t.bmc.clone(),
        method,
        url: url.to_string(),
        limit: MAX_BODY_BYTES,
    };
    if resp.content_length().is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    let read = async {
        // One chunk (most replies) is returned as it came, without a copy.
        let mut first: Option<bytes::Bytes> = None;
        let mut more = bytes::BytesMut::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| t.map_err(e, method, url))? {
            let had = first.as_ref().map_or(0, bytes::Bytes::len) + more.len();
            if had + chunk.len() > MAX_BODY_BYTES {
                return Err(too_large());
            }
            match &first {
                None => first = Some(chunk),
                Some(f) => {
                    if more.is_empty() {
                        more.extend_from_slice(f);
                    }
                    more.extend_from_slice(&chunk);
                }
            }
        }
        Ok(if more.is_empty() { first.unwrap_or_default() } else { more.freeze() })
    };
    match tokio::time::timeout(t.timeout, read).await {
        Err(_) => {
            Err(RedfishError::Timeout { bmc: t.bmc.clone(), method, url: url.to_string(), after: t.timeout })
        }
        Ok(r) => r,
    }
}

pub(super) async fn body_bytes(t: &Transport, reply: Reply) -> Result<bytes::Bytes, RedfishError> {
    let Reply { resp, url, method, guard, _slot } = reply;
    let r = bounded_body(t, resp, method, &url).await;
    drop(guard);
    r
}

pub(super) async fn read_reply(t: &Transport, reply: Reply) -> Result<Value, RedfishError> {
    let status = reply.resp.status();
    let (url, method) = (reply.url.clone(), reply.method);
    let bytes = body_bytes(t, reply).await?;
    parse_json(t, status, &bytes, method, &url)
}

pub(super) async fn read_json(
    t: &Transport,
    resp: reqwest::Response,
    method: &'static str,
    url: &Url,
) -> Result<Value, RedfishError> {
    let status = resp.status();
    let bytes = bounded_body(t, resp, method, url).await?;
    parse_json(t, status, &bytes, method, url)
}

fn parse_json(
    t: &Transport,
    status: StatusCode,
    bytes: &[u8],
    method: &'static str,
    url: &Url,
) -> Result<Value, RedfishError> {
    if !status.is_success() {
        return Err(RedfishError::Status {
            bmc: t.bmc.clone(),
            method,
            url: url.to_string(),
            status: status.as_u16(),
            message: error_message(bytes),
        });
    }
    serde_json::from_slice(bytes).map_err(|source| RedfishError::Json {
        bmc: t.bmc.clone(),
        url: url.to_string(),
        source,
    })
}
