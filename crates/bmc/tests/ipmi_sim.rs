//! `lifeline-bmc` against OpenIPMI `ipmi_sim` (a real third-party IPMI 2.0 BMC), one private instance per
//! test: confirmed power (status, off/on, cycle observed off -> on), idempotent retries, per-BMC
//! serialisation, audit-before-act, SDR sensors (the ones `ipmitool sdr list` shows), SEL, sessions closed,
//! `auto` falling back to IPMI, sweep with a dead BMC, and the hygiene audit.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use lifeline_bmc::hygiene::{AttemptOutcome, HygieneOptions};
use lifeline_bmc::*;
use lifeline_types::{BmcProtocol, Health, PowerAction, PowerState};

fn count(log: &[String], needle: &str) -> usize {
    log.iter().filter(|l| l.contains(needle)).count()
}

#[tokio::test]
async fn power_status_and_cycle_confirmed_off_then_on() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, audit) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);

    let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert_eq!(r.confirmation, Confirmation::TransitionObserved, "{r:#?}");
    assert!(r.confirmed && r.action_sent && r.acknowledged);
    assert_eq!((r.before, r.observed, r.requested), (PowerState::On, PowerState::On, PowerState::On));
    let states: Vec<PowerState> = r.transitions.iter().map(|t| t.state).collect();
    assert_eq!(states, vec![PowerState::On, PowerState::Off, PowerState::On], "{r:#?}");
    // ipmi_sim powers back on after 1 s.
    assert!(r.confirmed_after_ms.unwrap() >= 900, "{r:#?}");
    let log = sim.chassis_log(0);
    assert_eq!(count(&log, "power 0"), 1, "exactly one off: {log:?}");
    assert_eq!(count(&log, "power 1"), 1, "exactly one on: {log:?}");

    let rows = audit.rows();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(matches!(&rows[0], AuditRow::Intent { rec, .. } if rec.action.as_str() == "power.cycle"));
    assert!(
        matches!(&rows[1], AuditRow::Outcome(o) if o.ok && o.detail["confirmation"] == "transition-observed")
    );
}

#[tokio::test]
async fn off_and_on_are_read_first_and_retries_are_not_doubled() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _audit) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));

    let off = bmc.power(PowerAction::Off, None).await.unwrap();
    assert_eq!(off.confirmation, Confirmation::StateReached);
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
    // Already off: nothing is sent.
    let again = bmc.power(PowerAction::Off, None).await.unwrap();
    assert_eq!((again.confirmation, again.action_sent), (Confirmation::AlreadyInState, false));
    assert_eq!(count(&sim.chassis_log(0), "power 0"), 1, "{:?}", sim.chassis_log(0));

    // A retried request (same id) returns the first report and sends nothing.
    let on = bmc.power(PowerAction::On, Some("req-42".into())).await.unwrap();
    assert_eq!(on.confirmation, Confirmation::StateReached);
    let retry = bmc.power(PowerAction::On, Some("req-42".into())).await.unwrap();
    assert!(retry.replayed && retry.action_sent);
    assert_eq!(count(&sim.chassis_log(0), "power 1"), 1, "{:?}", sim.chassis_log(0));
    // Even a cycle is not repeated under the same request id.
    let c1 = bmc.power(PowerAction::Cycle, Some("req-43".into())).await.unwrap();
    let c2 = bmc.power(PowerAction::Cycle, Some("req-43".into())).await.unwrap();
    assert!(c1.confirmed && c2.replayed);
    assert_eq!(count(&sim.chassis_log(0), "power 0"), 2, "{:?}", sim.chassis_log(0));
}

#[tokio::test]
async fn two_power_actions_on_one_bmc_never_overlap() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, audit) = pool_with(quick_options());
    let a = pool.bmc(sim.target(0, "node1"));
    let b = pool.bmc(sim.target(0, "node1"));
    let (ra, rb) = tokio::join!(a.power(PowerAction::Cycle, None), b.power(PowerAction::Cycle, None));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    let span = |r: &PowerReport| {
        let s = r.started_at.timestamp_millis();
        (s, s + r.total_ms as i64)
    };
    let ((s1, e1), (s2, e2)) = (span(&ra), span(&rb));
    assert!(e1 <= s2 + 5 || e2 <= s1 + 5, "overlap: {:?} {:?}", (s1, e1), (s2, e2));
    assert!(ra.confirmed && rb.confirmed);
    assert_eq!(count(&sim.chassis_log(0), "power 0"), 2);
    // Intent, outcome, intent, outcome: never two intents in a row.
    let kinds: Vec<bool> = audit.rows().iter().map(|r| matches!(r, AuditRow::Intent { .. })).collect();
    assert_eq!(kinds, vec![true, false, true, false]);
}

struct BrokenAudit;

#[async_trait]
impl AuditSink for BrokenAudit {
    async fn intent(&self, _: &AuditIntent) -> Result<AuditId, BoxError> {
        Err("database is read-only".into())
    }
    async fn outcome(&self, _: &AuditOutcome) -> Result<(), BoxError> {
        Err("database is read-only".into())
    }
}

#[tokio::test]
async fn no_action_without_its_audit_row() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let pool = BmcPool::new(quick_options(), Arc::new(BrokenAudit));
    let bmc = pool.bmc(sim.target(0, "node1"));
    let err = bmc.power(PowerAction::Off, None).await.unwrap_err();
    assert!(matches!(err, BmcError::AuditUnavailable { .. }), "{err}");
    assert!(sim.chassis_log(0).is_empty());
    assert!(bmc.clear_events().await.is_err());
    assert_eq!(bmc.events(10).await.unwrap().entries.len(), 2, "SEL not cleared without an audit row");
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On, "reads need no audit row");
}

#[tokio::test]
async fn health_lists_the_sensors_ipmitool_lists() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    let h = bmc.health().await.unwrap();
    assert_eq!(h.protocol, BmcProtocol::Ipmi);
    let names: Vec<&str> = h.sensors.iter().map(|s| s.name.as_str()).collect();
    let ipmitool = tokio::task::spawn_blocking({
        let ip = sim.ip;
        move || {
            let out = std::process::Command::new("ipmitool")
                .args(["-I", "lanplus", "-C", "3", "-H", &ip.to_string(), "-p", "6230", "-U", "admin"])
                .args(["-P", "password", "sdr", "list"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    })
    .await
    .unwrap();
    let theirs: Vec<String> = ipmitool
        .lines()
        .filter_map(|l| l.split('|').next())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(!theirs.is_empty(), "ipmitool listed nothing");
    for n in &theirs {
        assert!(names.contains(&n.as_str()), "ipmitool lists {n}, we list {names:?}");
    }
    let gpu = h.sensors.iter().find(|s| s.name == "GPU0 Temp").unwrap();
    assert_eq!(gpu.reading, Some(60.0));
    assert_eq!(gpu.units.as_deref(), Some("°C"), "{gpu:?}");
    assert_eq!((gpu.thresholds.upper_caution, gpu.thresholds.upper_critical), (Some(85.0), Some(90.0)));
    assert_eq!(h.health, Health::Ok, "{h:#?}");

    // Push GPU0 Temp over its critical threshold on the BMC itself.
    let emu = sim.emucon(0, "sensor_set_value 0x20 0 3 0x5c 1");
    let h = bmc.health().await.unwrap();
    let gpu = h.sensors.iter().find(|s| s.name == "GPU0 Temp").unwrap();
    assert_eq!((gpu.reading, gpu.health), (Some(92.0), Health::Critical), "{gpu:?} (console said {emu:?})");
    assert_eq!(h.health, Health::Critical);
}

#[tokio::test]
async fn sel_newest_first_normalised() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, audit) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    let log = bmc.events(10).await.unwrap();
    assert_eq!(log.total, Some(2));
    assert_eq!(log.entries.len(), 2, "{log:#?}");
    let (psu, gpu) = (&log.entries[0], &log.entries[1]);
    assert!(psu.message.contains("power supply failure detected asserted"), "{psu:?}");
    assert_eq!(psu.severity, Health::Critical);
    assert_eq!(gpu.sensor.as_deref(), Some("GPU0 Temp"), "named through the SDR: {gpu:?}");
    assert!(gpu.message.contains("upper critical going high"), "{gpu:?}");
    assert!(gpu.message.contains("reading 92"), "{gpu:?}");
    assert_eq!(bmc.events(1).await.unwrap().entries.len(), 1);

    bmc.clear_events().await.unwrap();
    assert!(bmc.events(10).await.unwrap().entries.is_empty());
    assert!(
        audit
            .rows()
            .iter()
            .any(|r| matches!(r, AuditRow::Intent { rec, .. } if rec.action.as_str() == "sel.clear"))
    );
}

#[tokio::test]
async fn inventory_from_device_id() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let inv = pool.bmc(sim.target(0, "node1")).inventory().await.unwrap();
    // bmc.emu: `mc_add 0x20 0 ... 9 8 0x9f 0x1291 0xf02`.
    assert_eq!(inv.iana, Some(0x1291));
    assert!(inv.bmc_firmware.as_deref().is_some_and(|f| f.starts_with("9.")), "{inv:?}");
    assert_eq!(inv.model.as_deref(), Some("product 0x0f02"));
    // ipmi_sim has no FRU data: a warning, not a failure.
    assert!(!inv.warnings.is_empty(), "{inv:?}");
}

#[tokio::test]
async fn sessions_are_closed_far_beyond_the_session_limit() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    // ipmi_sim holds a few sessions at most; 60 operations in sequence only work if each one closes.
    for i in 0..60 {
        bmc.power_state().await.unwrap_or_else(|e| panic!("operation {i}: {}", error_chain(&e)));
    }
    bmc.health().await.unwrap();
    bmc.events(5).await.unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let s = sim.ipmitool(0, &["session", "info", "active"]);
        drop(sim);
        s
    })
    .await
    .unwrap();
    // Only ipmitool's own session is active.
    assert_eq!(out.matches("session handle").count(), 1, "{out}");
}

#[tokio::test]
async fn auto_falls_back_to_ipmi_and_remembers() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let memory = Arc::new(MemoryProtocolMemory::new());
    let pool = BmcPool::with_memory(quick_options(), Arc::new(MemoryAuditSink::new()), memory.clone());
    let mut t = sim.target(0, "node1");
    t.protocol = BmcProtocol::Auto;
    // Nothing listens on this TCP port of the test's own address.
    t.redfish_port = std::net::TcpListener::bind((sim.ip, 0)).unwrap().local_addr().unwrap().port();
    let bmc = pool.bmc(t);
    assert_eq!(bmc.protocol().await.unwrap(), BmcProtocol::Ipmi);
    assert_eq!(memory.recall("node1").await.unwrap(), Some(BmcProtocol::Ipmi));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);

    // Nothing at all: an error naming both ports.
    let mut dead = BmcTarget::new("dead", sim.ip.to_string(), BmcProtocol::Auto, "admin", "password");
    dead.redfish_port = 1;
    dead.ipmi_port = 1;
    let err = pool.bmc(dead).power_state().await.unwrap_err();
    assert!(matches!(err, BmcError::NoProtocol { .. }), "{}", error_chain(&err));
}

#[tokio::test]
async fn sweep_streams_rows_and_survives_a_dead_bmc() {
    let Some(sim) = IpmiSims::start(3) else { return };
    let (pool, _) = pool_with(quick_options());
    let mut targets: Vec<BmcTarget> = (0..3).map(|i| sim.target(i, &format!("node{i}"))).collect();
    let mut dead = sim.target(0, "dead");
    dead.ipmi_port = 1;
    targets.insert(1, dead);
    let mut seen = Vec::new();
    let opts = SweepOptions { events: 2, per_bmc_timeout: Duration::from_secs(20), ..Default::default() };
    let rows = pool.sweep(targets, &opts, |row, p| seen.push((row.name.clone(), p.done, p.total))).await;
    assert_eq!(rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["node0", "dead", "node1", "node2"]);
    assert_eq!(seen.len(), 4);
    assert_eq!(seen.iter().map(|s| s.1).collect::<Vec<_>>(), [1, 2, 3, 4]);
    for r in rows.iter().filter(|r| r.name != "dead") {
        assert!(r.ok(), "{r:#?}");
        assert_eq!(
            (r.protocol, r.power, r.health),
            (Some(BmcProtocol::Ipmi), Some(PowerState::On), Some(Health::Ok))
        );
        assert_eq!(r.sensors, 6);
        assert_eq!(r.events.len(), 2);
    }
    let dead = &rows[1];
    assert!(dead.errors.iter().any(|e| e.starts_with("connect:")), "{dead:#?}");
    assert_eq!(dead.power, None);
}

#[tokio::test]
async fn hygiene_audit_is_bounded_and_finds_cipher_suite_zero() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, audit) = pool_with(quick_options());
    let rows = pool.hygiene_audit(vec![sim.target(0, "node1")], &HygieneOptions::default()).await;
    let r = &rows[0];
    assert!(r.accepted_defaults.is_empty(), "{r:#?}");
    assert_eq!(r.attempts.len(), 2, "never more than the lockout guard allows: {r:#?}");
    assert!(r.attempts.iter().all(|a| a.outcome == AttemptOutcome::Refused), "{r:#?}");
    assert!(r.stopped.as_deref().is_some_and(|s| s.contains("lockout guard")));
    let ipmi = r.ipmi.as_ref().unwrap();
    assert!(ipmi.ipmi2);
    assert!(ipmi.cipher_suites.contains(&3), "{ipmi:?}");
    // ipmi_sim offers suites 0-3 and 6.
    assert!(ipmi.cipher_suite_zero, "{ipmi:?}");
    assert!(r.findings.iter().any(|f| f.code == "ipmi-cipher-zero" && f.severity == Health::Critical));
    // Every attempt audited, without the password.
    let intents = audit
        .rows()
        .iter()
        .filter(|r| matches!(r, AuditRow::Intent { rec, .. } if rec.action.as_str() == "hygiene.login"))
        .count();
    assert_eq!(intents, 2);
    assert!(!serde_json::to_string(&audit.rows()).unwrap().contains("calvin"));

    // A site default that matches is found at the first attempt, and the run stops there.
    let o =
        HygieneOptions { extra_credentials: vec![("admin".into(), "password".into())], ..Default::default() };
    let rows = pool.hygiene_audit(vec![sim.target(0, "node1")], &o).await;
    let r = &rows[0];
    assert_eq!(r.attempts.len(), 1, "{r:#?}");
    assert_eq!(r.accepted_defaults[0].username, "admin");
    assert!(r.findings.iter().any(|f| f.code == "default-credentials"));

    // Zero allowed failures: no login attempt at all.
    let o = HygieneOptions { max_failures_per_bmc: 0, ..Default::default() };
    let rows = pool.hygiene_audit(vec![sim.target(0, "node1")], &o).await;
    assert!(rows[0].attempts.is_empty());
}

/// Issue 16 item 6 against a real BMC: cycles at 50 % loss both ways (a relay in front of ipmi_sim) each
/// power down exactly once and leave the host on; a lost power-up is resent (idempotent), never the
/// power-down.
#[tokio::test]
async fn cycles_at_50_percent_loss_power_down_once_and_end_on() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let relay = lossy_relay(sim.addr(0), 50, 0x5eed_1e55).await;
    let mut t = sim.target(0, "lossy1");
    t.address = relay.addr.ip().to_string();
    t.ipmi_port = relay.addr.port();
    t.cipher_suites = Some(vec![3]);
    let mut opts = quick_options();
    opts.ipmi_timing = lifeline_ipmi::client::Timing {
        attempt_timeout: Duration::from_millis(100),
        max_attempt_timeout: Duration::from_millis(400),
        attempts: 20,
    };
    opts.power.timeout = Duration::from_secs(60);
    opts.power.power_up_retry_after = Duration::from_secs(4);
    opts.op_timeout = Duration::from_secs(60);
    let (pool, _) = pool_with(opts);
    let bmc = pool.bmc(t);
    for i in 0..2 {
        let before = count(&sim.chassis_log(0), "power 0");
        // An error means nothing was sent (every retransmission of a read lost): asked for again.
        let r = loop {
            match bmc.power(PowerAction::Cycle, None).await {
                Ok(r) => break r,
                Err(e) => assert_eq!(count(&sim.chassis_log(0), "power 0"), before, "{}", error_chain(&e)),
            }
        };
        assert!(r.confirmed, "cycle {i}: {r:#?}");
        let log = sim.chassis_log(0);
        assert_eq!(count(&log, "power 0"), before + 1, "cycle {i}: exactly one power down: {log:?} {r:#?}");
        assert_eq!(
            pool.bmc(sim.target(0, "direct")).power_state().await.unwrap(),
            PowerState::On,
            "cycle {i}"
        );
    }
}
