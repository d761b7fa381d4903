//! Lifeline serving an installer image itself, for BMCs that must pull one (`media insert --serve FILE`).
//!
//! Why its own listener and not the API's: it is bound to the jump host's OOB address (`[image-server]
//! listen`, never every address by default), it answers only `GET`/`HEAD` of one path shape, and what it
//! answers depends on nothing but a token: `/image/TOKEN/NAME`, one image per token, each token made for
//! one insert, expiring, kept hashed ([`tokens`]), answering only requests from the BMC's own addresses.
//! An unknown, expired or revoked token, another name, or a request from another source address gets 404
//! and not a byte of any image. Ranges (a BMC mounts an ISO by reading ranges of it), `HEAD`
//! and conditional requests are tower-http's `ServeFile`; TLS is rustls.

pub mod library;
pub mod tokens;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::ImageServerConfig;
pub use library::{ImageInfo, Images};
pub use tokens::{Offer, Served, Tokens, redact};

/// The default life of a token.
pub const DEFAULT_TTL: Duration = Duration::from_secs(2 * 3600);
/// The longest a token may live.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// A TLS handshake that takes longer is dropped.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ImageServeError {
    #[error("`[image-server] listen` is not set: give the jump host's OOB address, ADDR:PORT")]
    NoListen,
    #[error("`[image-server] listen`: `{0}` is not ADDR:PORT (e.g. `10.0.0.5:8443`)")]
    Listen(String),
    #[error(
        "`[image-server] listen`: `{0}` is every address of the jump host; give its OOB address (the image \
         server must not answer on other networks)"
    )]
    Unspecified(String),
    #[error("`[image-server] token-ttl`: {0}")]
    Ttl(String),
    #[error("`[image-server] tls-cert` and `tls-key`: give both, or neither")]
    OnlyOne,
    #[error("`[image-server]` TLS: {0}")]
    Tls(String),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Image { path: PathBuf, why: String },
    #[error("no random bytes for a token")]
    Random,
    #[error("no address of the BMC to tie the image's token to")]
    NoSource,
    #[error("served image `{name}`: {why} (images directory {})", dir.display())]
    NotServed { name: String, dir: PathBuf, why: String },
    #[error("images directory {}", dir.display())]
    ImagesDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "no images directory: set `[image-server] images` to the directory whose files are served by name"
    )]
    NoImages,
    #[error(
        "the image server is not running: served images are served by `lifeline serve` with `[image-server] \
         listen` set"
    )]
    NotRunning,
}

/// `[image-server]` checked: what [`ImageServer::start`] needs. One check for the server start and
/// `lifeline config check`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub tls: Option<(PathBuf, PathBuf)>,
    pub ttl: Duration,
}

impl Settings {
    pub fn from_config(c: &ImageServerConfig) -> Result<Settings, ImageServeError> {
        let text = c.listen.as_deref().ok_or(ImageServeError::NoListen)?;
        let listen: SocketAddr = text.parse().map_err(|_| ImageServeError::Listen(text.to_owned()))?;
        if listen.ip().is_unspecified() {
            return Err(ImageServeError::Unspecified(text.to_owned()));
        }
        let ttl = match &c.token_ttl {
            None => DEFAULT_TTL,
            Some(t) => {
                humantime::parse_duration(t).map_err(|e| ImageServeError::Ttl(format!("`{t}`: {e}")))?
            }
        };
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err(ImageServeError::Ttl(format!(
                "`{}` is not between 1s and 7d",
                c.token_ttl.as_deref().unwrap_or_default()
            )));
        }
        let tls = match (&c.tls_cert, &c.tls_key) {
            (None, None) => None,
            (Some(a), Some(b)) => Some((a.clone(), b.clone())),
            _ => return Err(ImageServeError::OnlyOne),
        };
        Ok(Settings { listen, tls, ttl })
    }
}

struct Shared {
    tokens: Tokens,
}

/// A running image server. Dropping it stops it.
pub struct ImageServer {
    addr: SocketAddr,
    fingerprint: String,
    ttl: Duration,
    shared: Arc<Shared>,
    cancel: CancellationToken,
}

impl Drop for ImageServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn tls_config(s: &Settings) -> Result<(Arc<rustls::ServerConfig>, String), ImageServeError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let tls = |e: &dyn std::fmt::Display| ImageServeError::Tls(e.to_string());
    let (chain, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) = match &s.tls {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| tls(&format!("{}: {e}", cert.display())))?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| tls(&format!("{}: {e}", key.display())))?;
            (chain, key)
        }
        None => {
            let c =
                rcgen::generate_simple_self_signed(vec![s.listen.ip().to_string()]).map_err(|e| tls(&e))?;
            let key = PrivateKeyDer::try_from(c.signing_key.serialize_der()).map_err(|e| tls(&e))?;
            (vec![c.cert.der().clone()], key)
        }
    };
    let leaf = chain.first().ok_or_else(|| tls(&"no certificate in tls-cert"))?;
    let fingerprint = hex::encode(ring::digest::digest(&ring::digest::SHA256, leaf.as_ref()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| tls(&e))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(cfg), fingerprint))
}

impl ImageServer {
    /// Binds `s.listen` and serves until dropped or [`ImageServer::stop`]ped.
    pub async fn start(s: &Settings) -> Result<ImageServer, ImageServeError> {
        let (tls, fingerprint) = tls_config(s)?;
        let listener = TcpListener::bind(s.listen)
            .await
            .map_err(|source| ImageServeError::Bind { addr: s.listen, source })?;
        let addr =
            listener.local_addr().map_err(|source| ImageServeError::Bind { addr: s.listen, source })?;
        let shared = Arc::new(Shared { tokens: Tokens::default() });
        let cancel = CancellationToken::new();
        let app = axum::Router::new()
            .route("/image/{token}/{name}", axum::routing::any(fetch))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .with_state(shared.clone());
        tokio::spawn(accept_loop(listener, tokio_rustls::TlsAcceptor::from(tls), app, cancel.clone()));
        Ok(ImageServer { addr, fingerprint, ttl: s.ttl, shared, cancel })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// SHA-256 of the certificate the server presents (hex).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Offers `file` under a fresh token to the BMC whose requests come from `from` (its addresses): the
    /// URL for that BMC, and the offer (its token's id and expiry).
    /// `owner`: the BMC's name, whose tokens [`ImageServer::revoke`] ends (its eject, its run's end).
    pub fn offer(
        &self,
        file: &Path,
        owner: &str,
        from: &[IpAddr],
    ) -> Result<(String, Offer), ImageServeError> {
        let (path, name) = image_file(file)?;
        self.shared.tokens.forget_expired(Instant::now());
        if from.is_empty() {
            return Err(ImageServeError::NoSource);
        }
        let o = self
            .shared
            .tokens
            .issue(&path, &name, owner, from, self.ttl)
            .map_err(|_| ImageServeError::Random)?;
        Ok((format!("https://{}/image/{}/{}", self.addr, o.token, o.name), o))
    }

    /// Ends the live tokens made for `owner` (its media ejected, its run ended): what they served.
    pub fn revoke(&self, owner: &str) -> Vec<Served> {
        self.shared.tokens.revoke_owner(owner)
    }

    /// What each token served so far, and how many requests were refused.
    pub fn served(&self) -> (Vec<Served>, u64) {
        self.shared.tokens.served()
    }

    /// When the last token expires.
    pub fn last_deadline(&self) -> Option<Instant> {
        self.shared.tokens.last_deadline()
    }

    /// Revokes every token and stops listening; returns what was served.
    pub fn stop(self) -> (Vec<Served>, u64) {
        self.shared.tokens.revoke_all();
        self.cancel.cancel();
        self.served()
    }
}

/// The image to serve: a readable regular file whose name a BMC can take in a URL unchanged.
fn image_file(file: &Path) -> Result<(PathBuf, String), ImageServeError> {
    let bad = |why: &str| ImageServeError::Image { path: file.to_owned(), why: why.to_owned() };
    let path = std::fs::canonicalize(file).map_err(|e| bad(&e.to_string()))?;
    let meta = std::fs::metadata(&path).map_err(|e| bad(&e.to_string()))?;
    if !meta.is_file() {
        return Err(bad("not a regular file"));
    }
    std::fs::File::open(&path).map_err(|e| bad(&e.to_string()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.starts_with('.') || !name.chars().all(plain) {
        return Err(bad("the file name must be letters, digits, '.', '_' and '-' (it goes into the URL)"));
    }
    Ok((path, name))
}

async fn accept_loop(
    listener: TcpListener,
    tls: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    cancel: CancellationToken,
) {
    loop {
        let (tcp, peer) = tokio::select! {
            _ = cancel.cancelled() => return,
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        let (tls, app, cancel) = (tls.clone(), app.clone(), cancel.clone());
        tokio::spawn(async move {
            let Ok(Ok(stream)) = tokio::time::timeout(HANDSHAKE_LIMIT, tls.accept(tcp)).await else {
                tracing::debug!(%peer, "image server: TLS handshake failed");
                return;
            };
            let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let app = app.clone();
                async move {
                    let mut req = req.map(Body::new);
                    req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
                    app.oneshot(req).await
                }
            });
            let conn = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = conn.serve_connection(TokioIo::new(stream), svc) => {}
            }
        });
    }
}

/// `GET|HEAD /image/TOKEN/NAME`.
async fn fetch(
    State(s): State<Arc<Shared>>,
    UrlPath((token, name)): UrlPath<(String, String)>,
    req: Request,
) -> Response {
    let peer = req.extensions().get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0);
    let Some((path, id)) = s.tokens.lookup(&token, &name, peer.map(|p| p.ip()), Instant::now()) else {
        tracing::info!(?peer, "image server: refused a request (no such token, expired, or another source)");
        return StatusCode::NOT_FOUND.into_response();
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET, HEAD")]).into_response();
    }
    let head = req.method() == Method::HEAD;
    let range = req.headers().get(header::RANGE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let resp = match tower_http::services::ServeFile::new(&path).oneshot(req).await {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let status = resp.status();
    let len = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if status.is_success() {
        let partial = status == StatusCode::PARTIAL_CONTENT;
        s.tokens.record(&id, partial, if head { 0 } else { len });
    }
    tracing::info!(?peer, token = %id, ?range, status = status.as_u16(), bytes = len, "image server: served");
    resp.map(Body::new)
}

#[cfg(test)]
mod tests;
