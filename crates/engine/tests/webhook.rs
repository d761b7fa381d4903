//! Webhook delivery against real HTTP and HTTPS listeners: HTTPS verified against the system's trust roots
//! (`SSL_CERT_FILE` names the test's CA, as an operator's internal CA would be installed), an untrusted
//! certificate refused, a 5xx retried until it passes, a 4xx final after one try.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lifeline_engine::ops::notify::deliver;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Answers each request with the next status of `statuses` (the last one repeats); counts requests and
/// keeps the last body.
async fn serve(
    tls: Option<tokio_rustls::TlsAcceptor>,
    statuses: Vec<u16>,
) -> (u16, Arc<AtomicUsize>, Arc<std::sync::Mutex<String>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let (hits, body) = (Arc::new(AtomicUsize::new(0)), Arc::new(std::sync::Mutex::new(String::new())));
    let (h, b) = (hits.clone(), body.clone());
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            let (tls, statuses, h, b) = (tls.clone(), statuses.clone(), h.clone(), b.clone());
            tokio::spawn(async move {
                let mut s: Box<dyn Io> = match tls {
                    Some(a) => match a.accept(s).await {
                        Ok(t) => Box::new(t),
                        Err(_) => return,
                    },
                    None => Box::new(s),
                };
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    req.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&req).into_owned();
                    if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                        let len = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if rest.len() >= len {
                            *b.lock().unwrap() = rest.to_owned();
                            break;
                        }
                    }
                }
                let i = h.fetch_add(1, Ordering::SeqCst);
                let status = statuses[i.min(statuses.len() - 1)];
                let _ = s
                    .write_all(
                        format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .as_bytes(),
                    )
                    .await;
                let _ = s.shutdown().await;
            });
        }
    });
    (port, hits, body)
}

trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// A CA and a `localhost` certificate it signed; the CA's PEM is written to `dir/ca.pem`.
fn acceptor(dir: &std::path::Path) -> tokio_rustls::TlsAcceptor {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "lifeline test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let ca_issuer = rcgen::Issuer::new(ca, ca_key);
    std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca_issuer)
        .unwrap();
    let der_key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let cfg = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], der_key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
}

#[tokio::test]
async fn https_webhook_is_verified_against_the_system_roots() {
    let dir = tempfile::tempdir().unwrap();
    let tls = acceptor(dir.path());
    // SAFETY: nextest runs each test in its own process, and nothing else reads the environment yet.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var("SSL_CERT_FILE", dir.path().join("ca.pem"))
    };
    let (port, hits, body) = serve(Some(tls), vec![200]).await;
    let url = format!("https://localhost:{port}/hook");
    let status = deliver(&url, &serde_json::json!({ "fault": 7 }), Duration::from_secs(5), 1).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(body.lock().unwrap().as_str(), r#"{"fault":7}"#);
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let tls = acceptor(dir.path()); // its CA is not installed
    let (port, hits, _) = serve(Some(tls), vec![200]).await;
    let url = format!("https://localhost:{port}/hook");
    let e = deliver(&url, &serde_json::json!({}), Duration::from_secs(5), 1).await.unwrap_err();
    assert!(e.chain().contains("certificate") || e.chain().contains("Certificate"), "{}", e.chain());
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_5xx_is_retried_and_a_4xx_is_final() {
    let (port, hits, _) = serve(None, vec![503, 502, 204]).await;
    let url = format!("http://127.0.0.1:{port}/");
    assert_eq!(deliver(&url, &serde_json::json!({}), Duration::from_secs(5), 4).await.unwrap(), 204);
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    let (port, hits, _) = serve(None, vec![400, 200]).await;
    let url = format!("http://127.0.0.1:{port}/");
    let e = deliver(&url, &serde_json::json!({}), Duration::from_secs(5), 4).await.unwrap_err();
    assert!(e.chain().contains("400"), "{}", e.chain());
    assert_eq!(hits.load(Ordering::SeqCst), 1, "a refused message is not sent again");
}

#[tokio::test]
async fn not_a_web_url_is_a_usage_error() {
    let e = deliver("ftp://x/", &serde_json::json!({}), Duration::from_secs(1), 1).await.unwrap_err();
    assert_eq!(e.class(), lifeline_engine::ErrorClass::Usage);
}
