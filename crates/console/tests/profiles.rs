//! Bootloader profiles against the simulator's bootloader state machines (`lifeline-sim` bootloader
//! module), reached through the console manager over an in-memory line: a switch in a boot loop is
//! broken into its bootloader and lands in the rescue shell, for every profile.
//!
//! The simulator's IPMI/SOL responder is not wired to these machines yet, so the line between the
//! manager and the machine is the in-memory transport instead of SOL.

use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, Bootloader, ConsoleManager, DirLogIndex, Expect, HostInput, ManagerConfig, RescueOptions,
    WriteMode, break_into_rescue, memory_line,
};
use lifeline_sim::bootloader::{BootConsole, Flavor, MachineConfig, Stage};

struct Rig {
    manager: ConsoleManager,
    boot: Arc<BootConsole>,
    forward: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

/// A boot-looping switch with `flavor` behind a managed console named `name`.
fn rig(name: &str, flavor: Flavor, scale: f64) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ManagerConfig::new(dir.path());
    let manager = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap();
    let (t, mut host) = memory_line(name, 1024);
    manager.add(name, Arc::new(t)).unwrap();
    let w = host.writer();
    let mc = MachineConfig { flavor, hostname: name.into(), boot_loop: true };
    let boot = Arc::new(BootConsole::spawn(mc, scale, move |b| {
        w.write(b);
    }));
    let b2 = boot.clone();
    let forward = tokio::spawn(async move {
        while let Some(i) = host.recv_input().await {
            if let HostInput::Data(d) = i {
                b2.input(&d);
            }
        }
    });
    Rig { manager, boot, forward, _dir: dir }
}

fn opts() -> RescueOptions {
    RescueOptions {
        wait_for_bootloader: Duration::from_secs(20),
        step_timeout: Duration::from_secs(5),
        attempts: 6,
        ..RescueOptions::default()
    }
}

async fn rescue(name: &str, flavor: Flavor, profile: Bootloader, want: Stage) {
    let r = rig(name, flavor, 0.1);
    // Let it loop once before anyone looks: the profile attaches mid-boot, like an operator would.
    assert!(r.boot.wait_for(Stage::Panicked, Duration::from_secs(20)).await, "{flavor:?} never panicked");
    let (viewer, _) = r
        .manager
        .attach(name, AttachOptions { who: "runbook".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = Expect::new(name, viewer);
    let report = match break_into_rescue(&mut e, profile, &opts()).await {
        Ok(rep) => rep,
        Err(err) => panic!("{profile:?}: {err}\n{}", e.transcript_text()),
    };
    assert_eq!(r.boot.stage(), want, "{profile:?}\n{}", e.transcript_text());
    assert!(r.boot.boots() >= 2, "it was boot-looping");
    let transcript = e.transcript_text();
    // Keys are only sent when the screen shows the right state: none fell into firmware/kernel output
    // except, at most, one per missed window.
    assert!(
        r.boot.ignored_keys() <= u64::from(report.attempts - 1),
        "{} keys ignored in {} attempts\n{transcript}",
        r.boot.ignored_keys(),
        report.attempts
    );
    if profile == Bootloader::Aboot {
        let ctrl_c = e.transcript().iter().filter(|t| t.text == "\\x03").count();
        assert_eq!(ctrl_c as u32, report.attempts, "one Ctrl-C per window, never more\n{transcript}");
        assert!(report.prompt.starts_with("Aboot#"), "{report:?}");
    } else {
        assert!(report.prompt.ends_with('#'), "{report:?}");
    }
    // The rescue shell answers.
    e.send(b"\r").await.unwrap();
    // Everything is in the console log.
    r.manager.flush_logs().await;
    let mut log = r.manager.log(name, None, false).unwrap();
    let mut text = Vec::new();
    while let Some(rec) = log.next().await {
        text.extend(rec.unwrap().data);
    }
    assert!(String::from_utf8_lossy(&text).contains("Kernel panic"), "the boot loop is in the log");
}

#[tokio::test]
async fn onie_profile_rescues_a_boot_looping_sonic_switch() {
    rescue("leaf-sonic", Flavor::OnieGrub, Bootloader::Onie, Stage::RescueShell).await;
}

#[tokio::test]
async fn uboot_profile_rescues_a_boot_looping_cumulus_switch() {
    rescue("leaf-cumulus", Flavor::UBoot, Bootloader::UBoot, Stage::RescueShell).await;
}

#[tokio::test]
async fn grub_profile_reaches_recovery_mode() {
    rescue("gpu-node-7", Flavor::Grub, Bootloader::Grub, Stage::RescueShell).await;
}

#[tokio::test]
async fn aboot_profile_enters_the_aboot_shell_with_a_single_ctrl_c() {
    rescue("spine-eos", Flavor::Aboot, Bootloader::Aboot, Stage::LoaderShell).await;
}

#[tokio::test]
async fn profiles_never_type_at_a_screen_they_do_not_recognise() {
    // A GRUB profile pointed at an Arista switch: it must give up without sending a single key
    // (a stray Ctrl-C or Enter could trap the switch in Aboot).
    let r = rig("spine-wrong", Flavor::Aboot, 0.1);
    let (viewer, _) = r
        .manager
        .attach("spine-wrong", AttachOptions { who: "runbook".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = Expect::new("spine-wrong", viewer);
    let o = RescueOptions { wait_for_bootloader: Duration::from_secs(2), attempts: 1, ..opts() };
    let err = break_into_rescue(&mut e, Bootloader::Grub, &o).await.unwrap_err();
    assert!(err.to_string().contains("GRUB menu"), "{err}");
    assert!(
        e.transcript().iter().all(|t| t.dir != lifeline_console::expect::Dir::Out),
        "{}",
        e.transcript_text()
    );
    assert_eq!(r.boot.ignored_keys(), 0);
    assert_ne!(r.boot.stage(), Stage::LoaderShell);
    // And detection says what it is.
    assert_eq!(lifeline_console::profiles::detect(&e.screen()), Some(Bootloader::Aboot));
}

#[tokio::test]
async fn runbook_steps_drive_a_console() {
    let r = rig("leaf-steps", Flavor::UBoot, 0.1);
    let (viewer, _) = r
        .manager
        .attach("leaf-steps", AttachOptions { who: "runbook".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = Expect::new("leaf-steps", viewer);
    let steps: Vec<lifeline_console::Step> = serde_json::from_str(
        r#"[
            {"op": "expect", "pattern": "Hit any key to stop autoboot:\\s*[1-9]\\s*\\z", "on": "screen", "timeout_ms": 20000},
            {"op": "key", "key": "space"},
            {"op": "expect", "pattern": "=> ", "timeout_ms": 5000},
            {"op": "send", "text": "printenv\r"},
            {"op": "expect", "pattern": "onie_rescue=", "timeout_ms": 5000},
            {"op": "sleep", "ms": 50}
        ]"#,
    )
    .unwrap();
    if let Err(err) = e.run_steps(&steps).await {
        // A missed window is possible on a loaded machine; the steps simply wait for the next boot.
        panic!("{err}: {:?}\n{}", err.source, e.transcript_text());
    }
    assert_eq!(r.boot.stage(), Stage::LoaderShell);
}
