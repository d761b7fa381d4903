//! Posting reports to `lifeline serve` (`POST /api/v1/agent/reports`) with the smallest client that does
//! the job: one blocking HTTP/1.1 request per report over a std `TcpStream`, wrapped in rustls for
//! `https://`. The agent is copied onto GPU nodes, so it must not pull in the server's stack (axum, sqlx)
//! or an async runtime for one request a minute.
//!
//! The server's certificate is usually self-signed, so HTTPS is verified against its pinned SHA-256
//! fingerprint (as `lifeline serve` prints it). The token comes from `$LIFELINE_TOKEN` or a file, never
//! from an argument (arguments are visible in `ps`).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use sha2::Digest as _;

/// Every step of a request (connect, each read and write) gives up after this.
const TIMEOUT: Duration = Duration::from_secs(20);
/// A reply larger than this is not the server's.
const MAX_REPLY: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PostError {
    #[error("server URL `{url}`: expected http://HOST:PORT or https://HOST:PORT")]
    BadUrl { url: String },
    #[error("no API token: set LIFELINE_TOKEN or give --token-file (`lifeline token create --user NAME`)")]
    NoToken,
    #[error("cannot read the token file {path}")]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "an https:// server needs its certificate fingerprint (--server-fingerprint or LIFELINE_SERVER_FINGERPRINT)"
    )]
    NoFingerprint,
    #[error("cannot resolve {host}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{host}:{port}")]
    Io {
        host: String,
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS to {host}")]
    Tls {
        host: String,
        #[source]
        source: rustls::Error,
    },
    #[error("the server answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the server's reply is not HTTP")]
    BadReply,
}

/// The token: `$LIFELINE_TOKEN`, else the file (`--token-file`, `$LIFELINE_TOKEN_FILE`).
pub fn token(file: Option<&Path>) -> Result<String, PostError> {
    if let Ok(t) = std::env::var("LIFELINE_TOKEN")
        && !t.trim().is_empty()
    {
        return Ok(t.trim().to_owned());
    }
    let path =
        file.map(Path::to_path_buf).or_else(|| std::env::var_os("LIFELINE_TOKEN_FILE").map(PathBuf::from));
    let Some(path) = path else { return Err(PostError::NoToken) };
    let text = std::fs::read_to_string(&path)
        .map_err(|source| PostError::TokenFile { path: path.clone(), source })?;
    let t = text.trim();
    if t.is_empty() {
        return Err(PostError::NoToken);
    }
    Ok(t.to_owned())
}

/// Where to post and as whom.
#[derive(Debug, Clone)]
pub struct Server {
    tls: bool,
    host: String,
    port: u16,
    /// Path prefix of the server URL (usually empty).
    prefix: String,
    token: String,
    fingerprint: Option<String>,
}

impl Server {
    pub fn new(url: &str, token: String, fingerprint: Option<String>) -> Result<Server, PostError> {
        let bad = || PostError::BadUrl { url: url.to_owned() };
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad());
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h.trim_start_matches('[').trim_end_matches(']'), p.parse().map_err(|_| bad())?)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        if host.is_empty() {
            return Err(bad());
        }
        if tls && fingerprint.is_none() {
            return Err(PostError::NoFingerprint);
        }
        Ok(Server { tls, host: host.to_owned(), port, prefix: prefix.to_owned(), token, fingerprint })
    }

    /// POSTs JSON; the reply body when the status is 2xx.
    pub fn post_json(&self, path: &str, body: &serde_json::Value) -> Result<String, PostError> {
        let io = |source| PostError::Io { host: self.host.clone(), port: self.port, source };
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|source| PostError::Resolve { host: self.host.clone(), source })?
            .next()
            .ok_or_else(|| PostError::Resolve {
                host: self.host.clone(),
                source: std::io::ErrorKind::NotFound.into(),
            })?;
        let tcp = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(io)?;
        tcp.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
        tcp.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
        let body = body.to_string();
        let req = format!(
            "POST {}{path} HTTP/1.1\r\nHost: {}:{}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\nUser-Agent: lifeline-agent/{}\r\n\r\n{body}",
            self.prefix,
            self.host,
            self.port,
            self.token,
            body.len(),
            env!("CARGO_PKG_VERSION"),
        );
        let reply = if self.tls {
            let cfg = self.tls_config();
            let name = ServerName::try_from(self.host.clone())
                .map_err(|_| PostError::BadUrl { url: self.host.clone() })?;
            let conn = rustls::ClientConnection::new(Arc::new(cfg), name)
                .map_err(|source| PostError::Tls { host: self.host.clone(), source })?;
            let mut s = rustls::StreamOwned::new(conn, tcp);
            exchange(&mut s, req.as_bytes()).map_err(io)?
        } else {
            let mut s = tcp;
            exchange(&mut s, req.as_bytes()).map_err(io)?
        };
        let (status, body) = parse_reply(&reply).ok_or(PostError::BadReply)?;
        if (200..300).contains(&status) {
            Ok(body)
        } else {
            Err(PostError::Status { status, body: body.chars().take(500).collect() })
        }
    }

    fn tls_config(&self) -> rustls::ClientConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned {
                fingerprint: normalise(self.fingerprint.as_deref().unwrap_or_default()),
                provider,
            }))
            .with_no_client_auth()
    }
}

fn exchange(s: &mut (impl Read + Write), req: &[u8]) -> std::io::Result<Vec<u8>> {
    s.write_all(req)?;
    s.flush()?;
    let mut out = Vec::new();
    match s.take(MAX_REPLY).read_to_end(&mut out) {
        Ok(_) => Ok(out),
        // A server that closes without a TLS close_notify still sent a whole reply.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => Ok(out),
        Err(e) => Err(e),
    }
}

/// Status and body of an HTTP/1.1 reply (content-length or chunked; lenient about both).
pub fn parse_reply(raw: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status: u16 = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    Some((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(rest.get(..n).unwrap_or(rest));
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

fn normalise(fp: &str) -> String {
    fp.trim().trim_start_matches("sha256:").replace(':', "").to_ascii_uppercase()
}

/// Accepts exactly the certificate with the pinned SHA-256 fingerprint.
#[derive(Debug)]
struct Pinned {
    fingerprint: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
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
        let got = hex::encode_upper(sha2::Sha256::digest(end_entity.as_ref()));
        if got == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate (sha256:{got}) does not match the pinned fingerprint (sha256:{})",
                self.fingerprint
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn urls() {
        let s = Server::new("http://127.0.0.1:7443/", "t".into(), None).unwrap();
        assert_eq!((s.tls, s.host.as_str(), s.port, s.prefix.as_str()), (false, "127.0.0.1", 7443, ""));
        let s = Server::new("https://jump:8443/lifeline", "t".into(), Some("sha256:AB".into())).unwrap();
        assert_eq!((s.tls, s.host.as_str(), s.port, s.prefix.as_str()), (true, "jump", 8443, "/lifeline"));
        let s = Server::new("http://[::1]:80", "t".into(), None).unwrap();
        assert_eq!((s.host.as_str(), s.port), ("::1", 80));
        assert!(matches!(Server::new("https://jump", "t".into(), None), Err(PostError::NoFingerprint)));
        assert!(matches!(Server::new("ftp://x", "t".into(), None), Err(PostError::BadUrl { .. })));
    }

    #[test]
    fn replies() {
        let r = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(parse_reply(r), Some((200, "{}".into())));
        let r =
            b"HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_reply(r), Some((403, "abcde".into())));
        assert_eq!(parse_reply(b"garbage"), None);
    }

    proptest! {
        #[test]
        fn any_reply_parses_without_panicking(raw in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_reply(&raw);
        }

        #[test]
        fn chunked_bodies_round_trip(body in "[a-z0-9{}\":,]{0,300}", split in 1usize..50) {
            let mut wire = String::new();
            for c in body.as_bytes().chunks(split) {
                wire.push_str(&format!("{:x}\r\n{}\r\n", c.len(), std::str::from_utf8(c).unwrap()));
            }
            wire.push_str("0\r\n\r\n");
            let raw = format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{wire}");
            prop_assert_eq!(parse_reply(raw.as_bytes()), Some((200, body)));
        }
    }
}
