//! One self-signed certificate per BMC, everything else shared.
//!
//! Each BMC needs its own certificate (clients pin per BMC, and `tls-cert-change` replaces one), but the
//! crypto provider and all other settings are shared. Session resumption is disabled: it would let a client
//! skip seeing a replaced certificate, and its cache would cost memory on 1,000 BMCs.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::NoServerSessionStorage;

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
    cfg.session_storage = Arc::new(NoServerSessionStorage {});
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(cfg), cert))
}
