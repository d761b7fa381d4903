//! A private sushy-static (sushy-tools, a real third-party Redfish server) serving the shared peers'
//! mockup over HTTPS on a per-test loopback address, whose certificate can be replaced: each
//! [`TlsStatic::restart_with_new_certificate`] makes a fresh self-signed certificate with OpenSSL and
//! restarts the server on the same address, as a BMC does after a certificate replacement (or as someone
//! answering in its place would). Used by the trust-on-first-use and re-pin tests.

use std::net::{Ipv4Addr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{peers_dir, skip_or_fail, unique_loopback};

pub struct TlsStatic {
    pub ip: Ipv4Addr,
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
    mockup: PathBuf,
    bin: PathBuf,
    generation: u32,
    /// `sha256:…` of the certificate served now (OpenSSL's own computation, not Lifeline's).
    pub fingerprint: String,
}

impl TlsStatic {
    /// Started with a first certificate; `None` (skipped, or a failure under `OOB_PEERS_REQUIRED=1`)
    /// without sushy-static, the mockup or openssl.
    pub fn start() -> Option<TlsStatic> {
        let bin = std::env::var("OOB_PEERS_VENV")
            .map(|v| PathBuf::from(v).join("bin/sushy-static"))
            .ok()
            .filter(|p| p.is_file());
        let Some(bin) = bin else { return skip_or_fail("sushy-static not found (set OOB_PEERS_VENV)") };
        let mockup = peers_dir().map(|d| d.join("redfish/mockup")).filter(|m| m.is_dir());
        let Some(mockup) = mockup else {
            return skip_or_fail("peers' redfish/mockup not found (OOB_PEERS_DIR)");
        };
        if !crate::have("openssl") {
            return skip_or_fail("openssl not found");
        }
        let ip = unique_loopback();
        let port = std::net::TcpListener::bind((ip, 0)).ok()?.local_addr().ok()?.port();
        let mut s = TlsStatic {
            ip,
            port,
            child: None,
            dir: tempfile::tempdir().ok()?,
            mockup,
            bin,
            generation: 0,
            fingerprint: String::new(),
        };
        s.restart_with_new_certificate();
        Some(s)
    }

    /// `https://IP:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}:{}", self.ip, self.port)
    }

    /// A new self-signed certificate (new key), served on the same address once this returns.
    pub fn restart_with_new_certificate(&mut self) {
        self.stop();
        self.generation += 1;
        let cert = self.dir.path().join(format!("cert{}.pem", self.generation));
        let key = self.dir.path().join(format!("key{}.pem", self.generation));
        let ok = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
            .args(["-days", "2", "-subj", &format!("/CN=bmc generation {}", self.generation)])
            .args(["-addext", &format!("subjectAltName=IP:{}", self.ip)])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "openssl could not make a certificate");
        let out = Command::new("openssl")
            .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
            .arg(&cert)
            .output()
            .expect("openssl x509");
        let text = String::from_utf8_lossy(&out.stdout);
        let hex = text.trim().rsplit('=').next().unwrap_or_default().replace(':', "").to_lowercase();
        assert_eq!(hex.len(), 64, "openssl fingerprint: {text}");
        self.fingerprint = format!("sha256:{hex}");
        let log =
            std::fs::File::create(self.dir.path().join(format!("static{}.log", self.generation))).unwrap();
        let child = Command::new(&self.bin)
            .args(["-i", &self.ip.to_string(), "-p", &self.port.to_string()])
            .arg("-m")
            .arg(&self.mockup)
            .arg("-c")
            .arg(&cert)
            .arg("-k")
            .arg(&key)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sushy-static");
        self.child = Some(child);
        let t0 = Instant::now();
        while TcpStream::connect((self.ip, self.port)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(20), "sushy-static did not listen on {}", self.url());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for TlsStatic {
    fn drop(&mut self) {
        self.stop();
    }
}
