//! netcfg against the simulator's SSH switches: every platform backed up (exec and shell), a
//! `config-change` fault seen as exactly that diff, restore to a spare verified, host-key rotation
//! refused, keyboard-interactive auth, and IOS `--More--` paging handled when paging stays on.

mod common;

use std::sync::Arc;

use lifeline_netcfg::backup::{BackupError, BackupOutcome, backup_one, trust};
use lifeline_netcfg::diff;
use lifeline_netcfg::platform::{Driver, Incomplete, Ios, Step};
use lifeline_netcfg::restore::{RestoreOptions, load_version, restore};
use lifeline_netcfg::ssh::{SshAuth, SshError, Transport};
use lifeline_netcfg::{BackupTarget, driver_for};
use lifeline_sim::switch::{SwitchState, serve};
use lifeline_types::{DeviceName, Platform};

struct SimSwitch {
    state: Arc<SwitchState>,
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for SimSwitch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn sim(name: &str, platform: Platform) -> SimSwitch {
    let ip = lifeline_test_utils::unique_loopback();
    let l = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = l.local_addr().unwrap();
    let state = Arc::new(SwitchState::new(name, platform, "leaf", "admin", "s1m-pass"));
    let task = tokio::spawn(serve(l, state.clone()));
    SimSwitch { state, addr, task }
}

fn target_for(s: &SimSwitch, device: &str, transport: Transport) -> BackupTarget {
    let mut t = common::target(
        device,
        &s.addr.ip().to_string(),
        s.addr.port(),
        "admin",
        SshAuth::Password("s1m-pass".into()),
        s.state.platform,
    );
    t.ssh.transport = transport;
    t
}

async fn latest_text(ctx: &lifeline_netcfg::BackupContext, device: &str) -> String {
    let v = ctx.index.latest(&DeviceName::new(device).unwrap()).await.unwrap().unwrap();
    String::from_utf8(ctx.blobs.get(&v.blob).await.unwrap()).unwrap()
}

#[tokio::test]
async fn every_platform_backed_up_over_exec_and_shell() {
    for p in Platform::ALL {
        let s = sim("leaf4", *p).await;
        let dir = tempfile::tempdir().unwrap();
        let ctx = common::ctx(dir.path(), false);
        let out = backup_one(&ctx, &target_for(&s, "leaf4", Transport::Auto)).await;
        assert!(
            matches!(out, Ok(BackupOutcome::NewVersion { version: 1, .. })),
            "{p}: {:?}",
            out.map_err(|e| e.chain())
        );
        let text = latest_text(&ctx, "leaf4").await;
        for secret in [
            "c0mmun1ty",
            "lifeline-ro-4",
            "sonic-ro-4",
            "cumulus-ro-4",
            "tac-key-4",
            "tacacs-key-4",
            "bgp-secret",
            "bgp-pass",
            "$6$sim4",
            "$1$sIm",
        ] {
            assert!(!text.contains(secret), "{p}: {secret} leaked:\n{text}");
        }
        assert!(text.contains("9000"), "{p}: rails MTU missing");
        // Over the interactive shell the normalised config is identical (no new version), even
        // though EOS prints a new `! Time:` and IOS its header every time.
        let out = backup_one(&ctx, &target_for(&s, "leaf4", Transport::Shell)).await;
        assert!(
            matches!(out, Ok(BackupOutcome::Unchanged { version: 1 })),
            "{p}: {:?}",
            out.map_err(|e| e.chain())
        );
    }
}

#[tokio::test]
async fn config_change_fault_is_exactly_that_diff() {
    for p in Platform::ALL {
        let s = sim("spine2", *p).await;
        let dir = tempfile::tempdir().unwrap();
        let ctx = common::ctx(dir.path(), false);
        let t = target_for(&s, "spine2", Transport::Auto);
        backup_one(&ctx, &t).await.unwrap();
        let v1 = latest_text(&ctx, "spine2").await;
        let change = s.state.config_change();
        let out = backup_one(&ctx, &t).await.unwrap();
        assert!(
            matches!(out, BackupOutcome::NewVersion { version: 2, previous: Some(1), .. }),
            "{p}: {out:?}"
        );
        let v2 = latest_text(&ctx, "spine2").await;
        assert_eq!(
            diff::changed_lines(&v1, &v2),
            vec![format!("-{}", change.removed), format!("+{}", change.added)],
            "{p}"
        );
        let u = diff::unified(&v1, &v2, "spine2 v1", "spine2 v2");
        assert_eq!(u.lines().filter(|l| l.starts_with('@')).count(), 1, "{p}:\n{u}");
    }
}

#[tokio::test]
async fn restore_to_spare_makes_running_equal_to_the_version() {
    for p in Platform::ALL {
        if *p == Platform::Nxos {
            continue; // same driver and CLI as IOS
        }
        let primary = sim("leaf7", *p).await;
        let spare = sim("spare1", *p).await;
        let dir = tempfile::tempdir().unwrap();
        let ctx = common::ctx(dir.path(), true);
        backup_one(&ctx, &target_for(&primary, "leaf7", Transport::Auto)).await.unwrap();
        let version = load_version(&ctx, &DeviceName::new("leaf7").unwrap(), Some(1)).await.unwrap();
        assert!(version.raw.is_some(), "{p}: raw config sealed");

        let spare_target = target_for(&spare, "spare1", Transport::Auto);
        let before = spare.state.running_config();
        let dry =
            restore(&ctx, &spare_target, &version, RestoreOptions { dry_run: true, ..Default::default() })
                .await
                .unwrap();
        assert!(
            !dry.applied && dry.diff_before.contains("+") && dry.diff_before.contains("leaf7"),
            "{p}: {}",
            dry.diff_before
        );
        assert_eq!(spare.state.running_config(), before, "{p}: dry run changed the spare");

        let report = restore(&ctx, &spare_target, &version, RestoreOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(report.applied && report.verified, "{p}: {report:?}");
        assert_eq!(
            spare.state.running_config(),
            primary.state.running_config(),
            "{p}: spare runs the primary's config"
        );
        assert_eq!(spare.state.saved_config(), primary.state.running_config(), "{p}: and boots with it");
        if *p == Platform::Ios {
            assert_eq!(spare.state.reloads(), 1);
        }
        // A backup of the spare now equals the version exactly.
        backup_one(&ctx, &spare_target).await.unwrap();
        assert_eq!(latest_text(&ctx, "spare1").await, version.normalised, "{p}");
    }
}

#[tokio::test]
async fn restore_without_raw_is_refused_unless_allowed() {
    let s = sim("leaf8", Platform::Eos).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let t = target_for(&s, "leaf8", Transport::Auto);
    backup_one(&ctx, &t).await.unwrap();
    let v = load_version(&ctx, &DeviceName::new("leaf8").unwrap(), None).await.unwrap();
    let err = restore(&ctx, &t, &v, RestoreOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("no sealed raw config"), "{err}");
}

#[tokio::test]
async fn rotated_host_key_is_refused_then_repinned() {
    let s = sim("leaf5", Platform::Sonic).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let t = target_for(&s, "leaf5", Transport::Auto);
    backup_one(&ctx, &t).await.unwrap();
    let pinned = ctx.pins.get(&DeviceName::new("leaf5").unwrap()).await.unwrap().unwrap();
    s.state.rotate_host_key();
    let err = backup_one(&ctx, &t).await.unwrap_err();
    let BackupError::Ssh(SshError::HostKeyChanged { pinned: p, presented, .. }) = &err else {
        panic!("expected HostKeyChanged, got {}", err.chain())
    };
    assert_eq!(*p, pinned);
    assert_ne!(*presented, pinned);
    assert!(err.to_string().contains("lifeline backup trust leaf5"), "{err}");
    let (prev, now) = trust(&t, ctx.pins.clone(), *presented).await.unwrap();
    assert_eq!((prev, now), (Some(pinned), *presented));
    assert!(matches!(backup_one(&ctx, &t).await.unwrap(), BackupOutcome::Unchanged { version: 1 }));
}

#[tokio::test]
async fn keyboard_interactive_and_wrong_password() {
    let s = sim("leaf6", Platform::Cumulus).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let mut t = target_for(&s, "leaf6", Transport::Auto);
    t.ssh.auth = SshAuth::KeyboardInteractive("s1m-pass".into());
    assert!(matches!(backup_one(&ctx, &t).await.unwrap(), BackupOutcome::NewVersion { version: 1, .. }));
    t.ssh.auth = SshAuth::Password("wrong".into());
    let err = backup_one(&ctx, &t).await.unwrap_err();
    assert!(
        matches!(err, BackupError::Ssh(SshError::AuthRejected { method: "password", .. })),
        "{}",
        err.chain()
    );
}

/// IOS that forgets `terminal length 0`: the client must page through `--More--` itself.
#[derive(Debug)]
struct IosWithPaging(Ios);

impl Driver for IosWithPaging {
    fn platform(&self) -> Platform {
        self.0.platform()
    }
    fn prompt(&self) -> &regex::Regex {
        self.0.prompt()
    }
    fn needs_enable(&self) -> bool {
        true
    }
    fn fetch_command(&self) -> &str {
        self.0.fetch_command()
    }
    fn exec_supported(&self) -> bool {
        false
    }
    fn canonical(&self, output: &str) -> String {
        self.0.canonical(output)
    }
    fn is_volatile(&self, line: &str) -> bool {
        self.0.is_volatile(line)
    }
    fn validate(&self, config: &str) -> Result<(), Incomplete> {
        self.0.validate(config)
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        self.0.restore_steps(config)
    }
}

#[tokio::test]
async fn ios_pager_is_paged_through() {
    let s = sim("leaf9", Platform::Ios).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let plain = target_for(&s, "leaf9", Transport::Shell);
    backup_one(&ctx, &plain).await.unwrap();
    let mut paged = plain.clone();
    paged.driver = Some(Arc::new(IosWithPaging(Ios::new(Platform::Ios))));
    assert!(matches!(backup_one(&ctx, &paged).await.unwrap(), BackupOutcome::Unchanged { version: 1 }));
    let text = latest_text(&ctx, "leaf9").await;
    assert!(!text.contains("More"), "{text}");
    let _ = driver_for(Platform::Ios);
}

/// A site-like IOS config whose content looks like pager prompts, several pages long. (The sim
/// trims trailing whitespace when it loads a config; `openssh.rs` checks that the raw copy keeps it.)
fn tricky_ios_config() -> String {
    let mut c = String::from(
        "hostname leaf10\n!\ninterface Ethernet1\n description uplink -- More -- to spine1\n description --More--\n!\n",
    );
    for i in 2..40 {
        c.push_str(&format!("interface Ethernet{i}\n description rack {i} -- More --\n mtu 9000\n!\n"));
    }
    c.push_str("end\n");
    c
}

#[tokio::test]
async fn pager_prompts_are_removed_only_where_the_pager_stopped() {
    use lifeline_netcfg::blobs::BlobId;
    use lifeline_netcfg::index::VersionRecord;
    use lifeline_netcfg::platform::normalise;
    use lifeline_netcfg::restore::LoadedVersion;

    let s = sim("leaf10", Platform::Ios).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), true);
    let plain = target_for(&s, "leaf10", Transport::Shell);
    // Put the config on the switch with our own restore (from a raw copy, so byte-exact).
    let raw = tricky_ios_config();
    let driver = Ios::new(Platform::Ios);
    let normalised = normalise(&driver, &raw, &ctx.blobs.tag_key().unwrap());
    let version = LoadedVersion {
        record: VersionRecord {
            device: DeviceName::new("leaf10").unwrap(),
            version: 1,
            platform: Platform::Ios,
            blob: BlobId::of(normalised.as_bytes()),
            size: normalised.len() as u64,
            taken_at: chrono::Utc::now(),
            raw_sealed: true,
        },
        normalised: normalised.clone(),
        raw: Some(raw.clone()),
    };
    let report = restore(&ctx, &plain, &version, RestoreOptions::default()).await.unwrap();
    assert!(report.verified, "{report:?}");
    assert_eq!(s.state.running_config(), raw, "restore pushes the raw text");

    // Back it up with paging left on: the sim pages every 23 lines.
    let mut paged = plain.clone();
    paged.driver = Some(Arc::new(IosWithPaging(Ios::new(Platform::Ios))));
    backup_one(&ctx, &paged).await.unwrap();
    let stored = latest_text(&ctx, "leaf10").await;
    assert_eq!(stored, normalised, "every line kept across the page breaks");
    assert!(stored.contains(" description uplink -- More -- to spine1\n description --More--\n"));
    let v = ctx.index.latest(&DeviceName::new("leaf10").unwrap()).await.unwrap().unwrap();
    let sealed = ctx.raw.as_ref().unwrap().unseal(&v.device, &v.blob).await.unwrap().unwrap();
    assert!(sealed.contains(" description uplink -- More -- to spine1\n"), "{sealed}");
    assert!(sealed.contains(" description --More--\n"), "{sealed}");
    assert!(sealed.contains(" description rack 39 -- More --\n"), "{sealed}");
    assert!(!sealed.contains(" --More-- "), "the pager's own prompts are gone:\n{sealed}");
    assert_eq!(driver.restorable(&sealed), raw, "a restore from the sealed copy is faithful");
}

#[tokio::test]
async fn a_platform_mismatch_fails_within_seconds_naming_both_prompts() {
    let s = sim("sonic", Platform::Sonic).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let mut t = target_for(&s, "sonic", Transport::Auto);
    t.platform = Platform::Ios;
    let start = std::time::Instant::now();
    let err = backup_one(&ctx, &t).await.unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(&err, BackupError::Ssh(SshError::PromptMismatch { expected: Platform::Ios, .. })),
        "{}",
        err.chain()
    );
    assert!(err.to_string().contains("expected an IOS prompt, saw `admin@sonic:~$`"), "{err}");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}
