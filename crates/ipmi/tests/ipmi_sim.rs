//! The client against a real third-party BMC: OpenIPMI `ipmi_sim` (see shared/peers).

mod common;

use common::{IpmiSim, admin, read_until};
use lifeline_ipmi::wire::app::CloseOutcome;
use lifeline_ipmi::wire::chassis::ChassisOp;
use lifeline_ipmi::{CipherSuite, Error, Session};
use std::time::Duration;

#[tokio::test]
async fn device_id_over_suite_17_falls_back_to_3() {
    let Some(sim) = IpmiSim::start() else { return };
    let cfg = admin();
    assert_eq!(cfg.cipher_suites, vec![CipherSuite::Suite17, CipherSuite::Suite3]);
    let s = Session::open(sim.addr, &cfg).await.expect("open session");
    // ipmi_sim has no suite 17: the 17 -> 3 fallback must have happened.
    assert_eq!(s.cipher_suite(), CipherSuite::Suite3);
    assert!(s.auth_caps().supports_v2());
    let id = s.device_id().await.expect("device id");
    assert_eq!(id.manufacturer_id, 4753, "{id:?}");
    assert_eq!(id.product_id, 0x0f02);
    assert_eq!(id.firmware_version(), "9.08");
    assert_eq!(id.ipmi_version_string(), "2.0");
    s.close().await.expect("close");
}

#[tokio::test]
async fn wrong_password_is_an_auth_error() {
    let Some(sim) = IpmiSim::start() else { return };
    let mut cfg = admin();
    cfg.password = "not-the-password".into();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    match Session::open(sim.addr, &cfg).await {
        Err(Error::Auth { bmc, .. }) => assert_eq!(bmc, sim.addr.to_string()),
        other => panic!("expected Auth error, got {other:?}"),
    }
    let mut cfg = admin();
    cfg.username = "nobody".into();
    assert!(matches!(Session::open(sim.addr, &cfg).await, Err(Error::Auth { .. })));
}

#[tokio::test]
async fn power_off_on_and_cycle_are_executed_once_and_observed() {
    let Some(sim) = IpmiSim::start() else { return };
    let s = Session::open(sim.addr, &admin()).await.expect("open");
    assert!(s.chassis_status().await.unwrap().power_on());
    s.chassis_control(ChassisOp::PowerDown).await.expect("power off");
    assert!(!s.chassis_status().await.unwrap().power_on());
    s.chassis_control(ChassisOp::PowerUp).await.expect("power on");
    assert_eq!(s.power_state().await.unwrap(), lifeline_types::PowerState::On);
    let before = sim.chassis_log().lines().count();
    s.chassis_control(ChassisOp::PowerCycle).await.expect("power cycle");
    // ipmi_sim: off now, on again after 1 s.
    let mut saw_off = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let on = s.chassis_status().await.unwrap().power_on();
        saw_off |= !on;
        if saw_off && on {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "power cycle not observed; log:\n{}",
            sim.chassis_log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = sim.chassis_log();
    let sets: Vec<&str> = log.lines().filter(|l| l.contains(" set power ")).collect();
    assert_eq!(sets.len(), 4, "off, on, cycle(off, on):\n{log}");
    assert!(sets[2].ends_with("set power 0") && sets[3].ends_with("set power 1"), "{log}");
    assert!(log.lines().count() >= before + 2);
    s.close().await.unwrap();
}

/// Sensor names and values as `ipmitool sdr list` prints them (the same BMC, another client).
#[tokio::test]
async fn sdr_list_matches_ipmitool() {
    let Some(sim) = IpmiSim::start() else { return };
    if !lifeline_test_utils::have("ipmitool") {
        assert!(!lifeline_test_utils::peers_required(), "ipmitool required");
        eprintln!("SKIP: ipmitool not installed");
        return;
    }
    let s = Session::open(sim.addr, &admin()).await.expect("open");
    let ours = s.sensors().await.expect("sensors");
    s.close().await.unwrap();
    let theirs = tokio::task::spawn_blocking(move || sim.ipmitool(&["sdr", "list"])).await.unwrap();
    let rows: Vec<Vec<String>> =
        theirs.lines().map(|l| l.split('|').map(|c| c.trim().to_string()).collect()).collect();
    assert!(rows.len() >= 6, "ipmitool printed: {theirs}");
    let names: Vec<&str> = ours.iter().map(|s| s.name.as_str()).collect();
    let their_names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, their_names);
    for (o, t) in ours.iter().zip(&rows) {
        // "28 degrees C" -> 28
        let v: f64 = t[1].split_whitespace().next().unwrap().parse().unwrap();
        assert!((o.value.expect("reading") - v).abs() < 0.01, "{o:?} vs {t:?}");
        assert_eq!(t[2], "ok");
        assert_eq!(o.status, lifeline_ipmi::client::SensorStatus::Ok);
    }
    let gpu = ours.iter().find(|s| s.name == "GPU0 Temp").unwrap();
    assert_eq!((gpu.number, gpu.type_name.as_str(), gpu.unit.as_str()), (3, "Temperature", "°C"));
}

#[tokio::test]
async fn sel_read_and_clear() {
    let Some(sim) = IpmiSim::start() else { return };
    let s = Session::open(sim.addr, &admin()).await.expect("open");
    let sel = s.sel_entries().await.expect("sel");
    assert_eq!(sel.len(), 2, "{sel:?}");
    assert_eq!((sel[0].sensor_type, sel[0].sensor_number, sel[0].event_data[0]), (0x01, 3, 0x59));
    assert_eq!(sel[1].sensor_type_name(), "Power Supply");
    assert!(sel.iter().all(|r| r.is_system_event() && r.asserted()));
    s.clear_sel().await.expect("clear");
    assert_eq!(s.sel_entries().await.unwrap().len(), 0);
    assert_eq!(s.sel_info().await.unwrap().entries, 0);
    s.close().await.unwrap();
}

#[tokio::test]
async fn user_list() {
    let Some(sim) = IpmiSim::start() else { return };
    let s = Session::open(sim.addr, &admin()).await.expect("open");
    let users = s.users(1).await.expect("users");
    let named: Vec<(u8, &str, u8)> = users
        .iter()
        .filter(|u| !u.name.is_empty())
        .map(|u| (u.id, u.name.as_str(), u.access.privilege()))
        .collect();
    assert_eq!(named, vec![(2, "admin", 4), (3, "operator", 3), (4, "viewer", 2)]);
    assert_eq!(users.len(), 63);
    s.close().await.unwrap();
}

/// Sessions are closed: find the BMC's session limit by holding sessions open, then open
/// and close (and open and drop) many more than that, one after the other.
#[tokio::test]
async fn no_session_leak_beyond_the_session_limit() {
    let Some(sim) = IpmiSim::start() else { return };
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg.timing.attempts = 2;
    cfg.timing.attempt_timeout = Duration::from_millis(200);
    let mut held = Vec::new();
    let limit = loop {
        match Session::open(sim.addr, &cfg).await {
            Ok(s) => held.push(s),
            Err(e) => {
                eprintln!("session {} refused: {e}", held.len() + 1);
                break held.len();
            }
        }
        assert!(held.len() < 200, "no session limit found");
    };
    assert!(limit >= 2, "limit {limit}");
    for s in held.drain(..) {
        s.close().await.expect("close");
    }
    let cfg = {
        let mut c = cfg.clone();
        c.timing = Default::default();
        c
    };
    for i in 0..limit * 2 + 3 {
        let s = Session::open(sim.addr, &cfg).await.unwrap_or_else(|e| panic!("sequential session {i}: {e}"));
        s.device_id().await.unwrap();
        s.close().await.unwrap();
    }
    // Drop without close(): the spawned best-effort Close Session must free the slot.
    for i in 0..limit * 2 + 3 {
        let s = Session::open(sim.addr, &cfg).await.unwrap_or_else(|e| panic!("dropped session {i}: {e}"));
        s.device_id().await.unwrap();
        drop(s);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("session limit {limit}; opened {} sessions in sequence", 2 * (limit * 2 + 3));
}

/// SOL against ipmi_sim: text written on the host side of the serial line is read by us,
/// keys we send arrive there; a second activation is "already active"; steal works.
#[tokio::test]
async fn sol_both_directions_already_active_and_steal() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(sim) = IpmiSim::start() else { return };
    let mut host = tokio::net::TcpStream::connect(sim.serial).await.expect("serial tcp");
    let s1 = Session::open(sim.addr, &admin()).await.expect("open");
    let mut sol = s1.activate_sol(Default::default()).await.expect("activate SOL");
    // Give ipmi_sim a moment to attach the pty before the host writes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let long: String = (0..40).map(|i| format!("line {i:02} of the kernel log\r\n")).collect();
    host.write_all(format!("login: hello-from-host\r\n{long}END-OF-BOOT\r\n").as_bytes()).await.unwrap();
    let text = read_until(&mut sol, "END-OF-BOOT").await;
    assert!(text.contains("hello-from-host"));
    assert!(text.contains("line 17 of the kernel log\r\nline 18"), "in order, no duplicates: {text:?}");
    assert_eq!(text.matches("line 17 ").count(), 1);

    let keys: String = (0..30).map(|i| format!("key{i:02} ")).collect();
    sol.write(b"typed-by-lifeline\r").await.unwrap();
    sol.write(keys.as_bytes()).await.unwrap();
    sol.flush().await.expect("BMC acked our characters");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !String::from_utf8_lossy(&got).contains("key29") {
            let n = host.read(&mut buf).await.unwrap();
            assert!(n > 0, "serial side closed");
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("keys did not arrive: {:?}", String::from_utf8_lossy(&got)));
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("typed-by-lifeline\r"), "{got:?}");
    assert!(got.contains(&keys.trim_end().to_string()));
    sol.send_break().await.unwrap();
    sol.flush().await.expect("break acked");

    // A second session cannot take it...
    let s2 = Session::open(sim.addr, &admin()).await.expect("open 2");
    match s2.activate_sol(Default::default()).await {
        Err(Error::PayloadAlreadyActive { instance: 1, .. }) => {}
        other => panic!("expected PayloadAlreadyActive, got {other:?}"),
    }
    // ...unless it steals it.
    s2.deactivate_payload(1, 1).await.expect("steal");
    let mut sol2 = s2.activate_sol(Default::default()).await.expect("activate after steal");
    host.write_all(b"after-steal\r\n").await.unwrap();
    read_until(&mut sol2, "after-steal").await;
    sol2.deactivate().await.expect("deactivate");
    drop(sol);
    s1.close().await.expect("close 1");
    s2.close().await.expect("close 2");
    // The BMC is still healthy (it crashes if a session closes with SOL active).
    let s3 = Session::open(sim.addr, &admin()).await.expect("open 3");
    s3.device_id().await.unwrap();
    s3.close().await.unwrap();
}

/// Sessions a dead process left are closed from another session by their ids (Close Session naming each
/// one): ipmi_sim closes another session's id for an ADMINISTRATOR session, refuses it (0xD4) for a USER
/// one, and answers 0x87 for an id it no longer has. A full table refuses a new session (silence on Open
/// Session from ipmi_sim); after the stale ones are closed as many sessions open as the table has slots
/// left. The witness is the BMC refusing or accepting logins, not our bookkeeping.
#[tokio::test]
async fn stale_sessions_are_closed_by_id_and_the_limit_is_recognised() {
    let Some(sim) = IpmiSim::start() else { return };
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg.timing.attempts = 2;
    cfg.timing.attempt_timeout = Duration::from_millis(300);
    let mut held = Vec::new();
    let refusal = loop {
        match Session::open(sim.addr, &cfg).await {
            Ok(s) => held.push(s),
            Err(e) => break e,
        }
        assert!(held.len() < 200, "no session limit found");
    };
    let limit = held.len();
    eprintln!("ipmi_sim session limit {limit}: {refusal}");
    // OpenIPMI 2.0.33 answers nothing at all to Open Session when its table is full (its error path has no
    // session to answer from); a BMC that answers says status 0x01, which `is_session_limit` reads.
    assert!(
        refusal.is_session_limit() || matches!(refusal, Error::Timeout { what: "Open Session", .. }),
        "refusal at the limit: {refusal:?}"
    );
    // The last one held plays the survivor; the others are "left by a dead process": their ids are all the
    // survivor knows, their handles are forgotten without Close Session (as after kill -9).
    let survivor = held.pop().expect("one session");
    let ids: Vec<u32> = held.iter().map(Session::bmc_session_id).collect();
    for s in held {
        std::mem::forget(s);
    }
    // A USER session may not close another session's id.
    survivor.close().await.unwrap();
    let mut user_cfg = cfg.clone();
    user_cfg.privilege = lifeline_ipmi::Privilege::User;
    let user = Session::open(sim.addr, &user_cfg).await.expect("the survivor's slot is free again");
    let refused = user.close_other(ids[0]).await.unwrap();
    assert_eq!(refused, CloseOutcome::Refused(0xD4), "a USER session closed another session");
    user.close().await.unwrap();
    let admin = Session::open(sim.addr, &cfg).await.expect("admin session");
    assert!(Session::open(sim.addr, &cfg).await.is_err(), "the table is full again");
    for id in &ids {
        assert_eq!(admin.close_other(*id).await.unwrap(), CloseOutcome::Closed, "{id:#010x}");
    }
    assert_eq!(admin.close_other(ids[0]).await.unwrap(), CloseOutcome::Gone, "closed twice");
    // Every slot but the admin's is free: `limit - 1` sessions open at once.
    let mut again = Vec::new();
    for i in 0..limit - 1 {
        again.push(Session::open(sim.addr, &cfg).await.unwrap_or_else(|e| panic!("session {i}: {e}")));
    }
    for s in again {
        s.close().await.unwrap();
    }
    admin.close().await.unwrap();
}

/// Records what the client's session record hook was told.
#[derive(Default)]
struct Ledger(std::sync::Mutex<Vec<(&'static str, u32)>>);

impl lifeline_ipmi::client::SessionRecord for Ledger {
    fn opened(&self, id: u32) -> lifeline_ipmi::client::RecordFuture<'_> {
        self.0.lock().unwrap().push(("opened", id));
        Box::pin(async {})
    }
    fn closed(&self, id: u32) -> lifeline_ipmi::client::RecordFuture<'_> {
        self.0.lock().unwrap().push(("closed", id));
        Box::pin(async {})
    }
}

/// Each session is written down by the id the BMC gave it before it is used, and struck off once the BMC
/// answered its Close Session: by `close()`, and by the close a dropped session sends on its own. A session
/// forgotten without either (as in a killed process) stays written down.
#[tokio::test]
async fn sessions_are_written_down_while_open() {
    let Some(sim) = IpmiSim::start() else { return };
    let ledger = std::sync::Arc::new(Ledger::default());
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg.record = Some(lifeline_ipmi::client::SessionRecorder(ledger.clone()));
    let seen = || ledger.0.lock().unwrap().clone();
    let s = Session::open(sim.addr, &cfg).await.unwrap();
    let a = s.bmc_session_id();
    assert_eq!(seen(), vec![("opened", a)]);
    s.device_id().await.unwrap();
    s.close().await.unwrap();
    assert_eq!(seen(), vec![("opened", a), ("closed", a)]);
    let s = Session::open(sim.addr, &cfg).await.unwrap();
    let b = s.bmc_session_id();
    drop(s);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen().contains(&("closed", b)) {
        assert!(tokio::time::Instant::now() < deadline, "a dropped session was not struck off: {:?}", seen());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let s = Session::open(sim.addr, &cfg).await.unwrap();
    let c = s.bmc_session_id();
    std::mem::forget(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(seen().last(), Some(&("opened", c)), "a forgotten session must stay written down");
    // Another session closes it by its id; the BMC had it (Closed), so it was open until then.
    let other = Session::open(sim.addr, &admin_suite3()).await.unwrap();
    assert_eq!(other.close_other(c).await.unwrap(), CloseOutcome::Closed);
    other.close().await.unwrap();
}

fn admin_suite3() -> lifeline_ipmi::ClientConfig {
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg
}
