//! A real OpenSSH `sshd` on its own loopback address, for tests of everything Lifeline does over SSH.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{peers_required, unique_loopback, wait_until};

/// A running sshd that accepts the current user with `client_key` (public-key auth only).
#[derive(Debug)]
pub struct Sshd {
    child: Child,
    pub addr: Ipv4Addr,
    pub port: u16,
    pub user: String,
    pub client_key: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// `ssh` arguments that reach this server without touching the user's known_hosts.
    pub fn client_args(&self) -> Vec<String> {
        vec![
            format!("-p{}", self.port),
            format!("-i{}", self.client_key.display()),
            "-oStrictHostKeyChecking=no".into(),
            "-oUserKnownHostsFile=/dev/null".into(),
            "-oLogLevel=ERROR".into(),
        ]
    }
}

fn keygen(path: &Path, kind: &str) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-f"])
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ssh-keygen failed (apt-get install openssh-client)");
}

/// Starts sshd (ed25519 host key) with `extra` appended to its config, or `None` (after `SKIP`) when
/// OpenSSH is missing and not required.
pub fn start_sshd(extra: &str) -> Option<Sshd> {
    let extra = extra.to_owned();
    start_sshd_in("ed25519", move |_| extra)
}

/// Starts sshd with a `host_key_kind` (`ed25519`, `rsa`, …) host key; `setup` gets the server's directory
/// (to write a forced command's files there) and returns extra config lines.
pub fn start_sshd_in(host_key_kind: &str, setup: impl FnOnce(&Path) -> String) -> Option<Sshd> {
    if !Path::new("/usr/sbin/sshd").exists() {
        assert!(
            !peers_required(),
            "OpenSSH server required (apt openssh-server) but /usr/sbin/sshd is missing"
        );
        eprintln!("SKIP: no /usr/sbin/sshd (apt-get install openssh-server)");
        return None;
    }
    // Privilege separation directory sshd insists on when started as root.
    let _ = std::fs::create_dir_all("/run/sshd");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(&d.join("host_key"), host_key_kind);
    keygen(&d.join("client_key"), "ed25519");
    let extra = setup(d);
    std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
    let addr = unique_loopback();
    let port = std::net::TcpListener::bind((addr, 0)).unwrap().local_addr().unwrap().port();
    let user =
        String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap().trim().to_owned();
    let conf = format!(
        "ListenAddress {addr}:{port}\nHostKey {hk}\nPidFile {pid}\nAuthorizedKeysFile {ak}\nStrictModes no\n\
         UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
         AllowUsers {user}\nLogLevel ERROR\n{extra}\n",
        hk = d.join("host_key").display(),
        pid = d.join("sshd.pid").display(),
        ak = d.join("authorized_keys").display(),
    );
    std::fs::write(d.join("sshd_config"), conf).unwrap();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(d.join("sshd_config"))
        .stdout(Stdio::null())
        .spawn()
        .expect("start sshd");
    wait_until("sshd listening", Duration::from_secs(10), || std::net::TcpStream::connect((addr, port)).ok());
    let client_key = d.join("client_key");
    Some(Sshd { child, addr, port, user, client_key, dir })
}
