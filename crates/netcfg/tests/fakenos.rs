//! Backups against FakeNOS (real third-party SSH CLI, paramiko): IOS, EOS and a SONiC-like platform,
//! interactive shell only (FakeNOS refuses exec), `enable`, host-key pinning, a cut connection.

mod common;

use base64::Engine;
use lifeline_netcfg::backup::{
    BackupError, BackupOutcome, backup_all, backup_one, presented_host_key, trust,
};
use lifeline_netcfg::ssh::{SshAuth, SshError};
use lifeline_test_utils::peer_endpoints;
use lifeline_types::{DeviceName, Platform};

fn platform_of(fakenos: &str) -> Platform {
    match fakenos {
        "cisco_ios" => Platform::Ios,
        "arista_eos" => Platform::Eos,
        _ => Platform::Sonic,
    }
}

fn openssh_fp(fp: &lifeline_types::Fingerprint) -> String {
    format!("SHA256:{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(fp.0))
}

#[tokio::test]
async fn backs_up_every_fakenos_platform_and_pins_keys() {
    let Some(rows) = peer_endpoints("switches") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), true);
    let targets: Vec<_> = rows
        .iter()
        .take(3)
        .map(|r| {
            common::target(
                &r[0],
                &r[1],
                r[2].parse().unwrap(),
                &r[3],
                SshAuth::Password(r[4].clone()),
                platform_of(&r[5]),
            )
        })
        .collect();
    let results = backup_all(&ctx, targets.clone(), 3, |_| {}).await;
    for (r, row) in results.iter().zip(&rows) {
        match &r.outcome {
            Ok(BackupOutcome::NewVersion { version: 1, .. }) => {}
            other => panic!("{}: {:?}", r.device, other.as_ref().map_err(|e| e.chain())),
        }
        // The pinned fingerprint is the one OpenSSH's ssh-keygen computes for the same key.
        let pin = ctx.pins.get(&r.device).await.unwrap().unwrap();
        assert_eq!(openssh_fp(&pin), row[6], "{}", r.device);
        let v = ctx.index.latest(&r.device).await.unwrap().unwrap();
        let text = String::from_utf8(ctx.blobs.get(&v.blob).await.unwrap()).unwrap();
        match r.platform {
            Platform::Sonic => assert!(text.contains("\"DEVICE_METADATA\""), "{text}"),
            _ => assert!(text.trim_end().ends_with("end") && text.contains("hostname"), "{text}"),
        }
    }
    // A second run finds nothing changed.
    let again = backup_all(&ctx, targets, 3, |_| {}).await;
    for r in &again {
        assert!(
            matches!(r.outcome, Ok(BackupOutcome::Unchanged { version: 1 })),
            "{}: {:?}",
            r.device,
            r.outcome
        );
    }
}

#[tokio::test]
async fn changed_host_key_is_refused_until_repinned() {
    let Some(rows) = peer_endpoints("switches") else { return };
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let ios = &rows[0];
    let eos = &rows[1];
    let name = "leaf1-ios";
    let t = common::target(
        name,
        &ios[1],
        ios[2].parse().unwrap(),
        &ios[3],
        SshAuth::Password(ios[4].clone()),
        Platform::Ios,
    );
    backup_one(&ctx, &t).await.unwrap();
    let pinned = ctx.pins.get(&DeviceName::new(name).unwrap()).await.unwrap().unwrap();

    // The "same switch" now answers with another key (spine1-eos's port and key).
    let mut swapped = common::target(
        name,
        &eos[1],
        eos[2].parse().unwrap(),
        &eos[3],
        SshAuth::Password(eos[4].clone()),
        Platform::Eos,
    );
    let err = backup_one(&ctx, &swapped).await.unwrap_err();
    match &err {
        BackupError::Ssh(SshError::HostKeyChanged { pinned: p, presented, .. }) => {
            assert_eq!(*p, pinned);
            assert_eq!(openssh_fp(presented), eos[6]);
            let msg = err.to_string();
            assert!(msg.contains(&pinned.to_string()) && msg.contains(&presented.to_string()), "{msg}");
        }
        other => panic!("expected HostKeyChanged, got {}", other.chain()),
    }
    // Nothing was recorded for the refused connection.
    assert_eq!(ctx.index.list(&DeviceName::new(name).unwrap()).await.unwrap().len(), 1);

    // The operator looks first: both keys shown, nothing stored, no credential needed.
    let mut unknown_user = swapped.clone();
    unknown_user.ssh.username = "nobody-here".into();
    let (shown_pin, shown) = presented_host_key(&unknown_user, ctx.pins.clone()).await.unwrap();
    assert_eq!(shown_pin, Some(pinned));
    assert_eq!(openssh_fp(&shown), eos[6]);
    assert_eq!(ctx.pins.get(&DeviceName::new(name).unwrap()).await.unwrap(), Some(pinned));
    // Confirming another key (the old one) stores nothing.
    let err = trust(&swapped, ctx.pins.clone(), pinned).await.unwrap_err();
    match &err {
        BackupError::Ssh(SshError::HostKeyNotConfirmed { expected, presented, .. }) => {
            assert_eq!((*expected, *presented), (pinned, shown))
        }
        other => panic!("expected HostKeyNotConfirmed, got {}", other.chain()),
    }
    assert_eq!(ctx.pins.get(&DeviceName::new(name).unwrap()).await.unwrap(), Some(pinned));

    // Explicit re-pin of the key shown, then the backup goes through.
    let (prev, now) = trust(&swapped, ctx.pins.clone(), shown).await.unwrap();
    assert_eq!(prev, Some(pinned));
    assert_eq!(openssh_fp(&now), eos[6]);
    swapped.platform = Platform::Eos;
    let out = backup_one(&ctx, &swapped).await.unwrap();
    assert!(matches!(out, BackupOutcome::NewVersion { version: 2, previous: Some(1), .. }), "{out:?}");
}

#[tokio::test]
async fn cut_connection_stores_nothing_and_fails_the_device() {
    let Some(rows) = peer_endpoints("switches") else { return };
    let ios = &rows[0];
    let upstream = format!("{}:{}", ios[1], ios[2]);
    // Measure a full session through the proxy, then cut the next one three quarters of the way in
    // (inside the running-config output, which is most of the bytes).
    let (addr, count) = common::cutting_proxy(upstream.clone(), None).await;
    let (host, port) = addr.rsplit_once(':').unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let t = common::target(
        "leaf1-ios",
        host,
        port.parse().unwrap(),
        &ios[3],
        SshAuth::Password(ios[4].clone()),
        Platform::Ios,
    );
    let measure_dir = tempfile::tempdir().unwrap();
    backup_one(&common::ctx(measure_dir.path(), false), &t).await.unwrap();
    let full = count.load(std::sync::atomic::Ordering::SeqCst);

    let (addr, _) = common::cutting_proxy(upstream, Some(full * 3 / 4)).await;
    let (host, port) = addr.rsplit_once(':').unwrap();
    let t = common::target(
        "leaf1-ios",
        host,
        port.parse().unwrap(),
        &ios[3],
        SshAuth::Password(ios[4].clone()),
        Platform::Ios,
    );
    let results = backup_all(&ctx, vec![t], 1, |_| {}).await;
    let err = results[0].outcome.as_ref().unwrap_err();
    assert!(
        matches!(err, BackupError::Ssh(SshError::ClosedEarly { .. } | SshError::Channel { .. })),
        "{}",
        err.chain()
    );
    assert!(ctx.index.list(&DeviceName::new("leaf1-ios").unwrap()).await.unwrap().is_empty());
    // No blob was written either (not even a partial one).
    assert!(!dir.path().join("blobs").exists(), "a blob was written for a cut transfer");
}

#[tokio::test]
async fn a_switch_declared_with_the_wrong_platform_fails_within_seconds() {
    let Some(rows) = peer_endpoints("switches") else { return };
    for (fakenos, declared, expected) in [
        ("sonic_like", Platform::Ios, "expected an IOS prompt, saw `"),
        ("cisco_ios", Platform::Sonic, "expected a SONiC prompt, saw `"),
    ] {
        let Some(r) = rows.iter().find(|r| r[5] == fakenos) else { continue };
        let dir = tempfile::tempdir().unwrap();
        let ctx = common::ctx(dir.path(), false);
        let t = common::target(
            &r[0],
            &r[1],
            r[2].parse().unwrap(),
            &r[3],
            SshAuth::Password(r[4].clone()),
            declared,
        );
        let start = std::time::Instant::now();
        let err = backup_one(&ctx, &t).await.unwrap_err();
        let took = start.elapsed();
        assert!(
            matches!(err, BackupError::Ssh(SshError::PromptMismatch { .. })),
            "{fakenos}: {}",
            err.chain()
        );
        assert!(err.to_string().contains(expected), "{fakenos}: {err}");
        assert!(took < std::time::Duration::from_secs(8), "{fakenos}: took {took:?}");
        eprintln!("{fakenos} declared {declared}: {err} ({took:?})");
    }
}
