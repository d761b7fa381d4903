//! The CLI's `--server URL` mode: a verb sent through a running server instead of acting locally. The
//! token comes from `$LIFELINE_TOKEN` or a file (`$LIFELINE_TOKEN_FILE`, default
//! `~/.config/lifeline/token`), never from an argument (arguments are visible in `ps`). HTTPS is verified
//! against a pinned certificate fingerprint (`$LIFELINE_SERVER_FINGERPRINT`, as `lifeline serve` prints
//! it), since the default certificate is self-signed. Plain `http://` is refused except to a loopback
//! address, as the server refuses to serve it elsewhere: the bearer token must not cross a network in clear.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no API token: set LIFELINE_TOKEN or put it in {path} (`lifeline token create --user NAME`)")]
    NoToken { path: PathBuf },
    #[error("cannot read the token file {path}")]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "an https:// server needs its certificate fingerprint in LIFELINE_SERVER_FINGERPRINT (printed by `lifeline serve`)"
    )]
    NoFingerprint,
    #[error("building the HTTP client")]
    Build(#[source] reqwest::Error),
    #[error("{url}")]
    Http {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error body (`confirm`: the count an `unconfirmed` refusal asks for).
    #[error("{message}")]
    Api { status: u16, class: String, message: String, confirm: Option<usize> },
    #[error(
        "`{url}`: the token would travel in clear text; use https:// (plain http:// only to a loopback address)"
    )]
    PlainHttp { url: String },
    #[error("`{url}`: expected https://HOST[:PORT] (or http:// to a loopback address)")]
    BadUrl { url: String },
    /// A success whose body is not the type the API documents for it (a server of another version).
    #[error("{path}: the answer does not read as {what}")]
    Body {
        path: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl ClientError {
    /// The error's class, for the CLI's one class → exit-code table: the engine's class the server sent,
    /// or what the server's own refusals amount to (a missing or bad credential is a usage error, a role
    /// that may not or an unconfirmed group action is a refusal, a rate limit a failure to retry later).
    /// Errors before an answer (no token, bad URL) are usage errors; a connection that failed is
    /// `unavailable` (Lifeline could not work), as the CLI's local store errors are.
    pub fn class(&self) -> lifeline_engine::ErrorClass {
        use lifeline_engine::ErrorClass as C;
        match self {
            ClientError::Api { class, .. } => {
                let engine = [C::Usage, C::NotFound, C::Refused, C::Failed, C::Conflict, C::Unavailable];
                match engine.into_iter().find(|c| c.as_str() == class) {
                    Some(c) => c,
                    None => match class.as_str() {
                        "unauthenticated" => C::Usage,
                        "forbidden" | "unconfirmed" => C::Refused,
                        _ => C::Failed,
                    },
                }
            }
            ClientError::NoToken { .. }
            | ClientError::TokenFile { .. }
            | ClientError::NoFingerprint
            | ClientError::PlainHttp { .. }
            | ClientError::BadUrl { .. } => C::Usage,
            ClientError::Build(_) | ClientError::Http { .. } | ClientError::Body { .. } => C::Unavailable,
        }
    }
}

/// Whether `url` may carry the token: `https://`, or `http://` to a loopback address (the server allows
/// plain HTTP only there, behind `ssh -L`). A host name other than `localhost` is not trusted to resolve
/// to loopback.
pub fn check_url(url: &str) -> Result<(), ClientError> {
    if url.starts_with("https://") {
        return Ok(());
    }
    let Some(rest) = url.strip_prefix("http://") else { return Err(ClientError::BadUrl { url: url.into() }) };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(ClientError::BadUrl { url: url.into() });
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback { Ok(()) } else { Err(ClientError::PlainHttp { url: url.into() }) }
}

fn token() -> Result<String, ClientError> {
    if let Ok(t) = std::env::var("LIFELINE_TOKEN")
        && !t.trim().is_empty()
    {
        return Ok(t.trim().to_owned());
    }
    let path = std::env::var_os("LIFELINE_TOKEN_FILE").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .unwrap_or_default()
            .join("lifeline/token")
    });
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_owned()),
        Ok(_) => Err(ClientError::NoToken { path }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ClientError::NoToken { path }),
        Err(source) => Err(ClientError::TokenFile { path, source }),
    }
}

/// Accepts exactly the certificate with the pinned SHA-256 fingerprint.
#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

fn normalise(fp: &str) -> String {
    fp.trim().trim_start_matches("sha256:").replace(':', "").to_ascii_uppercase()
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if normalise(&crate::tls::fingerprint(end_entity.as_ref())) == normalise(&self.fingerprint) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "the server's certificate does not match LIFELINE_SERVER_FINGERPRINT".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A client for one server.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Client {
    pub fn new(url: &str) -> Result<Client, ClientError> {
        check_url(url)?;
        let token = token()?;
        let mut b = reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .connect_timeout(Duration::from_secs(10));
        if url.starts_with("https://") {
            let fp = std::env::var("LIFELINE_SERVER_FINGERPRINT").map_err(|_| ClientError::NoFingerprint)?;
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_safe_default_protocol_versions()
                .map_err(|e| ClientError::Api {
                    status: 0,
                    class: "usage".into(),
                    message: e.to_string(),
                    confirm: None,
                })?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Pinned { fingerprint: fp, provider }))
                .with_no_client_auth();
            b = b.tls_backend_preconfigured(cfg);
        }
        Ok(Client {
            base: url.trim_end_matches('/').to_owned(),
            token,
            http: b.build().map_err(ClientError::Build)?,
        })
    }

    async fn send(&self, req: reqwest::RequestBuilder, url: &str) -> Result<serde_json::Value, ClientError> {
        let resp = req
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|source| ClientError::Http { url: url.into(), source })?;
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap_or(serde_json::Value::Null);
        if (200..300).contains(&status) {
            return Ok(body);
        }
        Err(ClientError::Api {
            status,
            class: body.get("class").and_then(|v| v.as_str()).unwrap_or("failed").to_owned(),
            message: body
                .get("message")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("HTTP {status}")),
            confirm: body
                .get("confirm")
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| usize::try_from(n).ok()),
        })
    }

    pub async fn get(&self, path: &str) -> Result<serde_json::Value, ClientError> {
        let url = format!("{}{path}", self.base);
        self.send(self.http.get(&url), &url).await
    }

    /// GET, the answer read as the API's type `T` for it (see `crate::api::answers` and `model`); the
    /// JSON as sent comes back beside it, so `--json` prints every field even from a newer server.
    pub async fn get_typed<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<(T, serde_json::Value), ClientError> {
        let v = self.get(path).await?;
        Ok((typed(path, &v)?, v))
    }

    /// POST as [`Client::post`], the answer read as `T` (and as sent).
    pub async fn post_typed<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
        request_id: Option<&str>,
    ) -> Result<(T, serde_json::Value), ClientError> {
        let v = self.post(path, body, request_id).await?;
        Ok((typed(path, &v)?, v))
    }

    /// POST with an optional idempotency key (the CLI's `--request-id`).
    pub async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        request_id: Option<&str>,
    ) -> Result<serde_json::Value, ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req = self.http.post(&url).json(body);
        if let Some(id) = request_id {
            req = req.header("Idempotency-Key", id);
        }
        self.send(req, &url).await
    }
}

fn typed<T: serde::de::DeserializeOwned>(path: &str, v: &serde_json::Value) -> Result<T, ClientError> {
    let what = std::any::type_name::<T>();
    T::deserialize(v).map_err(|source| ClientError::Body { path: path.into(), what, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_to_loopback() {
        for ok in [
            "https://jump:7443",
            "http://127.0.0.1:7443",
            "http://127.9.9.9",
            "http://[::1]:7443/",
            "http://localhost:1",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://10.0.0.5:7443",
            "http://jump:7443",
            "http://127.0.0.1.evil.example:80",
            "http://127.0.0.1@evil.example/",
            "http://[::ffff:10.0.0.1]:1",
            "ftp://127.0.0.1",
            "127.0.0.1:7443",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
    }
}
