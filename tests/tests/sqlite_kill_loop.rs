//! A single `lifeline serve` on SQLite killed with SIGKILL at random moments under load — switch backups
//! and power actions through the API (audit writes), sweeps every 2 s, every console logged, a
//! per-minute scheduled backup — and restarted each time on the same data directory. After each restart:
//! no lost or half-written config version (numbers contiguous, every one readable with its digest
//! checked, every version a client was told of present), no lost audit row (every row seen before the
//! kill still there, every acknowledged power action audited `ok`), console logs readable. The counts are
//! printed. `LIFELINE_DURABILITY_KILLS` sets the number of kills (default 10; the figure quoted in the
//! README comes from 100).

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{add_user, login, request, two_node_sim};
use lifeline_test_utils::{ServeProcess, SimProcess, output_json, output_text};
use serde_json::{Value, json};

/// What the clients were told succeeded.
#[derive(Default)]
struct Acked {
    versions: BTreeSet<u64>,
    power: Vec<String>,
    attempts: u64,
}

fn audit_rows(sim: &SimProcess) -> Vec<Value> {
    let o = sim.lifeline(&["audit", "log", "--limit", "1000000", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().clone()
}

fn first_version(v: &Value) -> Option<u64> {
    match v {
        Value::Object(m) => {
            m.get("version").and_then(Value::as_u64).or_else(|| m.values().find_map(first_version))
        }
        Value::Array(a) => a.iter().find_map(first_version),
        _ => None,
    }
}

/// A tiny deterministic generator (xorshift) for the kill moments: the seed is printed for a rerun.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sigkill_a_sqlite_server_at_random_moments_loses_and_tears_nothing() {
    let kills: usize =
        std::env::var("LIFELINE_DURABILITY_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let seed = std::env::var("LIFELINE_DURABILITY_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| u64::from(std::process::id()) * 2_654_435_761 + 1);
    eprintln!("kills: {kills}, seed: {seed}");
    let mut rng = Rng(seed.max(1));
    let sim = Arc::new(two_node_sim(33500));
    add_user(&sim, "ann", "operator", "correct horse battery");
    let o = sim.lifeline(&["backup", "run", "leaf"]); // pins the switch's host key
    assert!(o.status.success(), "{}", output_text(&o));
    let config = "[server]\nsweep-interval = \"2s\"\n\n[[backup-schedule]]\ntargets = [\"leaf\"]\n\
                  cron = \"* * * * *\"\nretries = 1\n";
    let mut srv = ServeProcess::start_with(&sim, config);
    let s = login(&srv.addr, "ann", "correct horse battery");
    let (cookie, csrf) = (s.cookie.clone(), s.csrf.clone());
    let addr = Arc::new(Mutex::new(srv.addr.clone()));
    let acked = Arc::new(Mutex::new(Acked::default()));
    let stop = Arc::new(AtomicBool::new(false));

    // The load: a changed config backed up, a power action, over and over, whatever happens to the server.
    let load = {
        let (sim, addr, acked, stop) = (sim.clone(), addr.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let a = addr.lock().unwrap().clone();
                let key = format!("load-{n}");
                let h = [("Cookie", cookie.as_str()), ("X-CSRF-Token", csrf.as_str())];
                let hk = [h[0], h[1], ("Idempotency-Key", key.as_str())];
                acked.lock().unwrap().attempts += 1;
                if n.is_multiple_of(2) {
                    let _ = sim.lifeline(&[
                        "sim",
                        "fault",
                        "--endpoints",
                        sim.endpoints.to_str().unwrap(),
                        "leaf",
                        "config-change",
                    ]);
                    if let Ok((200, _, body)) =
                        request(&a, "POST", "/api/v1/backups/run", &h, Some(&json!({"targets": ["leaf"]})))
                        && let Some(v) =
                            serde_json::from_str::<Value>(&body).ok().as_ref().and_then(first_version)
                    {
                        acked.lock().unwrap().versions.insert(v);
                    }
                } else if let Ok((200, _, _)) =
                    request(&a, "POST", "/api/v1/devices/node/power", &hk, Some(&json!({"action": "on"})))
                {
                    acked.lock().unwrap().power.push(key);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let started = Instant::now();
    let mut checked_versions = 0u64;
    let mut seen_audit: BTreeSet<i64> = BTreeSet::new();
    for i in 0..kills {
        // Let the load run 0.3 to 2.5 s, note what is there, and kill.
        std::thread::sleep(Duration::from_millis(300 + rng.next() % 2200));
        let before: BTreeSet<i64> = audit_rows(&sim).iter().filter_map(|r| r["id"].as_i64()).collect();
        srv.kill9();
        seen_audit.extend(before);
        srv = ServeProcess::start_with(&sim, config);
        *addr.lock().unwrap() = srv.addr.clone();

        // Versions: contiguous from 1, each readable (its digest checked by `backup show`). What the
        // clients were told is read first: versions made after the history read are checked next time.
        let told: BTreeSet<u64> = acked.lock().unwrap().versions.clone();
        let o = sim.lifeline(&["backup", "history", "leaf", "--json"]);
        assert!(o.status.success(), "kill {i}: {}", output_text(&o));
        let hist = output_json(&o);
        let numbers: Vec<u64> =
            hist.as_array().unwrap().iter().filter_map(|v| v["version"].as_u64()).collect();
        let want: Vec<u64> = (1..=numbers.len() as u64).collect();
        assert_eq!(numbers, want, "kill {i}: versions not contiguous: {hist}");
        for v in checked_versions + 1..=numbers.len() as u64 {
            let o = sim.lifeline(&["backup", "show", "leaf", "--version", &v.to_string()]);
            assert!(o.status.success(), "kill {i}: version {v} unreadable: {}", output_text(&o));
        }
        checked_versions = numbers.len() as u64;
        let missing: Vec<_> = told.iter().filter(|v| !numbers.contains(v)).collect();
        assert!(
            missing.is_empty(),
            "kill {i}: acknowledged versions lost: {missing:?} (history {numbers:?})"
        );

        // Audit: nothing seen before is gone.
        let now: BTreeSet<i64> = audit_rows(&sim).iter().filter_map(|r| r["id"].as_i64()).collect();
        let lost: Vec<_> = seen_audit.difference(&now).collect();
        assert!(lost.is_empty(), "kill {i}: audit rows lost: {lost:?}");

        // Console logs still read.
        let o = sim.lifeline(&["console", "log", "node"]);
        assert!(o.status.success(), "kill {i}: console log unreadable: {}", output_text(&o));
    }
    stop.store(true, Ordering::Relaxed);
    load.join().unwrap();

    // Every acknowledged power action has its outcome row, under its request id (`web:USER/KEY/TARGET`:
    // the server scopes a key to its caller).
    let rows = audit_rows(&sim);
    let ended: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["action"] == "power.on" && r["outcome"] != "started" && r["outcome"] != "interrupted")
        .filter_map(|r| r["request_id"].as_str()?.strip_suffix("/node")?.split_once('/').map(|(_, k)| k))
        .collect();
    let a = acked.lock().unwrap();
    let unaudited: Vec<_> = a.power.iter().filter(|k| !ended.contains(k.as_str())).collect();
    assert!(unaudited.is_empty(), "acknowledged power actions without their audit row: {unaudited:?}");
    let interrupted = rows.iter().filter(|r| r["outcome"] == "interrupted").count();
    eprintln!(
        "SQLite kill loop: {kills} SIGKILLs in {:.0} s; {} requests sent, {} backups and {} power actions \
         acknowledged; {checked_versions} versions, all contiguous and readable, 0 lost; {} audit rows \
         ({} seen before kills), 0 lost; {interrupted} requests audited as interrupted",
        started.elapsed().as_secs_f64(),
        a.attempts,
        a.versions.len(),
        a.power.len(),
        rows.len(),
        seen_audit.len(),
    );
}
