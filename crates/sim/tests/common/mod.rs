//! Shared helpers of the sim's integration tests: start a fleet, talk HTTPS to a BMC with its certificate
//! pinned, find the third-party peers.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lifeline_sim::{EndpointKind, Fleet, FleetSpec, RunningFleet, SimOptions};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A fleet of `n` servers (flavors rotate: generic, idrac, ilo, supermicro, openbmc) on ephemeral ports.
pub async fn fleet(n: usize, opts: SimOptions) -> RunningFleet {
    Fleet::start(FleetSpec::generate(n, 0), opts).await.expect("fleet starts")
}

/// Accepts exactly one certificate (what a pinning client does).
#[derive(Debug)]
pub struct Pinned(pub CertificateDer<'static>);

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.0.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("certificate changed".into()))
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

/// An HTTPS client pinned to `cert`, with a short timeout.
pub fn client(cert: CertificateDer<'static>, timeout: Duration) -> reqwest::Client {
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned(cert)))
        .with_no_client_auth();
    reqwest::Client::builder().tls_backend_preconfigured(cfg).timeout(timeout).build().unwrap()
}

/// Base URL and pinned client of a server's BMC.
pub fn bmc(fleet: &RunningFleet, name: &str) -> (String, reqwest::Client) {
    let ep = fleet.endpoint(name, EndpointKind::Redfish).expect("redfish endpoint");
    let cert = fleet.redfish(name).unwrap().certificate();
    (format!("https://{}:{}", ep.address, ep.port), client(cert, Duration::from_secs(10)))
}

/// `shared/peers` beside the repository (CI: a fresh clone with shared/ next to it).
pub fn peers_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("OOB_PEERS_DIR") {
        return Some(PathBuf::from(p));
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [manifest.join("../../../shared/peers"), PathBuf::from("/work/shared/peers")]
        .into_iter()
        .find(|p| p.is_dir())
}

/// The Python venv holding redfish-service-validator, the `redfish` library and Tacklebox.
pub fn peers_venv() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::env::var("OOB_PEERS_VENV")
        .ok()
        .map(PathBuf::from)
        .into_iter()
        .chain([manifest.join("../../.peers-venv")])
        .find(|p| p.join("bin/python").exists())
}

/// Skips loudly, or fails when peers are required (`OOB_PEERS_REQUIRED=1`).
pub fn skip(what: &str) {
    if std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1") {
        panic!("peer required but missing: {what}");
    }
    eprintln!("SKIP: {what}");
}

/// `ipmitool -I lanplus -C 17 … ARGS` against a BMC's IPMI endpoint (short timeouts, 3 retries).
pub fn ipmitool(ep: &lifeline_sim::Endpoint, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new("ipmitool");
    cmd.args(["-I", "lanplus", "-C", "17", "-N", "1", "-R", "3", "-H", &ep.address.to_string()])
        .args(["-p", &ep.port.to_string(), "-U", &ep.username, "-P", &ep.password])
        .args(args);
    cmd
}

/// `sshpass … ssh … USER@ADDR COMMAND` against a switch endpoint, host keys not checked.
pub fn ssh(ep: &lifeline_sim::Endpoint, command: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new("sshpass");
    cmd.args(["-p", &ep.password, "ssh", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-p", &ep.port.to_string()])
        .arg(format!("{}@{}", ep.username, ep.address))
        .arg(command);
    cmd
}

/// Polls `f` until it returns true (at most `secs`).
pub async fn eventually(secs: u64, mut f: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
