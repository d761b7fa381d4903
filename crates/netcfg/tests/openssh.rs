//! Backups from a real OpenSSH `sshd` started by the test (as the current user, on its own loopback
//! address): exec channel + `ForceCommand` printing a config, public-key auth, the legacy algorithm
//! profile, and a transfer cut halfway.

mod common;

use std::sync::Arc;

use lifeline_netcfg::backup::{BackupError, BackupOutcome, backup_one};
use lifeline_netcfg::ssh::{AlgorithmProfile, SshAuth, SshError, Transport};
use lifeline_types::{DeviceName, Platform};

/// A real sshd (the shared harness) plus the client key loaded for russh.
struct Sshd {
    inner: lifeline_test_utils::Sshd,
    addr: std::net::Ipv4Addr,
    port: u16,
    key: Arc<russh::keys::PrivateKey>,
    user: String,
}

/// Start sshd serving `config_text` through a forced command. `extra` adds sshd_config lines.
fn start_sshd(config_text: &str, extra: &str, host_key_kind: &str) -> Option<Sshd> {
    let inner = lifeline_test_utils::start_sshd_in(host_key_kind, |d| {
        std::fs::write(d.join("config.txt"), config_text).unwrap();
        format!("ForceCommand cat {}\n{extra}", d.join("config.txt").display())
    })?;
    let key = russh::keys::load_secret_key(&inner.client_key, None).unwrap();
    Some(Sshd { addr: inner.addr, port: inner.port, user: inner.user.clone(), key: Arc::new(key), inner })
}

fn eos_config(n: usize) -> String {
    let mut s =
        String::from("! Command: show running-config\n! Time: Mon Jan  1 00:00:00 2024\nhostname spine9\n");
    s.push_str("username admin privilege 15 role network-admin secret sha512 $6$abc$SECRETHASH\n");
    for i in 0..n {
        s.push_str(&format!("interface Ethernet{i}\n   mtu 9214\n   description rail {i}\n!\n"));
    }
    s.push_str("end\n");
    s
}

fn target(s: &Sshd, name: &str) -> lifeline_netcfg::BackupTarget {
    let mut t = common::target(
        name,
        &s.addr.to_string(),
        s.port,
        &s.user,
        SshAuth::PublicKey(s.key.clone()),
        Platform::Eos,
    );
    t.ssh.transport = Transport::Exec;
    t
}

#[tokio::test]
async fn exec_with_forced_command_and_key_auth() {
    let Some(sshd) = start_sshd(&eos_config(20), "", "ed25519") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let t = target(&sshd, "spine9");
    let out = backup_one(&ctx, &t).await.unwrap();
    assert!(matches!(out, BackupOutcome::NewVersion { version: 1, previous: None, .. }), "{out:?}");
    let v = ctx.index.latest(&DeviceName::new("spine9").unwrap()).await.unwrap().unwrap();
    let text = String::from_utf8(ctx.blobs.get(&v.blob).await.unwrap()).unwrap();
    assert!(text.starts_with("hostname spine9\n"), "volatile header kept:\n{text}");
    assert!(text.contains("secret sha512 <removed:") && !text.contains("SECRETHASH"), "{text}");
    // A new timestamp alone is not a change.
    std::fs::write(sshd.inner.dir.path().join("config.txt"), eos_config(20).replace("00:00:00", "12:34:56"))
        .unwrap();
    assert!(matches!(backup_one(&ctx, &t).await.unwrap(), BackupOutcome::Unchanged { version: 1 }));
    // A real change is.
    std::fs::write(sshd.inner.dir.path().join("config.txt"), eos_config(21)).unwrap();
    assert!(matches!(
        backup_one(&ctx, &t).await.unwrap(),
        BackupOutcome::NewVersion { version: 2, previous: Some(1), .. }
    ));
    // A truncated config (no `end`) is refused and stores nothing.
    let cut = eos_config(22);
    std::fs::write(sshd.inner.dir.path().join("config.txt"), &cut[..cut.len() / 2]).unwrap();
    let err = backup_one(&ctx, &t).await.unwrap_err();
    assert!(matches!(err, BackupError::Incomplete { .. }), "{}", err.chain());
    assert_eq!(ctx.index.list(&DeviceName::new("spine9").unwrap()).await.unwrap().len(), 2);
}

#[tokio::test]
async fn legacy_algorithms_only_when_allowed() {
    let legacy = "KexAlgorithms diffie-hellman-group14-sha1\nHostKeyAlgorithms ssh-rsa\nCiphers aes128-cbc\nMACs hmac-sha1\n";
    let Some(sshd) = start_sshd(&eos_config(3), legacy, "rsa") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let mut t = target(&sshd, "old-switch");
    let err = backup_one(&ctx, &t).await.unwrap_err();
    assert!(matches!(err, BackupError::Ssh(SshError::Handshake { .. })), "{}", err.chain());
    assert!(ctx.pins.get(&DeviceName::new("old-switch").unwrap()).await.unwrap().is_none());
    t.ssh.algorithms = Some(AlgorithmProfile::LEGACY);
    let out = backup_one(&ctx, &t).await.unwrap();
    assert!(matches!(out, BackupOutcome::NewVersion { version: 1, .. }), "{out:?}");
}

#[tokio::test]
async fn exec_transfer_cut_halfway_stores_nothing() {
    // ~100 kB of config so the cut lands well inside the transfer.
    let Some(sshd) = start_sshd(&eos_config(2000), "", "ed25519") else { return };
    let upstream = format!("{}:{}", sshd.addr, sshd.port);
    let (addr, _) = common::cutting_proxy(upstream, Some(60_000)).await;
    let (host, port) = addr.rsplit_once(':').unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let mut t = target(&sshd, "spine9");
    t.ssh.host = host.to_owned();
    t.ssh.port = port.parse().unwrap();
    let results = lifeline_netcfg::backup_all(&ctx, vec![t], 4, |_| {}).await;
    let err = results[0].outcome.as_ref().unwrap_err();
    assert!(
        matches!(err, BackupError::Ssh(SshError::ClosedEarly { received, .. }) if *received > 0),
        "{}",
        err.chain()
    );
    assert!(ctx.index.list(&DeviceName::new("spine9").unwrap()).await.unwrap().is_empty());
    assert!(!dir.path().join("blobs").exists());
}

#[tokio::test]
async fn raw_copy_keeps_trailing_whitespace_and_pager_like_content() {
    let config = "! Command: show running-config\n! Time: Mon Jan  1 00:00:00 2024\nhostname spine9   \n\
                  interface Ethernet1\n   description uplink -- More -- to spine1\n   description pad \t\n!\nend\n";
    let Some(sshd) = start_sshd(config, "", "ed25519") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), true);
    backup_one(&ctx, &target(&sshd, "spine9")).await.unwrap();
    let device = DeviceName::new("spine9").unwrap();
    let v = ctx.index.latest(&device).await.unwrap().unwrap();
    let stored = String::from_utf8(ctx.blobs.get(&v.blob).await.unwrap()).unwrap();
    // The comparison copy trims trailing whitespace (documented); the content stays.
    assert!(
        stored.contains("hostname spine9\n")
            && stored.contains("   description uplink -- More -- to spine1\n")
    );
    let sealed = ctx.raw.as_ref().unwrap().unseal(&device, &v.blob).await.unwrap().unwrap();
    assert_eq!(sealed, config, "the sealed raw copy is what the switch printed");
    let restorable = lifeline_netcfg::driver_for(Platform::Eos).restorable(&sealed);
    assert_eq!(restorable, &config[config.find("hostname").unwrap()..], "a restore pushes it byte for byte");
}
