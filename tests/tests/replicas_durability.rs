//! Three `lifeline serve` replicas on one real PostgreSQL database over `lifeline sim` (one shared data
//! directory for the config blobs and console logs, as on a shared volume): the replica running a
//! scheduled backup slot (stuck in its retry backoff) and logging consoles is SIGKILLed, another takes the
//! slot and the consoles over, a second replica is frozen with SIGSTOP past the expiry (the cross-host
//! path: its process still exists) and its consoles move too. Afterwards every slot ran exactly once
//! (slot rows, versions, the scheduler's audit rows), no audit row was lost, and the figures are printed.
//! A second test kills the replica driving a runbook run mid-cycle: another takes the run over and the BMC
//! sees one cycle.
//!
//! Per-minute cron, so the test takes about five minutes; `LIFELINE_REPLICAS_SLOTS` (default 3, at least
//! 3) sets how many slots it watches.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{ENV, login};
use lifeline_test_utils::{
    ServeProcess, SimProcess, add_user_args, create_database_blocking, output_json, output_text,
    pg_text_rows, postgres_url, unique_loopback,
};
use serde_json::Value;

const NODES: usize = 11;

/// A switch `leaf` (SONiC over SSH, IPMI BMC) and `NODES` GPU nodes (IPMI): twelve consoles, so that
/// every replica holds some.
fn fleet(offset: u16) -> SimProcess {
    let mut inv = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n",
    );
    let (sw, bmc) = (unique_loopback(), unique_loopback());
    inv.push_str(&format!(
        "[[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\nbmc = {{ address = \"{bmc}\", port = {}, protocol = \"ipmi\" }}\n\n",
        22 + offset,
        623 + offset
    ));
    for i in 1..=NODES {
        inv.push_str(&format!(
            "[[device]]\nname = \"gpu-node-{i:02}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n\n",
            unique_loopback(),
            623 + offset
        ));
    }
    SimProcess::start(&inv, offset, ENV)
}

struct Cluster {
    sim: SimProcess,
    url: String,
}

impl Cluster {
    fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut a = args.to_vec();
        a.extend(["--database-url", self.url.as_str()]);
        self.sim.lifeline(&a)
    }

    fn ok(&self, args: &[&str]) -> std::process::Output {
        let o = self.cli(args);
        assert!(o.status.success(), "lifeline {args:?}: {}", output_text(&o));
        o
    }

    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        pg_text_rows(&self.url, sql)
            .into_iter()
            .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
            .collect()
    }

    /// key → (holder pid, fence, done)
    fn work(&self, prefix: &str) -> BTreeMap<String, (u32, i64, bool)> {
        self.rows(&format!(
            "SELECT key, holder, fence::text, (done_at IS NOT NULL)::text FROM replica_work \
             WHERE key LIKE '{prefix}%' ORDER BY key"
        ))
        .into_iter()
        .map(|r| (r[0].clone(), (pid_of(&r[1]), r[2].parse().unwrap(), r[3] == "true")))
        .collect()
    }

    fn audit_ids(&self) -> BTreeSet<i64> {
        self.rows("SELECT id::text FROM audit_log").into_iter().map(|r| r[0].parse().unwrap()).collect()
    }

    fn scheduler_rows(&self, outcome: &str) -> usize {
        self.rows(&format!(
            "SELECT count(*)::text FROM audit_log WHERE actor = 'scheduler' AND action = 'backup.run' \
             AND target = 'leaf' AND outcome = '{outcome}'"
        ))[0][0]
            .parse()
            .unwrap()
    }

    fn versions(&self) -> usize {
        output_json(&self.ok(&["backup", "history", "leaf", "--json"])).as_array().unwrap().len()
    }
}

/// `server (pid PID on HOST) #TAG` → PID.
fn pid_of(holder: &str) -> u32 {
    holder.split("(pid ").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap_or(0)
}

fn poll<T>(what: &str, within: Duration, mut f: impl FnMut() -> Option<T>) -> (T, Duration) {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return (v, t.elapsed());
        }
        assert!(t.elapsed() < within, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn three_replicas_share_the_work_and_take_over_a_killed_and_a_frozen_replica() {
    let Some(admin) = postgres_url() else { return };
    let slots: usize =
        std::env::var("LIFELINE_REPLICAS_SLOTS").ok().and_then(|v| v.parse().ok()).unwrap_or(3).max(3);
    let db = create_database_blocking(&admin);
    let c = Cluster { sim: fleet(31500), url: db.url.clone() };
    // Version 1 by hand (it also pins the switch's SSH host key); a user for the API checks.
    c.ok(&["backup", "run", "leaf"]);
    add_user_args(&c.sim, "ann", "operator", "correct horse battery", &["--database-url", &c.url]);

    let config = "[server]\nsweep-interval = \"10s\"\n\n[[backup-schedule]]\ntargets = [\"leaf\"]\n\
                  cron = \"* * * * *\"\nretries = 3\n";
    let mut replicas: Vec<ServeProcess> =
        (0..3).map(|_| ServeProcess::start_args(&c.sim, config, &["--database-url", &c.url])).collect();
    let pids: Vec<u32> = replicas.iter().map(ServeProcess::pid).collect();

    // Every replica serves the API, with sessions shared through the database: log in on one, read the
    // fleet on each.
    let s = login(&replicas[0].addr, "ann", "correct horse battery");
    for r in &replicas {
        let h = [("Cookie", s.cookie.as_str())];
        let (st, _, body) = common::request(&r.addr, "GET", "/api/v1/devices", &h, None).unwrap();
        assert_eq!(st, 200, "{}: {body}", r.addr);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap().as_array().unwrap().len(), NODES + 1);
    }

    // Consoles spread over the three replicas, one logger each.
    let (spread, _) = poll("every console claimed", Duration::from_secs(60), || {
        let w = c.work("console:");
        (w.len() == NODES + 1).then_some(w)
    });
    let per: BTreeMap<u32, usize> = spread.values().fold(BTreeMap::new(), |mut m, (p, _, _)| {
        *m.entry(*p).or_default() += 1;
        m
    });
    eprintln!("consoles per replica at start: {per:?}");
    assert!(per.keys().all(|p| pids.contains(p)), "{per:?} vs {pids:?}");

    // Slot 1 runs normally on one replica.
    c.sim.fault("leaf", "config-change");
    let (first, _) = poll("the first scheduled slot done", Duration::from_secs(90), || {
        let w = c.work("slot:backup:");
        (w.len() == 1 && w.values().all(|v| v.2)).then_some(w)
    });
    eprintln!("slot 1: {first:?}");

    // Slot 2: the switch's host key changes, the attempt fails and its replica waits to retry; we kill
    // that replica in the backoff.
    c.sim.fault("leaf", "ssh-key-change");
    let (stuck, _) = poll("slot 2 failing in its backoff", Duration::from_secs(90), || {
        let w = c.work("slot:backup:");
        let open: Vec<_> = w.iter().filter(|(_, v)| !v.2).map(|(k, v)| (k.clone(), *v)).collect();
        (w.len() == 2 && open.len() == 1 && c.scheduler_rows("failed") >= 1).then(|| open[0].clone())
    });
    let (slot2, (victim_pid, fence, _)) = stuck;
    let victim = pids.iter().position(|p| *p == victim_pid).expect("the slot's holder is one of ours");
    let victims_consoles: Vec<String> =
        c.work("console:").into_iter().filter(|(_, v)| v.0 == victim_pid).map(|(k, _)| k).collect();
    // The operator re-pins the key (and the config changes) while the slot's replica waits to retry;
    // the replica dies before its next attempt.
    let fp = lifeline_test_utils::presented_fingerprint(&c.cli(&["backup", "trust", "leaf", "--json"]));
    c.ok(&["backup", "trust", "leaf", "--fingerprint", &fp]);
    c.sim.fault("leaf", "config-change");
    let audit_before = c.audit_ids();
    replicas[victim].kill9();
    let killed_at = Instant::now();
    eprintln!("SIGKILL replica {victim} (pid {victim_pid}) holding {slot2} and {victims_consoles:?}");

    // Takeovers timed from the kill: the slot claimed by another replica, then done; the consoles.
    let (mut slot_takeover, mut slot_done, mut console_takeover) = (None, None, None);
    poll("slot 2 and the killed replica's consoles taken over", Duration::from_secs(60), || {
        let w = c.work(&slot2);
        if let Some((p, f, done)) = w.get(&slot2)
            && *p != victim_pid
            && *f > fence
        {
            slot_takeover.get_or_insert_with(|| killed_at.elapsed());
            if *done {
                slot_done.get_or_insert_with(|| killed_at.elapsed());
            }
        }
        let w = c.work("console:");
        if console_takeover.is_none() && w.len() == NODES + 1 && w.values().all(|v| v.0 != victim_pid) {
            console_takeover = Some(killed_at.elapsed());
        }
        (slot_done.is_some() && console_takeover.is_some()).then_some(())
    });
    let (slot_takeover, slot_done, console_takeover) =
        (slot_takeover.unwrap(), slot_done.unwrap(), console_takeover.unwrap());
    eprintln!(
        "after SIGKILL: slot taken over in {slot_takeover:?} (done {slot_done:?}), consoles in {console_takeover:?}"
    );
    assert!(slot_takeover <= Duration::from_secs(30) && console_takeover <= Duration::from_secs(30));

    // A taken-over console logs what its host prints afterwards.
    if let Some(key) = victims_consoles.first() {
        let node = key.trim_start_matches("console:");
        let since = chrono::Utc::now();
        c.ok(&["power", "cycle", node, "--yes"]);
        poll("console output logged by the new holder", Duration::from_secs(60), || {
            let o = c.cli(&["console", "log", node, "--since", &since.to_rfc3339()]);
            (o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Booting")).then_some(())
        });
    }

    // Freeze a survivor holding consoles past the expiry (its process exists: only expiry frees it).
    let live: Vec<usize> = (0..3).filter(|i| *i != victim).collect();
    let owners = c.work("console:");
    let frozen = *live
        .iter()
        .max_by_key(|i| owners.values().filter(|v| v.0 == pids[**i]).count())
        .expect("two survivors");
    let frozen_consoles = owners.values().filter(|v| v.0 == pids[frozen]).count();
    replicas[frozen].pause();
    let (_, freeze_takeover) =
        poll("the frozen replica's consoles taken over", Duration::from_secs(45), || {
            let w = c.work("console:");
            (w.len() == NODES + 1 && w.values().all(|v| v.0 != pids[frozen])).then_some(())
        });
    eprintln!(
        "SIGSTOP replica {frozen} holding {frozen_consoles} consoles: taken over in {freeze_takeover:?}"
    );
    assert!(freeze_takeover <= Duration::from_secs(30), "{freeze_takeover:?}");
    replicas[frozen].resume();
    // Awake again: it finds its claims lost, rejoins, and the consoles spread over both survivors again.
    poll("consoles spread over both survivors again", Duration::from_secs(60), || {
        let w = c.work("console:");
        let holders: BTreeSet<u32> = w.values().map(|v| v.0).collect();
        (w.len() == NODES + 1 && holders.len() == 2 && !holders.contains(&victim_pid)).then_some(())
    });

    // More slots pass, each with a changed config.
    let mut expected_slots = 2;
    while expected_slots < slots {
        c.sim.fault("leaf", "config-change");
        let n = expected_slots + 1;
        poll(&format!("slot {n} done"), Duration::from_secs(100), || {
            let w = c.work("slot:backup:");
            (w.len() == n && w.values().all(|v| v.2)).then_some(())
        });
        expected_slots = n;
    }
    let w = c.work("slot:backup:");
    let ran = w.len();
    assert!(w.values().all(|v| v.2), "every slot done: {w:?}");
    let ok = c.scheduler_rows("ok");
    let unchanged = c.scheduler_rows("unchanged");
    let interrupted: usize = c.rows(
        "SELECT count(*)::text FROM audit_log WHERE action = 'backup.slot' AND outcome = 'interrupted'",
    )[0][0]
        .parse()
        .unwrap();
    let versions = c.versions();
    let audit_after = c.audit_ids();
    let lost: Vec<_> = audit_before.difference(&audit_after).collect();
    eprintln!(
        "replicas on PostgreSQL: {ran} slots, each done once ({ok} new versions + {unchanged} unchanged, {interrupted} \
         interrupted and taken over); {versions} versions; audit rows {} before the kill, {} after, {} lost; \
         takeover after SIGKILL {:.1} s (slot; done at {:.1} s) / {:.1} s (consoles, {} of them), after SIGSTOP {:.1} s",
        audit_before.len(),
        audit_after.len(),
        lost.len(),
        slot_takeover.as_secs_f64(),
        slot_done.as_secs_f64(),
        console_takeover.as_secs_f64(),
        victims_consoles.len(),
        freeze_takeover.as_secs_f64(),
    );
    assert!(lost.is_empty(), "audit rows lost: {lost:?}");
    assert_eq!(ok + unchanged, ran, "one completed scheduled backup per slot: {w:?}");
    assert!(ok >= slots, "each slot after a config change stored it: {ok}");
    assert_eq!(interrupted, 1, "the killed replica's slot, audited as interrupted");
    assert!(ran >= slots, "{ran} slots");
    // Version 1 by hand, then one per slot that saw a changed config, none twice.
    assert_eq!(versions, 1 + ok, "one version per changed slot");
    drop(replicas);
    drop(db);
}

/// A runbook run is one replica's claim (`run:ID`): SIGKILL that replica while its power cycle is on the
/// BMC, and another replica takes the run over from the journal, finds the cycle done (the BMC's own
/// power events) and completes the run — one cycle in the BMC's action log, the claim done once.
#[test]
fn a_runbook_step_of_a_killed_replica_is_resumed_once_by_another() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let sim = common::two_node_sim(31900);
    let url = db.url.clone();
    let dir = sim.dir.path().join("runbooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cycle-head-node.toml"), common::CYCLE).unwrap();
    add_user_args(&sim, "ann", "operator", "correct horse battery", &["--database-url", &url]);
    let config = format!("[server]\nsweep-interval = \"0s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display());
    let mut replicas: Vec<ServeProcess> =
        (0..3).map(|_| ServeProcess::start_args(&sim, &config, &["--database-url", &url])).collect();
    let pids: Vec<u32> = replicas.iter().map(ServeProcess::pid).collect();
    let c = Cluster { sim, url };

    let s = login(&replicas[0].addr, "ann", "correct horse battery");
    let (st, runs) = s.call(
        "POST",
        "/api/v1/runbooks/cycle-head-node/runs",
        Some(serde_json::json!({"targets": ["node"]})),
    );
    assert_eq!(st, 200, "{runs}");
    let id = runs[0]["run"].as_str().unwrap().to_owned();
    let key = format!("run:{id}");

    // The cycle is on the BMC (its action log has the power-off); the run's holder dies now.
    let (holder, _) = poll("the cycle on the BMC and the run claimed", Duration::from_secs(60), || {
        let acted =
            c.sim.actions("node").iter().any(|a| a["action"] == "power-off" || a["action"] == "power-cycle");
        let w = c.work(&key);
        w.get(&key).filter(|_| acted).map(|(pid, fence, _)| (*pid, *fence))
    });
    let (victim_pid, fence) = holder;
    let victim = pids.iter().position(|p| *p == victim_pid).expect("the run's holder is one of ours");
    replicas[victim].kill9();
    let killed_at = Instant::now();
    eprintln!("SIGKILL replica {victim} (pid {victim_pid}) driving {key}");

    let other = replicas.iter().enumerate().find(|(i, _)| *i != victim).map(|(_, r)| r.addr.clone()).unwrap();
    let s = login(&other, "ann", "correct horse battery");
    let mut seen = String::new();
    let (done, took) = poll("the run completed by another replica", Duration::from_secs(90), || {
        let (st, v) = s.call("GET", &format!("/api/v1/runs/{id}"), None);
        let now = format!("{st} {} {:?}", v["state"], c.work(&key));
        if now != seen {
            eprintln!("run {id}: {now}");
            seen = now;
        }
        (st == 200 && v["state"] != "running").then_some(v)
    });
    eprintln!("run {id} taken over and ended `{}` {:.1} s after the kill", done["state"], took.as_secs_f64());
    assert_eq!(done["state"], "succeeded", "{done:#}");
    assert!(killed_at.elapsed() < Duration::from_secs(90));
    let w = c.work(&key);
    let (pid, new_fence, is_done) = w.get(&key).copied().expect("the run's claim");
    assert!(pid != victim_pid && new_fence > fence && is_done, "{w:?}");
    let acts: Vec<String> = c
        .sim
        .actions("node")
        .iter()
        .filter(|a| a["noop"] != true)
        .map(|a| a["action"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(acts == ["power-cycle"] || acts == ["power-off", "power-on"], "one cycle on the BMC: {acts:?}");
}
