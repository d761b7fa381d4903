//! TLS trust on first use against an in-test HTTPS server (tokio-rustls, rcgen certificates) whose
//! certificate can be replaced while it runs, as after a BMC certificate renewal.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use lifeline_redfish::*;
use lifeline_test_utils::unique_loopback;
use rcgen::{CertificateParams, CertifiedIssuer, KeyPair};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const ROOT: &str = r##"{"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_15_0.ServiceRoot",
  "RedfishVersion": "1.15.0", "Name": "pin test", "Systems": {"@odata.id": "/redfish/v1/Systems"}}"##;

struct Server {
    addr: SocketAddr,
    config: Arc<Mutex<Arc<ServerConfig>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn server_config(chain: Vec<CertificateDer<'static>>, key: &KeyPair) -> Arc<ServerConfig> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Arc::new(
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    )
}

fn self_signed(ip: &str) -> (CertificateDer<'static>, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![ip.to_owned()]).unwrap().self_signed(&key).unwrap();
    (cert.der().clone(), key)
}

/// Serves the service root to every request, one request per connection (like sushy: `Connection: close`),
/// so every request is a new handshake with the certificate configured at that moment.
async fn serve(ip: std::net::Ipv4Addr, config: Arc<ServerConfig>) -> Server {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = Arc::new(Mutex::new(config));
    let cfg = config.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = tokio_rustls::TlsAcceptor::from(cfg.lock().unwrap().clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{ROOT}",
                    ROOT.len()
                );
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Server { addr, config, task }
}

fn opts() -> ClientOptions {
    ClientOptions { request_timeout: std::time::Duration::from_secs(5), ..ClientOptions::default() }
}

#[tokio::test]
async fn first_use_pins_a_changed_certificate_is_refused_and_trust_repins() {
    let ip = unique_loopback();
    let (cert_a, key_a) = self_signed(&ip.to_string());
    let (cert_b, key_b) = self_signed(&ip.to_string());
    let (fp_a, fp_b) = (fingerprint_der(&cert_a), fingerprint_der(&cert_b));
    let server = serve(ip, server_config(vec![cert_a], &key_a)).await;
    let target = BmcTarget::new("bmc-pin", format!("https://{}", server.addr));
    let store = Arc::new(MemoryPinStore::new());
    let tofu = TlsTrust::Pin { store: store.clone(), explicit: None };
    let creds = Credentials::new("u", "p");

    let first = Client::connect(target.clone(), creds.clone(), tofu.clone(), opts()).await.unwrap();
    assert_eq!(store.get_pin("bmc-pin").await.unwrap(), Some(fp_a), "first connection pins the leaf");
    assert_eq!(first.service_root().name.as_deref(), Some("pin test"));
    // Same certificate again: accepted.
    Client::connect(target.clone(), creds.clone(), tofu.clone(), opts()).await.unwrap();

    // The BMC gets a new certificate.
    *server.config.lock().unwrap() = server_config(vec![cert_b], &key_b);

    let err = Client::connect(target.clone(), creds.clone(), tofu.clone(), opts()).await.unwrap_err();
    match &err {
        RedfishError::CertificateChanged { bmc, pinned, presented } => {
            assert_eq!((bmc.as_str(), *pinned, *presented), ("bmc-pin", fp_a, fp_b));
        }
        other => panic!("expected CertificateChanged, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(&fp_a.to_string()) && msg.contains(&fp_b.to_string()) && msg.contains("bmc-pin"),
        "{msg}"
    );
    // A client connected before the change refuses its next connection too.
    let err = first.get_json("/redfish/v1/").await.unwrap_err();
    assert!(matches!(err, RedfishError::CertificateChanged { .. }), "{err:?}");
    assert_eq!(store.get_pin("bmc-pin").await.unwrap(), Some(fp_a), "a refusal never re-pins");

    // Intended replacement: re-pin, then connect.
    let out = trust(&target, store.as_ref(), None, fp_b, &opts()).await.unwrap();
    assert_eq!(out, TrustOutcome { previous: Some(fp_a), current: fp_b });
    let c = Client::connect(target.clone(), creds.clone(), tofu, opts()).await.unwrap();
    assert_eq!(c.peer_certificate().unwrap().0, fp_b);

    // An explicit (inventory) pin wins over the store in both directions.
    let explicit_old = TlsTrust::Pin { store: store.clone(), explicit: Some(fp_a) };
    assert!(matches!(
        Client::connect(target.clone(), creds.clone(), explicit_old, opts()).await,
        Err(RedfishError::CertificateChanged { .. })
    ));
    let other_store = Arc::new(MemoryPinStore::new());
    other_store.set_pin("bmc-pin", fp_a).await.unwrap();
    let explicit_new = TlsTrust::Pin { store: other_store.clone(), explicit: Some(fp_b) };
    Client::connect(target.clone(), creds, explicit_new, opts()).await.unwrap();
    assert_eq!(
        other_store.get_pin("bmc-pin").await.unwrap(),
        Some(fp_a),
        "an explicit pin is not copied into the store"
    );
}

#[tokio::test]
async fn ca_file_mode_verifies_chain_and_name() {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    // The server listens on its own unique address; the leaf names that address.
    let server_ip = unique_loopback();
    let leaf =
        CertificateParams::new(vec![server_ip.to_string()]).unwrap().signed_by(&leaf_key, &ca).unwrap();
    let server = serve(server_ip, server_config(vec![leaf.der().clone()], &leaf_key)).await;
    let target = BmcTarget::new("bmc-ca", format!("https://{}", server.addr));

    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let c = Client::connect(target.clone(), Credentials::new("u", "p"), TlsTrust::CaFile(ca_file), opts())
        .await
        .unwrap();
    assert_eq!(c.service_root().redfish_version.as_deref(), Some("1.15.0"));

    // Another CA: refused (not a pin error: there is no pin in CA mode).
    let other_key = KeyPair::generate().unwrap();
    let mut other_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    other_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let other = CertifiedIssuer::self_signed(other_params, other_key).unwrap();
    let err = Client::connect(
        target,
        Credentials::new("u", "p"),
        TlsTrust::CaPem(other.pem().into_bytes()),
        opts(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RedfishError::Http { .. }), "{err:?}");

    // A missing CA file is named.
    let err = Client::connect(
        BmcTarget::new("bmc-ca", format!("https://{}", server.addr)),
        Credentials::new("u", "p"),
        TlsTrust::CaFile(dir.path().join("missing.pem")),
        opts(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, RedfishError::CaFile { .. }), "{err:?}");
}
