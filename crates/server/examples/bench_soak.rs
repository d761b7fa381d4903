//! Kill/pause soak: three `lifeline serve` replicas on one PostgreSQL database over N simulated BMCs (half
//! Redfish, half IPMI), sweeping every 10 s and driving power-cycle runbook runs, while E random events
//! SIGKILL a replica (restarted at once) or SIGSTOP one (resumed 16 to 24 s later, past its claims'
//! expiry). Afterwards every run is driven to its end (runs waiting for an operator are approved), and:
//! - double actions: power actions the simulator executed that no authorized send accounts for. A step's
//!   send is authorized by its journal intent and ends with its outcome row; an action on the BMC is
//!   accounted for only between an intent of a run on that node and the run's next journal row (a
//!   replica fenced out after its intent that sends anyway acts after the taker's row: counted);
//! - lost audit outcomes: audit intents (`started`) of BMC commands with no later row for the same
//!   request and action;
//! - takeover: for each claim the victim held at the event, the time until another process held it,
//!   p50/p99 per kind of event, against the takeover bound of the server's settings.
//!
//! The same binary plays the simulator and each replica (`LIFELINE_BENCH_ROLE`), see `bench_support`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bench_support::*;
use lifeline_server::replica::TAKEOVER_BOUND;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const HELP: &str = "bench_soak: 100 random SIGKILL/SIGSTOP events over three lifeline serve replicas (PostgreSQL)
driving power-cycle runbooks and sweeps over N simulated BMCs; reports double actions (the simulator's
action log against the runs' journal), lost audit outcomes and takeover times (p50/p99).

usage: bench_soak [--events E] [--bmcs N] [--seed S]   defaults: 100 events, 200 BMCs, seed 31
       bench_soak --smoke                              6 events over 8 BMCs (about two minutes)
       bench_soak ... --inject                         also cycle one BMC behind Lifeline's back (the
                                                       simulator's control API) at the end: the check
                                                       must find exactly that one double action
       bench_soak --help

Needs LIFELINE_TEST_DATABASE_URL=postgres://… (a fresh database is created in it), e.g.
  LIFELINE_TEST_DATABASE_URL=$(.ci/start-postgres.sh) cargo run --release -p lifeline-server --example bench_soak";

/// This benchmark's simulated BMCs: `127.33.x.y`.
const PLACE: SimPlace = SimPlace { octet: 33, port_offset: 22000 };

/// One power cycle per run, confirmed by the power state read back.
const RUNBOOK: &str = r#"name = "soak-cycle"
targets = ["head-node"]
description = "Soak benchmark: one power cycle"
fault = "none (benchmark)"
worst-case = "the node stays off"
touches = "power"
never-touches = "anything else"
step = [{ name = "cycle", kind = "power", action = "cycle", timeout = "2m" }]
verify = [{ name = "is-on", kind = "wait-for", power = "on", timeout = "2m" }]
"#;

/// Power actions of the simulator's log that change something.
const ACTS: [&str; 5] = ["power-cycle", "power-off", "power-on", "hard-reset", "soft-off"];

struct Args {
    events: usize,
    bmcs: usize,
    seed: u64,
    /// Cycle one BMC outside every run, to show the double-action check finds it.
    inject: bool,
}

fn parse_args() -> Result<Args, (String, i32)> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let mut out = Args { events: 100, bmcs: 200, seed: 31, inject: false };
    let mut it = a.iter();
    while let Some(flag) = it.next() {
        let mut num = |what: &str| -> Result<u64, (String, i32)> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| (format!("bench_soak: {what} wants a number\n\n{HELP}"), 2))
        };
        match flag.as_str() {
            "--help" | "-h" => return Err((HELP.into(), 0)),
            "--smoke" => (out.events, out.bmcs) = (6, 8),
            "--inject" => out.inject = true,
            "--events" => out.events = num(flag)? as usize,
            "--bmcs" => out.bmcs = (num(flag)? as usize).max(4),
            "--seed" => out.seed = num(flag)?,
            other => return Err((format!("bench_soak: unknown argument `{other}`\n\n{HELP}"), 2)),
        }
    }
    Ok(out)
}

fn main() {
    if play_role() {
        return;
    }
    match parse_args() {
        Ok(a) => orchestrate(a),
        Err((text, code)) => {
            if code == 0 {
                println!("{text}");
            } else {
                eprintln!("{text}");
            }
            std::process::exit(code);
        }
    }
}

/// One replica: its listen address, process, and when a pause of it ends.
struct Replica {
    listen: String,
    child: Killed,
    paused_until: Option<Instant>,
}

/// A claim the victim of an event held at the event, waiting to be taken over.
struct Pending {
    key: String,
    victim: u32,
    at: Instant,
    kind: &'static str,
}

fn pid_of(holder: &str) -> u32 {
    holder.split("(pid ").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap_or(0)
}

fn rows(url: &str, sql: &str) -> Vec<Vec<String>> {
    lifeline_test_utils::pg_text_rows(url, sql)
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

fn count(url: &str, sql: &str) -> usize {
    rows(url, sql).first().and_then(|r| r.first()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// `kill -SIG PID`, as an operator's tooling would.
fn signal(pid: u32, sig: &str) {
    let _ = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

fn post(url: &str, token: &str, body: serde_json::Value) -> Result<serde_json::Value, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let c =
            reqwest::Client::builder().timeout(Duration::from_secs(30)).build().map_err(|e| e.to_string())?;
        let r = c.post(url).bearer_auth(token).json(&body).send().await.map_err(|e| e.to_string())?;
        let st = r.status();
        let text = r.text().await.map_err(|e| e.to_string())?;
        if !st.is_success() {
            return Err(format!("{st}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| e.to_string())
    })
}

fn serve(cfg: &Path, inventory: &Path, data: &Path, listen: &str, db: &str) -> Killed {
    let args = [
        cfg.display().to_string(),
        inventory.display().to_string(),
        data.display().to_string(),
        listen.into(),
        db.into(),
    ];
    spawn_role("serve", &args, &[])
}

/// Polls `replica_work` and records, for each pending claim, when another process holds it.
fn monitor(
    url: String,
    pending: Arc<Mutex<Vec<Pending>>>,
    took: Arc<Mutex<Vec<(&'static str, Duration)>>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let now: BTreeMap<String, (u32, bool)> =
                rows(&url, "SELECT key, holder, (done_at IS NOT NULL)::text FROM replica_work")
                    .into_iter()
                    .map(|r| (r[0].clone(), (pid_of(&r[1]), r[2] == "true")))
                    .collect();
            pending.lock().unwrap().retain(|p| match now.get(&p.key) {
                Some((holder, _)) if *holder != p.victim => {
                    took.lock().unwrap().push((p.kind, p.at.elapsed()));
                    false
                }
                // Finished by the victim before the event took effect, or released: nothing to take.
                Some((_, true)) | None => false,
                _ => p.at.elapsed() < Duration::from_secs(120),
            });
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

fn orchestrate(args: Args) {
    let Args { events, bmcs: n, seed, inject } = args;
    let admin = std::env::var("LIFELINE_TEST_DATABASE_URL").expect("LIFELINE_TEST_DATABASE_URL=postgres://…");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let (sims, eps) = start_sims(dir.path(), n, PLACE);
    let control = control_url(&eps);
    let inventory = dir.path().join("inventory.toml");
    let names = write_inventory(&inventory, n, &eps, false);
    let runbooks = dir.path().join("runbooks");
    std::fs::create_dir_all(&runbooks).unwrap();
    std::fs::write(runbooks.join("soak-cycle.toml"), RUNBOOK).unwrap();
    let db = rt().block_on(lifeline_test_utils::TestDatabase::create(&admin));
    let cfg = dir.path().join("lifeline.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nsweep-interval = \"10s\"\nconsole-logging = false\n\n[runbooks]\ndir = \"{}\"\n\n\
             [runbooks.guard]\nmax-concurrent = 1000\nmax-concurrent-per-rack = 1000\nmax-concurrent-per-role = 1000\n\
             max-concurrent-per-domain = 1000\nmax-in-recovery-percent = 100\n",
            runbooks.display()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let token = bench_token(&cfg, &inventory, &data, Some(&db.url));
    let mut replicas: Vec<Replica> = (0..3)
        .map(|_| {
            let listen = free_listen();
            let child = serve(&cfg, &inventory, &data, &listen, &db.url);
            Replica { listen, child, paused_until: None }
        })
        .collect();
    for r in &replicas {
        wait_for("a replica", Duration::from_secs(120), || {
            http_get(&format!("http://{}/healthz", r.listen), None).is_ok()
        });
    }
    println!("soak: {n} BMCs, 3 replicas, {events} events (seed {seed}); takeover bound {TAKEOVER_BOUND:?}");

    let pending: Arc<Mutex<Vec<Pending>>> = Arc::default();
    let took: Arc<Mutex<Vec<(&'static str, Duration)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = monitor(db.url.clone(), pending.clone(), took.clone(), stop.clone());

    let t0 = Instant::now();
    let mut runs: BTreeMap<String, String> = BTreeMap::new(); // run id -> node
    let in_flight = (n / 2).clamp(2, 20);
    let (mut kills, mut pauses, mut start_errors) = (0, 0, 0);
    for e in 0..events {
        // Keep runs in flight on nodes with none, started through a replica that answers.
        let busy: BTreeSet<String> = rows(
            &db.url,
            "SELECT target FROM runbook_runs WHERE state IN ('running', 'waiting-approval', 'pending')",
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        let free: Vec<&String> = names.iter().filter(|n| !busy.contains(*n)).collect();
        for _ in 0..in_flight.saturating_sub(busy.len()).min(free.len()) {
            let node = free[rng.random_range(0..free.len())].clone();
            let live: Vec<&Replica> = replicas.iter().filter(|r| r.paused_until.is_none()).collect();
            let r = live[rng.random_range(0..live.len())];
            match post(
                &format!("http://{}/api/v1/runbooks/soak-cycle/runs", r.listen),
                &token,
                serde_json::json!({ "targets": [node] }),
            ) {
                Ok(v) => {
                    if let Some(id) = v[0]["run"].as_str() {
                        runs.insert(id.to_owned(), node);
                    }
                }
                // A replica restarting after a kill, or two picks of one node: the next round retries.
                Err(_) => start_errors += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(500..3000)));
        for r in replicas.iter_mut() {
            if r.paused_until.is_some_and(|t| t <= Instant::now()) {
                signal(r.child.id(), "CONT");
                r.paused_until = None;
            }
        }
        // At most one replica paused at a time: two of three stay able to take over.
        let someone_paused = replicas.iter().any(|r| r.paused_until.is_some());
        let candidates: Vec<usize> = (0..3).filter(|i| replicas[*i].paused_until.is_none()).collect();
        let i = candidates[rng.random_range(0..candidates.len())];
        let pid = replicas[i].child.id();
        let held: Vec<String> = rows(
            &db.url,
            &format!(
                "SELECT key FROM replica_work WHERE holder LIKE '%(pid {pid} %' AND done_at IS NULL \
                 AND expires_at >= (extract(epoch from now()) * 1000)::bigint"
            ),
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        let pause = !someone_paused && rng.random_bool(0.5);
        let kind = if pause { "SIGSTOP" } else { "SIGKILL" };
        let at = Instant::now();
        if pause {
            signal(pid, "STOP");
            replicas[i].paused_until = Some(at + Duration::from_millis(rng.random_range(16_000..24_000)));
            pauses += 1;
        } else {
            // SIGKILL and reap, then its successor listens on the same address.
            let _ = replicas[i].child.0.kill();
            let _ = replicas[i].child.0.wait();
            let listen = replicas[i].listen.clone();
            replicas[i].child = serve(&cfg, &inventory, &data, &listen, &db.url);
            kills += 1;
        }
        println!(
            "event {:>3} at {:>5.1} s: {kind} replica {i} (pid {pid}) holding {} claim(s)",
            e + 1,
            t0.elapsed().as_secs_f64(),
            held.len()
        );
        pending.lock().unwrap().extend(held.into_iter().map(|key| Pending { key, victim: pid, at, kind }));
    }
    // Every pause ends; every run is driven to its end (an operator approves what waits for one).
    for r in replicas.iter_mut() {
        if let Some(until) = r.paused_until.take() {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            signal(r.child.id(), "CONT");
        }
    }
    let events_took = t0.elapsed();
    let mut approved = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let open = rows(
            &db.url,
            "SELECT id, state FROM runbook_runs WHERE state IN ('running', 'waiting-approval', 'pending')",
        );
        if open.is_empty() || Instant::now() > deadline {
            if !open.is_empty() {
                println!("{} run(s) still open after 300 s: {open:?}", open.len());
            }
            break;
        }
        for r in open.iter().filter(|r| r[1] == "waiting-approval") {
            let url = format!("http://{}/api/v1/runs/{}/approve", replicas[0].listen, r[0]);
            if post(&url, &token, serde_json::json!({})).is_ok() {
                approved += 1;
            }
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    // Claims pending at the end get the monitor's last look.
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();

    if inject {
        post(&format!("{control}/power/{}", names[0]), "", serde_json::json!({ "action": "cycle" }))
            .expect("the simulator takes the injected cycle");
        println!("injected: one power cycle of {} through the simulator's control API", names[0]);
    }
    let doubles = double_actions(&db.url, &control, &names);
    let states: BTreeMap<String, usize> =
        rows(&db.url, "SELECT state, count(*)::text FROM runbook_runs GROUP BY state")
            .into_iter()
            .map(|r| (r[0].clone(), r[1].parse().unwrap_or(0)))
            .collect();
    let intent = "outcome = 'started' AND (action LIKE 'power.%' OR action = 'bmc.reset')";
    let lost_rows = rows(
        &db.url,
        &format!(
            "SELECT s.id::text, s.actor, s.action, s.target, coalesce(s.request_id, '') FROM audit_log s WHERE s.{intent} \
             AND NOT EXISTS (SELECT 1 FROM audit_log o WHERE o.id > s.id AND o.outcome <> 'started' \
             AND o.action = s.action AND o.request_id IS NOT DISTINCT FROM s.request_id)"
        ),
    );
    for r in &lost_rows {
        println!("LOST OUTCOME: audit {} {} {} on {} (request {})", r[0], r[1], r[2], r[3], r[4]);
    }
    let intents = count(&db.url, &format!("SELECT count(*)::text FROM audit_log WHERE {intent}"));
    let took = took.lock().unwrap().clone();
    let left = pending.lock().unwrap().len();
    println!(
        "\nsoak on this machine ({} cores): {n} simulated BMCs, 3 replicas on PostgreSQL, {events} events \
         ({kills} SIGKILL, {pauses} SIGSTOP) in {:.0} s, all runs ended {:.0} s later",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        events_took.as_secs_f64(),
        (t0.elapsed() - events_took).as_secs_f64(),
    );
    println!(
        "runs {} ({states:?}; {approved} approved after an operator was asked; {start_errors} starts refused or unanswered)",
        runs.len()
    );
    println!("| figure | value |\n|---|---|");
    println!("| power actions executed by the BMCs | {} |", doubles.actions);
    println!("| double actions (BMC actions outside every authorized send) | {} |", doubles.unaccounted);
    println!(
        "| lost audit outcomes (BMC command intents with no outcome row) | {} of {intents} |",
        lost_rows.len()
    );
    for kind in ["SIGKILL", "SIGSTOP"] {
        let mut v: Vec<Duration> = took.iter().filter(|(k, _)| *k == kind).map(|(_, d)| *d).collect();
        v.sort();
        if v.is_empty() {
            println!("| takeover after {kind} | no claim was held at those events |");
            continue;
        }
        let (p50, p99) = (pct_ms(&v, 0.5) / 1000.0, pct_ms(&v, 0.99) / 1000.0);
        println!(
            "| takeover after {kind} ({} claims) p50 / p99 | {p50:.1} / {p99:.1} s ({:.2} / {:.2} of the {} s bound) |",
            v.len(),
            p50 / TAKEOVER_BOUND.as_secs_f64(),
            p99 / TAKEOVER_BOUND.as_secs_f64(),
            TAKEOVER_BOUND.as_secs()
        );
    }
    if left > 0 {
        println!("| claims never taken over within 120 s | {left} |");
    }
    drop(replicas);
    drop(sims);
    drop(db);
    if inject {
        let found = doubles.unaccounted == 1;
        println!(
            "self-check: the injected cycle {} found as the one double action",
            if found { "was" } else { "was NOT" }
        );
        std::process::exit(if found && lost_rows.is_empty() { 0 } else { 1 });
    }
    if doubles.unaccounted > 0 || !lost_rows.is_empty() {
        std::process::exit(1);
    }
}

struct Doubles {
    actions: usize,
    unaccounted: usize,
}

/// Every power action the simulator executed on `names`, against the windows in which a run on that node
/// was authorized to send: from a step's journal intent to the run's next journal row (its outcome, or
/// the taker's decision after a takeover), open-ended when none followed.
fn double_actions(url: &str, control: &str, names: &[String]) -> Doubles {
    let mut windows: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
    for r in rows(
        url,
        "SELECT r.target, j.at::text, coalesce((SELECT min(n.at) FROM runbook_journal n WHERE n.run_id = j.run_id \
         AND n.id > j.id), 9223372036854775807)::text FROM runbook_journal j JOIN runbook_runs r ON r.id = j.run_id \
         WHERE j.phase = 'intent'",
    ) {
        let (from, to) = (r[1].parse().unwrap_or(0), r[2].parse().unwrap_or(i64::MAX));
        windows.entry(r[0].clone()).or_default().push((from, to));
    }
    let (mut actions, mut unaccounted) = (0, 0);
    for node in names {
        let body = http_get(&format!("{control}/devices/{node}/actions"), None).unwrap_or_default();
        let acts: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap_or_default();
        for a in
            acts.iter().filter(|a| a["noop"] != true && ACTS.contains(&a["action"].as_str().unwrap_or("")))
        {
            actions += 1;
            let at = a["time"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp_millis())
                .unwrap_or(0);
            // The journal's `at` is in whole milliseconds, the simulator's time finer: 1 ms either side.
            let ok = windows
                .get(node)
                .is_some_and(|w| w.iter().any(|(f, t)| at + 1 >= *f && at <= t.saturating_add(1)));
            if !ok {
                println!(
                    "DOUBLE ACTION on {node}: {} at {} outside every authorized send",
                    a["action"], a["time"]
                );
                unaccounted += 1;
            }
        }
    }
    Doubles { actions, unaccounted }
}
