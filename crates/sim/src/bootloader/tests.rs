use super::*;
use proptest::prelude::*;

fn machine(flavor: Flavor, boot_loop: bool) -> Machine {
    Machine::new(MachineConfig { flavor, hostname: "leaf1".into(), boot_loop })
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Advance in 50 ms steps until `stage` (or panic after `limit`), returning the virtual time.
fn until(m: &mut Machine, mut t: Duration, stage: Stage, limit: Duration, out: &mut String) -> Duration {
    while m.stage() != stage {
        assert!(t < limit, "{:?} never reached {stage:?} (is {:?}); output:\n{out}", m.flavor(), m.stage());
        t += ms(50);
        m.advance(t);
        out.push_str(&String::from_utf8_lossy(&m.take_output()));
    }
    t
}

#[test]
fn every_flavor_boot_loops_forever_without_help_and_boots_when_healthy() {
    for flavor in Flavor::ALL {
        let mut m = machine(flavor, true);
        let mut out = String::new();
        let mut t = Duration::ZERO;
        for _ in 0..3 {
            t = until(&mut m, t, Stage::Panicked, t + Duration::from_secs(60), &mut out);
            t = until(&mut m, t, Stage::Firmware, t + Duration::from_secs(60), &mut out);
        }
        assert!(m.boots() >= 4, "{flavor:?}: {}", m.boots());
        assert!(out.matches("Kernel panic - not syncing").count() >= 3, "{flavor:?}");
        assert!(!out.contains("login:"), "{flavor:?}");

        let mut m = machine(flavor, false);
        let mut out = String::new();
        until(&mut m, Duration::ZERO, Stage::Os, Duration::from_secs(60), &mut out);
        assert!(out.contains("leaf1 login: "), "{flavor:?}: {out}");
    }
}

#[test]
fn aboot_ctrl_c_counts_only_inside_its_window() {
    // Too early: the UART is not read yet.
    let mut m = machine(Flavor::Aboot, true);
    m.input(ms(10), b"\x03");
    assert_eq!(m.ignored_keys(), 1);
    let mut out = String::new();
    let t = until(&mut m, ms(10), Stage::AbootWindow, Duration::from_secs(10), &mut out);
    assert!(out.contains("Press Control-C now to enter Aboot shell"), "{out}");
    // Any other key in the window does nothing.
    m.input(t, b"\r");
    assert_eq!(m.stage(), Stage::AbootWindow);
    m.input(t + ms(100), b"\x03");
    assert_eq!(m.stage(), Stage::LoaderShell);
    assert!(String::from_utf8_lossy(&m.take_output()).ends_with("Welcome to Aboot.\r\nAboot# "));
    // The shell waits forever (no autoboot once trapped in Aboot).
    m.advance(t + Duration::from_secs(600));
    assert_eq!(m.stage(), Stage::LoaderShell);

    // Too late: the window closed, the kernel is booting, Ctrl-C is ignored.
    let mut m = machine(Flavor::Aboot, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::AbootWindow, Duration::from_secs(10), &mut out);
    let t = until(&mut m, t, Stage::Booting, t + ABOOT_WINDOW + ms(100), &mut out);
    m.input(t, b"\x03");
    assert_eq!(m.stage(), Stage::Booting);
    until(&mut m, t, Stage::Panicked, t + Duration::from_secs(10), &mut out);
}

#[test]
fn uboot_stops_on_any_key_and_runs_onie_rescue() {
    let mut m = machine(Flavor::UBoot, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::Countdown, Duration::from_secs(10), &mut out);
    assert!(out.contains("Hit any key to stop autoboot:  3"), "{out}");
    m.advance(t + ms(1100));
    assert!(String::from_utf8_lossy(&m.take_output()).contains("\x08\x08\x08 2"));
    m.input(t + ms(1200), b" ");
    assert_eq!(m.stage(), Stage::LoaderShell);
    m.input(t + ms(1300), b"printenv\r");
    assert!(String::from_utf8_lossy(&m.take_output()).contains("onie_rescue="));
    m.input(t + ms(1400), b"run onie_rescue\r");
    assert_eq!(m.stage(), Stage::Booting);
    let t = until(&mut m, t, Stage::AwaitingActivation, t + Duration::from_secs(20), &mut out);
    assert!(out.contains("Please press Enter to activate this console."));
    m.input(t, b"\r");
    assert_eq!(m.stage(), Stage::RescueShell);
    assert!(String::from_utf8_lossy(&m.take_output()).ends_with("ONIE:/ # "));
}

#[test]
fn onie_grub_menu_leads_to_rescue_and_the_timeout_to_install_mode() {
    let mut m = machine(Flavor::OnieGrub, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::BootMenu, Duration::from_secs(10), &mut out);
    assert!(out.contains("*SONiC-OS-202305.1"), "{out}");
    m.input(t + ms(100), b"\x1b[B");
    let o = String::from_utf8_lossy(&m.take_output()).into_owned();
    assert!(o.contains("*ONIE "), "{o}");
    assert!(!o.contains("executed automatically"), "a key stops the countdown");
    // No countdown any more: the menu waits.
    m.advance(t + Duration::from_secs(60));
    assert_eq!(m.stage(), Stage::BootMenu);
    m.input(t + Duration::from_secs(60), b"\r");
    let o = String::from_utf8_lossy(&m.take_output()).into_owned();
    assert!(o.contains("ONIE: Rescue") && o.contains("*ONIE: Install OS"), "{o}");
    m.input(t + Duration::from_secs(61), b"\x1b[B\r");
    let mut out = String::new();
    let t = until(&mut m, t, Stage::AwaitingActivation, t + Duration::from_secs(90), &mut out);
    assert!(out.contains("ONIE: Rescue Mode"), "{out}");
    m.input(t, b"\r");
    assert_eq!(m.stage(), Stage::RescueShell);

    // Leaving the ONIE menu alone boots the default entry: install mode, not rescue.
    let mut m = machine(Flavor::OnieGrub, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::BootMenu, Duration::from_secs(10), &mut out);
    m.input(t, b"\x1b[B\r");
    let t = until(&mut m, t, Stage::AwaitingActivation, t + Duration::from_secs(30), &mut out);
    m.input(t, b"\r");
    assert_eq!(m.stage(), Stage::OnieInstall);
}

#[test]
fn grub_advanced_options_recovery_mode_gives_a_root_shell() {
    let mut m = machine(Flavor::Grub, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::BootMenu, Duration::from_secs(10), &mut out);
    m.input(t, b"\x1b[B\r");
    let o = String::from_utf8_lossy(&m.take_output()).into_owned();
    assert!(o.contains("(recovery mode)"), "{o}");
    // ESC goes back to the main menu, like GRUB.
    m.input(t, b"\x1b");
    assert!(String::from_utf8_lossy(&m.take_output()).contains("*Ubuntu "));
    m.input(t, b"\x1b[B\r\x1b[B\r");
    let t = until(&mut m, t, Stage::AwaitingActivation, t + Duration::from_secs(30), &mut out);
    assert!(out.contains("recovery nomodeset"), "{out}");
    m.input(t, b"\r");
    assert_eq!(m.stage(), Stage::RescueShell);
    m.input(t, b"hostname\r");
    assert!(String::from_utf8_lossy(&m.take_output()).contains("leaf1\r\nroot@leaf1:~# "));
}

#[test]
fn grub_timeout_boots_the_default_entry() {
    let mut m = machine(Flavor::Grub, true);
    let mut out = String::new();
    let t = until(&mut m, Duration::ZERO, Stage::BootMenu, Duration::from_secs(10), &mut out);
    let t2 =
        until(&mut m, t, Stage::Booting, t + Duration::from_secs(GRUB_TIMEOUT_S as u64) + ms(100), &mut out);
    assert!(t2 - t >= Duration::from_secs(GRUB_TIMEOUT_S as u64 - 1), "{:?}", t2 - t);
    assert!(out.contains("executed automatically in 1s"), "{out}");
}

#[test]
fn platforms_map_to_flavors() {
    assert_eq!(Flavor::for_platform(Platform::Sonic), Some(Flavor::OnieGrub));
    assert_eq!(Flavor::for_platform(Platform::Eos), Some(Flavor::Aboot));
    assert_eq!(Flavor::for_platform(Platform::Cumulus), Some(Flavor::UBoot));
    assert_eq!(Flavor::for_platform(Platform::Ios), None);
}

#[tokio::test]
async fn boot_console_runs_in_scaled_real_time() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cfg = MachineConfig { flavor: Flavor::Aboot, hostname: "spine1".into(), boot_loop: true };
    let c = BootConsole::spawn(cfg, 0.01, move |b| {
        let _ = tx.send(b);
    });
    assert!(c.wait_for(Stage::AbootWindow, Duration::from_secs(5)).await);
    c.input(b"\x03");
    assert!(c.wait_for(Stage::LoaderShell, Duration::from_secs(5)).await);
    let mut text = Vec::new();
    while let Ok(b) = rx.try_recv() {
        text.extend_from_slice(&b);
    }
    assert!(String::from_utf8_lossy(&text).contains("Aboot# "));
    c.input(b"reboot\r");
    assert!(c.wait_for(Stage::Panicked, Duration::from_secs(5)).await);
    assert!(c.boots() >= 2);
}

proptest! {
    #[test]
    fn arbitrary_keys_at_arbitrary_times_never_panic(
        flavor in prop::sample::select(Flavor::ALL.to_vec()),
        steps in prop::collection::vec((0u64..3000, prop::collection::vec(any::<u8>(), 0..8)), 0..60),
    ) {
        let mut m = machine(flavor, true);
        let mut t = Duration::ZERO;
        for (dt, keys) in steps {
            t += ms(dt);
            m.input(t, &keys);
            let _ = m.take_output();
            prop_assert!(m.next_deadline().is_none_or(|d| d >= t - ms(dt)));
        }
    }
}
