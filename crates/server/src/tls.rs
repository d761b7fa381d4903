//! TLS for the listener: the operator's certificate and key from the configuration, or a self-signed pair
//! made on first start and kept under the data directory (`server-tls/`), with its SHA-256 fingerprint
//! printed and written beside it so a client can pin it. Handshakes run in their own tasks with a time
//! limit, so one slow client never holds up the accept loop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use sha2::Digest;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no usable PEM {what}")]
    Pem { path: PathBuf, what: &'static str },
    #[error("generating the self-signed certificate")]
    Generate(#[source] rcgen::Error),
    #[error("the certificate and key do not make a TLS configuration")]
    Config(#[source] rustls::Error),
    #[error("give both `tls-cert` and `tls-key` in [server], or neither")]
    Half,
}

/// What the listener serves, and how it was obtained.
#[derive(Debug)]
pub struct Identity {
    pub config: Arc<rustls::ServerConfig>,
    /// `sha256:AA:BB:…` of the leaf certificate.
    pub fingerprint: String,
    pub self_signed: bool,
    pub cert_path: PathBuf,
}

pub fn fingerprint(der: &[u8]) -> String {
    let d = sha2::Sha256::digest(der);
    let hex: Vec<String> = d.iter().map(|b| format!("{b:02X}")).collect();
    format!("sha256:{}", hex.join(":"))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.into(), source })
}

/// Loads the operator's pair, or makes (once) and loads the self-signed one under `data_dir`.
pub fn identity(
    cert: Option<&Path>,
    key: Option<&Path>,
    data_dir: &Path,
    names: &[String],
) -> Result<Identity, TlsError> {
    let (cert_path, key_path, self_signed) = match (cert, key) {
        (Some(c), Some(k)) => (c.to_path_buf(), k.to_path_buf(), false),
        (None, None) => {
            let dir = data_dir.join("server-tls");
            let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
            if !c.exists() || !k.exists() {
                generate(&dir, &c, &k, names)?;
            }
            (c, k, true)
        }
        _ => return Err(TlsError::Half),
    };
    let cert_pem = read(&cert_path)?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| TlsError::Pem { path: cert_path.clone(), what: "certificate" })?;
    let Some(leaf) = certs.first() else {
        return Err(TlsError::Pem { path: cert_path, what: "certificate" });
    };
    let fp = fingerprint(leaf.as_ref());
    let key_pem = read(&key_path)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| TlsError::Pem { path: key_path.clone(), what: "private key" })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if self_signed {
        let fp_path = cert_path.with_file_name("fingerprint");
        std::fs::write(&fp_path, format!("{fp}\n"))
            .map_err(|source| TlsError::Write { path: fp_path, source })?;
    }
    Ok(Identity { config: Arc::new(config), fingerprint: fp, self_signed, cert_path })
}

fn generate(dir: &Path, cert: &Path, key: &Path, names: &[String]) -> Result<(), TlsError> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write { path: dir.into(), source })?;
    let mut sans = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    sans.extend(names.iter().cloned());
    sans.dedup();
    let c = rcgen::generate_simple_self_signed(sans).map_err(TlsError::Generate)?;
    let write = |p: &Path, s: String| {
        std::fs::write(p, s).map_err(|source| TlsError::Write { path: p.into(), source })
    };
    // The key first: a crash between the two leaves no certificate without its key.
    write(key, c.signing_key.serialize_pem())?;
    write(cert, c.cert.pem())?;
    Ok(())
}

/// A TCP listener whose accepted connections are TLS-handshaken in the background.
pub struct TlsListener {
    rx: mpsc::Receiver<(TlsStream<tokio::net::TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, rx) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (sock, addr) = match tcp.accept().await {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::debug!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    break;
                }
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await {
                        Ok(Ok(s)) => {
                            let _ = tx.send((s, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%addr, "TLS handshake: {e}"),
                        Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(TlsListener { rx, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(v) => v,
            // The accept task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_is_made_once_and_its_fingerprint_kept() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let a = identity(None, None, dir.path(), &[]).unwrap();
        assert!(a.self_signed);
        assert!(
            a.fingerprint.starts_with("sha256:") && a.fingerprint.len() == 7 + 32 * 3 - 1,
            "{}",
            a.fingerprint
        );
        let kept = std::fs::read_to_string(dir.path().join("server-tls/fingerprint")).unwrap();
        assert_eq!(kept.trim(), a.fingerprint);
        let b = identity(None, None, dir.path(), &[]).unwrap();
        assert_eq!(a.fingerprint, b.fingerprint, "the second start reuses the pair");
        assert!(matches!(identity(Some(Path::new("/x")), None, dir.path(), &[]), Err(TlsError::Half)));
    }
}
