//! TLS for the Redfish event receiver (`[server] event-tls-cert` / `event-tls-key`). Why: the
//! subscription secret that authenticates a BMC's delivery travels in the request path; over plain HTTP
//! anyone on the OOB network who sees one delivery can replay it. With TLS configured the receiver
//! accepts nothing else, and the subscriptions are made with an `https://` destination.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

#[derive(Debug, thiserror::Error)]
pub enum EventTlsError {
    #[error("[server] event-tls-cert and event-tls-key: give both, or neither")]
    OnlyOne,
    #[error("[server] {field} = \"{}\": no usable PEM {what}", path.display())]
    Pem { field: &'static str, path: PathBuf, what: &'static str },
    #[error("[server] event-tls-cert and event-tls-key do not make a TLS configuration")]
    Config(#[source] rustls::Error),
}

/// The receiver's TLS configuration, or `None` when neither file is configured.
pub fn from_config(
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<Option<Arc<rustls::ServerConfig>>, EventTlsError> {
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(c), Some(k)) => server_config(c, k).map(Some),
        _ => Err(EventTlsError::OnlyOne),
    }
}

/// A server configuration from a PEM certificate chain and its PEM key (no client certificates: the BMC
/// is authenticated by its subscription secret and its source address, see [`crate::event_gate`]).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, EventTlsError> {
    let pem = |field, path: &Path, what| EventTlsError::Pem { field, path: path.to_owned(), what };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|_| pem("event-tls-cert", cert, "certificate"))?
        .collect::<Result<_, _>>()
        .map_err(|_| pem("event-tls-cert", cert, "certificate"))?;
    if chain.is_empty() {
        return Err(pem("event-tls-cert", cert, "certificate"));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|_| pem("event-tls-key", key, "private key"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(EventTlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(EventTlsError::Config)?;
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use serde_json::json;

    use super::*;
    use crate::event_gate::EventGate;
    use crate::event_listener::EventListener;

    fn gate() -> Arc<EventGate> {
        let mut s = std::collections::HashMap::new();
        s.insert("n1".to_owned(), vec!["127.0.0.1".parse().unwrap()]);
        Arc::new(EventGate::new(s))
    }

    /// A self-signed certificate for 127.0.0.1 (cert.pem, key.pem) in `dir`.
    fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
        let k = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
        let (c, p) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&c, k.cert.pem()).unwrap();
        std::fs::write(&p, k.signing_key.serialize_pem()).unwrap();
        (c, p)
    }

    /// curl (a client Lifeline did not write) POSTing `body`; its `%{http_code}` ("000": no HTTP answer).
    fn curl(url: &str, ca: Option<&Path>, body: &str) -> String {
        let mut c = Command::new("curl");
        c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-X", "POST"]);
        c.args(["-H", "Content-Type: application/json", "--data-binary", body]);
        if let Some(ca) = ca {
            c.arg("--cacert").arg(ca);
        }
        let out = c.arg(url).output().expect("curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_tls_a_delivery_over_tls_prompts_and_plain_http_changes_nothing() {
        if Command::new("curl").arg("--version").output().is_err() {
            assert!(std::env::var("OOB_PEERS_REQUIRED").as_deref() != Ok("1"), "curl required");
            eprintln!("SKIP: no curl");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = certificate(dir.path());
        let cfg = from_config(Some(&cert), Some(&key)).unwrap().expect("configured");
        let (l, mut rx) = EventListener::bind("127.0.0.1:0".parse().unwrap(), gate()).await.unwrap();
        let l = l.with_tls(cfg);
        let url = l.url().unwrap();
        assert!(url.starts_with("https://127.0.0.1:"), "subscriptions get an https destination: {url}");
        let secret_url = l.gate().destination(&url, "n1");
        let plain_url = secret_url.replacen("https://", "http://", 1);
        tokio::spawn(l.run());
        let body =
            json!({ "Context": "lifeline:n1", "Events": [{ "EventId": "1", "Message": "x" }] }).to_string();

        // Plain HTTP with the right secret: no HTTP answer at all, nothing prompted.
        let code = tokio::task::spawn_blocking({
            let (u, b) = (plain_url.clone(), body.clone());
            move || curl(&u, None, &b)
        })
        .await
        .unwrap();
        assert_eq!(code, "000", "plain HTTP got an answer");
        // TLS to a client that does not trust the certificate: refused by the client, nothing prompted.
        let code = tokio::task::spawn_blocking({
            let (u, b) = (secret_url.clone(), body.clone());
            move || curl(&u, None, &b)
        })
        .await
        .unwrap();
        assert_eq!(code, "000");
        assert!(rx.try_recv().is_err(), "nothing reached the channel");

        // Over TLS with the certificate trusted: the gate still decides (a wrong secret is 401) ...
        let wrong = format!("{url}/00ff");
        let ca = cert.clone();
        let code = tokio::task::spawn_blocking({
            let (b, ca) = (body.clone(), ca.clone());
            move || curl(&wrong, Some(&ca), &b)
        })
        .await
        .unwrap();
        assert_eq!(code, "401");
        // ... and the right one prompts a read of that BMC's log.
        let code = tokio::task::spawn_blocking(move || curl(&secret_url, Some(&ca), &body)).await.unwrap();
        assert_eq!(code, "204");
        let p = rx.recv().await.unwrap();
        assert_eq!((p.device.as_str(), p.records), ("n1", 1));
    }

    #[test]
    fn both_files_or_neither_and_bad_pem_names_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = certificate(dir.path());
        assert!(from_config(None, None).unwrap().is_none());
        assert!(matches!(from_config(Some(&cert), None), Err(EventTlsError::OnlyOne)));
        let e = from_config(Some(&key), Some(&key)).unwrap_err();
        assert!(e.to_string().contains("event-tls-cert"), "{e}");
        let e = from_config(Some(&cert), Some(&cert)).unwrap_err();
        assert!(e.to_string().contains("event-tls-key"), "{e}");
    }
}
