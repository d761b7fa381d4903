//! One self-signed certificate per BMC, everything else shared.
//!
//! Each BMC needs its own certificate (clients pin per BMC, and `tls-cert-change` replaces one), but the
//! crypto provider and all other settings are shared.
//!
//! ALPN offers `h2` before `http/1.1`, as bmcweb does: a client that speaks HTTP/2 sends a BMC's concurrent
//! requests as streams of one connection instead of one handshake each. Session resumption uses stateless
//! tickets (no per-session memory on 1,000 BMCs) from a ticketer of this configuration only: a ticket is
//! never accepted by another BMC, and a replaced certificate comes with a new configuration whose ticketer
//! knows no old ticket, so every client sees the new certificate on its next connection.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::NoServerSessionStorage;

/// ALPN protocols offered, most preferred first.
pub(crate) const ALPN_H2: &[u8] = b"h2";
pub(crate) const ALPN_HTTP1: &[u8] = b"http/1.1";

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("generating a certificate for {name}")]
    Generate {
        name: String,
        #[source]
        source: rcgen::Error,
    },
    #[error("building the TLS configuration for {name}")]
    Config {
        name: String,
        #[source]
        source: rustls::Error,
    },
}

fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider())).clone()
}

/// A fresh certificate for `name` at `addr`, and the server configuration serving it.
/// Returns the DER certificate too, so tests can pin it.
pub fn server_config(
    name: &str,
    addr: IpAddr,
) -> Result<(Arc<ServerConfig>, CertificateDer<'static>), TlsError> {
    let sans = vec![name.to_owned(), addr.to_string(), "localhost".to_owned()];
    let ck = rcgen::generate_simple_self_signed(sans)
        .map_err(|source| TlsError::Generate { name: name.to_owned(), source })?;
    let cert = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|source| TlsError::Config { name: name.to_owned(), source })?
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .map_err(|source| TlsError::Config { name: name.to_owned(), source })?;
    // Tickets only: no server-side session cache to grow.
    cfg.session_storage = Arc::new(NoServerSessionStorage {});
    cfg.ticketer = rustls::crypto::ring::Ticketer::new()
        .map_err(|source| TlsError::Config { name: name.to_owned(), source })?;
    cfg.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    Ok((Arc::new(cfg), cert))
}
