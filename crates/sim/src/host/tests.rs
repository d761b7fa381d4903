//! The host model on its own: power stages on the console, refusals, the console shell, faults.

use super::*;
use crate::sel::sensor_type;
use lifeline_types::Health;

async fn wait_for(h: &Host, phase: Phase) {
    for _ in 0..500 {
        if h.phase() == phase {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never reached {phase:?} (is {:?})", h.name(), h.phase());
}

fn fast(name: &str) -> Arc<Host> {
    let mut cfg = HostConfig::server(name);
    cfg.time_scale = 0.005;
    Host::new(cfg)
}

#[tokio::test]
async fn power_cycle_boots_through_every_stage_on_the_console() {
    let h = fast("gpu-node-01");
    let mut rx = h.console().subscribe();
    let mut events = h.subscribe_events();
    assert_eq!(h.power(PowerCommand::PowerCycle).unwrap(), PowerOutcome::Started);
    assert_eq!(h.power_state(), PowerState::Off);
    wait_for(&h, Phase::OsUp).await;
    let mut text = Vec::new();
    while let Ok(b) = rx.try_recv() {
        text.extend_from_slice(&b);
    }
    let text = String::from_utf8_lossy(&text);
    for needle in ["BIOS Date", "GNU GRUB", "Linux version", "mlx5_core: mlx5_7", "gpu-node-01 login: "] {
        assert!(text.contains(needle), "missing {needle:?} in console:\n{text}");
    }
    assert_eq!(events.recv().await.unwrap(), HostEvent::Power(PowerState::Off));
    let sel: Vec<String> = h.sel_entries().into_iter().map(|e| e.message).collect();
    assert_eq!(sel, ["Host power off", "Host power on"]);
    assert_eq!(h.boots(), 2);
}

#[tokio::test]
async fn commands_that_need_power_are_refused_when_off() {
    let h = fast("n1");
    assert_eq!(h.power(PowerCommand::ForceOff).unwrap(), PowerOutcome::Started);
    assert_eq!(h.power(PowerCommand::ForceOff).unwrap(), PowerOutcome::NoChange);
    assert!(matches!(h.power(PowerCommand::PowerCycle), Err(HostError::NotPoweredOn { .. })));
    assert!(matches!(h.power(PowerCommand::ForceRestart), Err(HostError::NotPoweredOn { .. })));
    h.power(PowerCommand::On).unwrap();
    assert_eq!(h.power(PowerCommand::On).unwrap(), PowerOutcome::NoChange);
    wait_for(&h, Phase::OsUp).await;
    h.power(PowerCommand::GracefulShutdown).unwrap();
    assert_eq!(h.power_state(), PowerState::PoweringOff);
    wait_for(&h, Phase::Off).await;
}

#[tokio::test]
async fn login_shell_and_reboot_from_the_console() {
    let h = fast("n2");
    let mut rx = h.console().subscribe();
    h.console().write_input(b"root\r");
    h.console().write_input(b"secret\r");
    h.console().write_input(b"hostname\r");
    let mut got = String::new();
    while let Ok(b) = rx.try_recv() {
        got.push_str(&String::from_utf8_lossy(&b));
    }
    assert!(got.contains("Password: "), "{got}");
    assert!(!got.contains("secret"), "password must not echo: {got}");
    assert!(got.contains("root@n2:~# hostname\r\nn2\r\n"), "{got}");
    h.console().write_input(b"reboot\r");
    assert_eq!(h.phase(), Phase::ShuttingDown);
    wait_for(&h, Phase::OsUp).await;
    assert_eq!(h.boots(), 2);
}

#[tokio::test]
async fn sysrq_crash_halts_and_a_reset_recovers() {
    let h = fast("n3");
    h.console().send_break();
    h.console().write_input(b"c");
    assert_eq!(h.phase(), Phase::Halted);
    assert!(h.console().history().contains("Kernel panic"));
    h.power(PowerCommand::ForceRestart).unwrap();
    wait_for(&h, Phase::OsUp).await;
}

#[tokio::test]
async fn a_hung_os_answers_nothing_until_a_power_reset() {
    let h = fast("head-01");
    assert!(h.os_answering());
    h.inject(&Fault::OsHang).unwrap();
    assert!(!h.os_answering(), "power is on, the OS answers nothing");
    assert_eq!(h.power_state(), PowerState::On);
    assert_eq!(h.active_faults(), [Fault::OsHang]);
    // Typing at the console does nothing (no echo, no shell).
    let before = h.console().history();
    h.console().write_input(b"root\r");
    assert_eq!(h.console().history(), before);
    // A host power reset clears it (an IPMI hard reset / Redfish ForceRestart).
    h.power(PowerCommand::ForceRestart).unwrap();
    wait_for(&h, Phase::OsUp).await;
    assert!(h.os_answering() && h.active_faults().is_empty(), "{:?}", h.active_faults());
}

#[tokio::test]
async fn faults_reach_in_band_state_and_sel_and_a_cycle_clears_what_it_should() {
    let h = fast("n4");
    h.inject(&Fault::GpuXid { gpu: 2, code: 79 }).unwrap();
    h.inject(&Fault::GpuEcc { gpu: 5 }).unwrap();
    h.inject(&Fault::RailDown { hca: "mlx5_3".into() }).unwrap();
    assert!(matches!(h.inject(&Fault::GpuEcc { gpu: 9 }), Err(HostError::NoSuchGpu { count: 8, .. })));
    assert!(matches!(h.inject(&Fault::ConfigChange), Err(HostError::FaultNotApplicable { .. })));
    let n = h.node_state();
    assert_eq!(n.gpus[2].xid_events[0].code, 79);
    assert_eq!(n.gpus[5].ecc_volatile_uncorrected, 1);
    assert!(!n.rails[3].link_up);
    let sel: Vec<String> = h.sel_entries().into_iter().map(|e| e.message).collect();
    assert_eq!(sel.len(), 3, "{sel:?}");
    assert!(h.sensors().iter().any(|s| s.number == 0x15 && s.health == Health::Critical));
    assert_eq!(h.active_faults().len(), 3);
    h.power(PowerCommand::PowerCycle).unwrap();
    wait_for(&h, Phase::OsUp).await;
    let n = h.node_state();
    assert!(n.gpus[2].xid_events.is_empty());
    assert_eq!(n.gpus[5].ecc_volatile_uncorrected, 0);
    assert_eq!(n.gpus[5].ecc_aggregate_uncorrected, 1);
    assert!(!n.rails[3].link_up, "a cable stays unplugged across a power cycle");
    assert_eq!(h.active_faults(), vec![Fault::RailDown { hca: "mlx5_3".into() }]);
    h.clear_faults();
    assert!(h.node_state().rails[3].link_up);
}

#[tokio::test]
async fn boot_loop_never_reaches_the_os_until_cleared() {
    let h = fast("n5");
    h.inject(&Fault::BootLoop).unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_ne!(h.phase(), Phase::OsUp);
    let history = h.console().history();
    assert!(history.contains("Kernel panic - not syncing: Fatal exception"), "{history}");
    assert!(history.matches("Linux version").count() >= 2, "it boots again into the loop: {history}");
    assert!(h.sel_entries().iter().filter(|e| e.sensor_type == sensor_type::OS_STOP).count() >= 2);
    h.clear_faults();
    wait_for(&h, Phase::OsUp).await;
}

#[tokio::test]
async fn a_switch_boots_through_its_bootloader_and_loops_on_boot_loop() {
    let mut cfg = HostConfig::server("leaf1");
    cfg.kind = HostKind::Switch(lifeline_types::Platform::Eos);
    cfg.gpus.count = 0;
    cfg.rails.clear();
    cfg.time_scale = 0.01;
    let h = Host::new(cfg);
    h.power(PowerCommand::PowerCycle).unwrap();
    wait_for(&h, Phase::OsUp).await;
    assert!(h.console().history().contains("Aboot"), "{}", h.console().history());
    h.inject(&Fault::BootLoop).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_ne!(h.phase(), Phase::OsUp);
    h.clear_faults();
    h.power(PowerCommand::ForceRestart).unwrap();
    wait_for(&h, Phase::OsUp).await;
}

#[tokio::test]
async fn bmc_faults_flip_switches() {
    let h = fast("n6");
    h.inject(&"udp-loss=100".parse().unwrap()).unwrap();
    h.inject(&"bmc-slow=25".parse().unwrap()).unwrap();
    h.inject(&Fault::SolStuck).unwrap();
    let g = h.bmc().cert_generation();
    h.inject(&Fault::TlsCertChange).unwrap();
    assert!(h.bmc().drop_datagram());
    assert_eq!(h.bmc().slow(), Some(Duration::from_millis(25)));
    assert_eq!(h.bmc().cert_generation(), g + 1);
    h.reset_bmc();
    assert!(!h.bmc().sol_stuck());
    assert!(!h.bmc().restarting(), "a reset without a protocol (tests, the demo) is instant");
    h.set_bmc_reset_downtime(Duration::from_millis(300));
    h.reset_bmc_by(&crate::actions::Origin::new(crate::actions::Protocol::Control, None, None));
    assert!(h.bmc().restarting() && h.bmc().unresponsive());
    std::thread::sleep(Duration::from_millis(350));
    assert!(!h.bmc().restarting());
    h.clear_faults();
    assert!(!h.bmc().drop_datagram());
    assert!(h.active_faults().is_empty());
}

#[tokio::test]
async fn export_follows_faults() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = HostConfig::server("n7");
    cfg.export_dir = Some(dir.path().to_owned());
    let h = Host::new(cfg);
    h.flush_export().await;
    let state = dir.path().join("n7/sysfs/class/infiniband/mlx5_1/ports/1/state");
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "4: ACTIVE\n");
    h.inject(&Fault::RailDown { hca: "mlx5_1".into() }).unwrap();
    h.inject(&Fault::RailMtu { hca: "mlx5_2".into(), mtu: 1500 }).unwrap();
    h.flush_export().await;
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "1: DOWN\n");
    let mtu = dir.path().join("n7/sysfs/class/net/ens3np0/mtu");
    assert_eq!(std::fs::read_to_string(mtu).unwrap(), "1500\n");
}

#[tokio::test]
async fn in_band_state_is_built_on_first_use_and_is_the_state_it_would_have_had() {
    let h = fast("lazy-01");
    let built = |h: &Host| h.lock().node.built_mut().is_some();
    assert!(!built(&h), "an idle host keeps no in-band state");
    // Clearing faults reboots the in-band state: a state never built stays unbuilt (it is its first state).
    h.clear_faults();
    assert!(!built(&h));
    let cfg = HostConfig::server("lazy-01");
    let fresh = crate::node_state::NodeState::new("lazy-01", &cfg.gpus, &cfg.rails);
    assert_eq!(h.node_state(), fresh, "built late, the same node as built at start");
    assert!(built(&h));

    // Every way in builds it: sensors, a GPU fault, a rail fault, the console shell, a power cycle.
    let h = fast("lazy-02");
    assert!(h.sensors().iter().any(|s| s.name.contains("GPU")), "GPU sensors from the built state");
    assert!(built(&h));
    let h = fast("lazy-03");
    h.inject(&Fault::GpuXid { gpu: 1, code: 48 }).unwrap();
    assert_eq!(h.node_state().gpus[1].xid_events[0].code, 48);
    let h = fast("lazy-04");
    h.inject(&Fault::RailDown { hca: "mlx5_0".into() }).unwrap();
    assert!(!h.node_state().rails[0].link_up);
    h.clear_faults();
    assert!(h.node_state().rails[0].link_up);
    let h = fast("lazy-05");
    h.power(PowerCommand::PowerCycle).unwrap();
    wait_for(&h, Phase::OsUp).await;
    assert!(built(&h));
    let cfg = HostConfig::server("lazy-05");
    assert_eq!(h.node_state(), crate::node_state::NodeState::new("lazy-05", &cfg.gpus, &cfg.rails));
}
