//! `lifeline serve` killed with SIGKILL and restarted on the same data dir: a scheduled backup that was
//! in the middle of its retries runs once more — and only once — after the restart (versions and audit
//! rows counted), and a power cycle answered before the kill is not executed again when its client
//! retries with the same `Idempotency-Key` (the simulator's action log counted).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Server, add_user, login, two_node_sim};
use lifeline_test_utils::{SimProcess, output_json, output_text, wait_until};
use serde_json::{Value, json};

fn audit(sim: &SimProcess) -> Vec<Value> {
    let o = sim.lifeline(&["audit", "log", "--target", "leaf", "--limit", "500", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().clone()
}

fn scheduler_rows(sim: &SimProcess, outcome: &str) -> usize {
    audit(sim).iter().filter(|r| r["actor"] == "scheduler" && r["outcome"] == outcome).count()
}

fn versions(sim: &SimProcess) -> usize {
    let o = sim.lifeline(&["backup", "history", "leaf", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().len()
}

fn cycles(sim: &SimProcess) -> usize {
    sim.actions("node").iter().filter(|a| a["action"] == "power-off" || a["action"] == "power-cycle").count()
}

#[test]
fn sigkill_during_a_scheduled_backup_and_after_a_power_cycle_loses_and_repeats_nothing() {
    let sim = two_node_sim(29500);
    add_user(&sim, "ann", "operator", "correct horse battery");
    // Version 1, taken by hand: it also pins the switch's SSH host key.
    let o = sim.lifeline(&["backup", "run", "leaf"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(versions(&sim), 1);

    // A slot at the start of the next minute (or the one after, when this one is nearly over).
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let at = now / 60 * 60 + if now % 60 > 45 { 120 } else { 60 };
    let cron = format!("{} {} * * *", (at / 60) % 60, (at / 3600) % 24);
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\n\n[[backup-schedule]]\ntargets = [\"leaf\"]\ncron = \"{cron}\"\nretries = 3\n"
    );

    // The switch's host key changes: the scheduled attempt fails and the scheduler waits to retry.
    sim.fault("leaf", "ssh-key-change");
    let mut srv = Server::start_with(&sim, &config);
    let s = login(&srv.addr, "ann", "correct horse battery");
    let (st, r) = s.call("POST", "/api/v1/devices/node/power", Some(json!({"action": "cycle"})));
    assert_eq!(st, 200, "{r}");
    let before = cycles(&sim);
    assert!(before >= 1);
    // The first call with a key executes; then the server dies before the client heard (say).
    let h =
        [("Cookie", s.cookie.as_str()), ("X-CSRF-Token", s.csrf.as_str()), ("Idempotency-Key", "cycle-42")];
    let (st, _, first) = common::request(
        &srv.addr,
        "POST",
        "/api/v1/devices/node/power",
        &h,
        Some(&json!({"action": "cycle"})),
    )
    .unwrap();
    assert_eq!(st, 200, "{first}");
    assert_eq!(cycles(&sim), before + 1);

    wait_until("the scheduled backup's first attempt to fail", Duration::from_secs(150), || {
        (scheduler_rows(&sim, "failed") >= 1).then_some(())
    });
    srv.child.kill().unwrap(); // SIGKILL, in the retry's backoff
    srv.child.wait().unwrap();
    assert_eq!(scheduler_rows(&sim, "ok"), 0);

    // The operator confirms the switch's new key (and its config changed meanwhile); the server comes back.
    let fp =
        lifeline_test_utils::presented_fingerprint(&sim.lifeline(&["backup", "trust", "leaf", "--json"]));
    let o = sim.lifeline(&["backup", "trust", "leaf", "--fingerprint", &fp]);
    assert!(o.status.success(), "{}", output_text(&o));
    sim.fault("leaf", "config-change");
    let srv = Server::start_with(&sim, &config);
    let t = std::time::Instant::now();
    while scheduler_rows(&sim, "ok") == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the interrupted slot did not run again: {:#?}",
            audit(&sim)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(versions(&sim), 2, "the resumed backup stored the changed config once");

    // The client retries its power cycle with the same key: answered, not executed again.
    let s = login(&srv.addr, "ann", "correct horse battery");
    let h =
        [("Cookie", s.cookie.as_str()), ("X-CSRF-Token", s.csrf.as_str()), ("Idempotency-Key", "cycle-42")];
    let (st, _, again) = common::request(
        &srv.addr,
        "POST",
        "/api/v1/devices/node/power",
        &h,
        Some(&json!({"action": "cycle"})),
    )
    .unwrap();
    assert_eq!(st, 200, "{again}");
    assert_eq!(cycles(&sim), before + 1, "{:?}", sim.actions("node"));

    // Another kill and restart: nothing more runs for that slot.
    drop(srv);
    let _srv = Server::start_with(&sim, &config);
    std::thread::sleep(lifeline_server_tick() * 2);
    assert_eq!(scheduler_rows(&sim, "ok"), 1, "{:?}", audit(&sim));
    assert_eq!(versions(&sim), 2);
    let pc = audit_power(&sim);
    assert_eq!(pc, 2, "two power.cycle rows (the plain one and the keyed one), none for the replay");
}

/// The backup scheduler looks at the clock every 5 s.
fn lifeline_server_tick() -> Duration {
    Duration::from_secs(6)
}

fn audit_power(sim: &SimProcess) -> usize {
    let o = sim.lifeline(&["audit", "log", "--target", "node", "--limit", "500", "--json"]);
    output_json(&o)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "power.cycle" && r["outcome"] == "ok")
        .count()
}
