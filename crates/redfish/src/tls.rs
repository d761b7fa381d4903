//! TLS trust for BMCs: pin on first use, or a CA file.
//!
//! Why: BMC certificates are self-signed, carry factory names and rarely chain to anything, so web PKI
//! verification fails and "accept invalid certs" would hand the BMC password to anyone on the OOB network.
//! Instead the SHA-256 of the leaf certificate is pinned the first time (trust on first use); a later
//! different certificate is refused with both fingerprints named, until an operator re-pins after an intended
//! replacement (`trust`). An explicit pin from the inventory always wins over the stored one. The handshake
//! signature is still verified against the presented certificate's key, so a pin cannot be replayed by a
//! peer that merely copied the certificate.
//!
//! The verifier is per BMC (one reqwest client per BMC), so it knows which pin applies; it records what it
//! saw so the client can turn a rustls failure into `CertificateChanged { pinned, presented }`.
//!
//! Every configuration offers HTTP/2 by ALPN before HTTP/1.1: a BMC that serves HTTP/2 (bmcweb) then carries
//! a client's concurrent requests as streams of one TLS connection, one handshake instead of one per request
//! in flight. Resumption: see [`crate::resume`]; a resumed handshake skips the verifier, so `last_seen` is
//! only set by full handshakes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

use lifeline_types::Fingerprint;

use crate::error::BoxError;
use crate::resume::ResumptionCache;

/// Where pins live between runs (the store crate implements this over its database).
#[async_trait]
pub trait PinStore: Send + Sync {
    async fn get_pin(&self, bmc: &str) -> Result<Option<Fingerprint>, BoxError>;
    async fn set_pin(&self, bmc: &str, pin: Fingerprint) -> Result<(), BoxError>;
}

/// In-memory pin store (tests, one-shot CLI runs with `--bmc`).
#[derive(Debug, Default)]
pub struct MemoryPinStore(Mutex<HashMap<String, Fingerprint>>);

impl MemoryPinStore {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PinStore for MemoryPinStore {
    async fn get_pin(&self, bmc: &str) -> Result<Option<Fingerprint>, BoxError> {
        Ok(self.0.lock().unwrap_or_else(|e| e.into_inner()).get(bmc).copied())
    }
    async fn set_pin(&self, bmc: &str, pin: Fingerprint) -> Result<(), BoxError> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(bmc.to_owned(), pin);
        Ok(())
    }
}

/// How to trust a BMC's certificate.
#[derive(Clone)]
pub enum TlsTrust {
    /// Pin on first use, persisted in `store`; `explicit` (from the inventory) wins over the stored pin.
    Pin { store: Arc<dyn PinStore>, explicit: Option<Fingerprint> },
    /// Verify the chain and name against CA certificates in this PEM file (e.g. sushy's `ca.pem`).
    CaFile(PathBuf),
    /// Same, with the PEM already in memory.
    CaPem(Vec<u8>),
}

impl std::fmt::Debug for TlsTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsTrust::Pin { explicit, .. } => {
                f.debug_struct("Pin").field("explicit", explicit).finish_non_exhaustive()
            }
            TlsTrust::CaFile(p) => f.debug_tuple("CaFile").field(p).finish(),
            TlsTrust::CaPem(_) => f.write_str("CaPem(..)"),
        }
    }
}

/// SHA-256 of a DER certificate.
pub fn fingerprint_der(der: &[u8]) -> Fingerprint {
    Fingerprint(Sha256::digest(der).into())
}

/// What the verifier has seen; shared between the verifier (inside rustls) and the client.
#[derive(Debug, Default)]
pub(crate) struct PinState {
    /// Enforced pin; `None` means "pin whatever comes first".
    pub pinned: Option<Fingerprint>,
    /// Set when this process pinned a certificate that the store does not know yet.
    pub newly_pinned: Option<Fingerprint>,
    /// Last leaf presented (fingerprint and DER: the audit wants to inspect expiry / self-signature).
    pub last_seen: Option<(Fingerprint, Vec<u8>)>,
    /// Last refusal: (pinned, presented); cleared by the next accepted certificate. Read, not taken: the
    /// clients of one BMC may share this state (`crate::resume`).
    pub mismatch: Option<(Fingerprint, Fingerprint)>,
}

pub(crate) type SharedPinState = Arc<Mutex<PinState>>;

pub(crate) fn lock(s: &SharedPinState) -> std::sync::MutexGuard<'_, PinState> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug)]
pub(crate) struct BmcVerifier {
    algorithms: WebPkiSupportedAlgorithms,
    /// `Some` in CA mode: chain + name verification delegated to webpki.
    ca: Option<Arc<dyn ServerCertVerifier>>,
    pub(crate) state: SharedPinState,
}

impl ServerCertVerifier for BmcVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = fingerprint_der(end_entity.as_ref());
        let mut st = lock(&self.state);
        st.last_seen = Some((presented, end_entity.as_ref().to_vec()));
        if let Some(ca) = &self.ca {
            drop(st);
            return ca.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        }
        match st.pinned {
            Some(pinned) if pinned == presented => {
                st.mismatch = None;
                Ok(ServerCertVerified::assertion())
            }
            Some(pinned) => {
                st.mismatch = Some((pinned, presented));
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::ApplicationVerificationFailure,
                ))
            }
            None => {
                // First use: pin now, so that concurrent handshakes in this process already enforce it.
                st.pinned = Some(presented);
                st.newly_pinned = Some(presented);
                Ok(ServerCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsSetupError {
    #[error("reading CA file")]
    Io(#[source] std::io::Error, PathBuf),
    #[error("no certificate in CA PEM")]
    Empty(PathBuf),
    #[error("rustls configuration")]
    Rustls(#[source] BoxError),
}

/// ring's provider, with the TLS 1.3 suites in the order browsers offer them: AES-128-GCM-SHA256 first.
/// ring's own order puts AES-256-GCM-SHA384 first, whose SHA-384 key schedule has no CPU instructions
/// (SHA-256 has SHA-NI), which made hashing a tenth of a handshake's CPU on both sides. One provider for the
/// process: it was built per BMC.
fn provider() -> Arc<CryptoProvider> {
    static P: std::sync::OnceLock<Arc<CryptoProvider>> = std::sync::OnceLock::new();
    P.get_or_init(|| {
        let mut p = rustls::crypto::ring::default_provider();
        // A stable sort: the other suites keep ring's order.
        p.cipher_suites.sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        Arc::new(p)
    })
    .clone()
}

/// ALPN protocols offered, most preferred first (reqwest leaves ALPN to a preconfigured rustls config).
fn alpn() -> Vec<Vec<u8>> {
    vec![b"h2".to_vec(), b"http/1.1".to_vec()]
}

/// Which TLS sessions a client may resume.
#[derive(Debug, Clone)]
pub(crate) enum Resume {
    /// None: every connection shows the certificate (the certificate probe).
    Off,
    /// Those of this BMC verified against the same pin or CA bundle, kept in `cache` across clients. With
    /// no pin yet (trust on first use), only the client's own: its first handshake pins.
    Shared { cache: ResumptionCache, bmc: String, base: String },
}

/// Build the rustls config for one BMC. `pinned` is the pin to enforce (already resolved: explicit, else
/// stored, else none = pin on first use). Reading a CA file is blocking I/O: callers run this on
/// `spawn_blocking` when a file is involved.
pub(crate) fn client_config(
    trust: &TlsTrust,
    pinned: Option<Fingerprint>,
    resume: &Resume,
) -> Result<(rustls::ClientConfig, SharedPinState), TlsSetupError> {
    let provider = provider();
    let pem = match trust {
        TlsTrust::Pin { .. } => None,
        TlsTrust::CaFile(path) => {
            Some((std::fs::read(path).map_err(|e| TlsSetupError::Io(e, path.clone()))?, path.clone()))
        }
        TlsTrust::CaPem(pem) => Some((pem.clone(), PathBuf::from("<memory>"))),
    };
    // What a session is verified against: the pin, or the CA bundle (none yet: trust on first use).
    let identity = match &pem {
        Some((pem, _)) => Some(Sha256::digest(pem).into()),
        None => pinned.map(|p| p.0),
    };
    let make = || -> Result<BmcVerifier, TlsSetupError> {
        let ca = match &pem {
            Some((pem, path)) => Some(ca_verifier(pem, path.clone(), &provider)?),
            None => None,
        };
        let state = Arc::new(Mutex::new(PinState { pinned, ..PinState::default() }));
        Ok(BmcVerifier { algorithms: provider.signature_verification_algorithms, ca, state })
    };
    let shared = match (resume, identity) {
        (Resume::Shared { cache, bmc, base }, Some(id)) => cache.entry(bmc, base, id, make)?,
        _ => None,
    };
    let (verifier, resumption) = match (shared, resume) {
        (Some(e), _) => (e.verifier, rustls::client::Resumption::store(e.store)),
        (None, Resume::Off) => (Arc::new(make()?), rustls::client::Resumption::disabled()),
        (None, Resume::Shared { .. }) => (Arc::new(make()?), own_sessions()),
    };
    let state = verifier.state.clone();
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Rustls(Box::new(e)))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // rustls resumes only with the same verifier and client-certificate resolver (`Arc`s) as the session's.
    config.client_auth_cert_resolver = no_client_cert();
    config.alpn_protocols = alpn();
    config.resumption = resumption;
    Ok((config, state))
}

/// A verifier enforcing `pinned` (or pinning on first use), for tests of the cache.
#[cfg(test)]
pub(crate) fn pin_verifier(pinned: Option<Fingerprint>) -> BmcVerifier {
    let state = Arc::new(Mutex::new(PinState { pinned, ..PinState::default() }));
    BmcVerifier { algorithms: provider().signature_verification_algorithms, ca: None, state }
}

/// BMCs are never sent a client certificate; one resolver for every configuration (see above).
#[derive(Debug)]
struct NoClientCert;

impl rustls::client::ResolvesClientCert for NoClientCert {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }
    fn has_certs(&self) -> bool {
        false
    }
}

fn no_client_cert() -> Arc<dyn rustls::client::ResolvesClientCert> {
    static R: std::sync::OnceLock<Arc<dyn rustls::client::ResolvesClientCert>> = std::sync::OnceLock::new();
    R.get_or_init(|| Arc::new(NoClientCert)).clone()
}

/// Resumption among one client's own connections (an HTTP/1.1 BMC gets one per request in flight).
fn own_sessions() -> rustls::client::Resumption {
    rustls::client::Resumption::in_memory_sessions(8)
}

/// Config for a plain-HTTP BMC (mockups): reqwest needs some TLS config with `rustls-no-provider`; this one
/// trusts nothing, so it could never carry credentials to an HTTPS host.
pub(crate) fn trust_nothing_config() -> Result<rustls::ClientConfig, TlsSetupError> {
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Rustls(Box::new(e)))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

fn ca_verifier(
    pem: &[u8],
    path: PathBuf,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsSetupError> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem).flatten() {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(TlsSetupError::Empty(path));
    }
    let v = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| TlsSetupError::Rustls(Box::new(e)))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_matches_openssl_convention() {
        // sha256 of the empty string, as `openssl dgst -sha256` prints it.
        assert_eq!(
            fingerprint_der(b"").to_string(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn aes_128_gcm_sha256_is_offered_first_and_nothing_is_dropped() {
        let p = provider();
        assert_eq!(p.cipher_suites[0].suite(), rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
        assert_eq!(p.cipher_suites.len(), rustls::crypto::ring::default_provider().cipher_suites.len());
    }

    #[test]
    fn ca_pem_without_certificates_is_refused() {
        assert!(matches!(
            client_config(&TlsTrust::CaPem(b"nothing".to_vec()), None, &Resume::Off),
            Err(TlsSetupError::Empty(_))
        ));
    }
}
