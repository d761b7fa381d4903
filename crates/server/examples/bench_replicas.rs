//! Replicas benchmark (issue 14): 1, 2 and 3 `lifeline serve` replicas on one PostgreSQL database over N
//! simulated BMCs (half Redfish, half IPMI, in separate simulator processes), sweeping on an interval:
//! - sweep coverage: how the fleet is split (BMCs per replica; the shares add up to N when no BMC is in
//!   two replicas' shares), each replica's sweep duration, the time to sweep the whole fleet once (the
//!   slowest replica's share), and the share of BMCs swept within two sweep periods (should be 100 %);
//! - API: `GET /api/v1/devices` (N devices) from 100 concurrent clients spread over the replicas, p50/p99.
//!
//! `LIFELINE_TEST_DATABASE_URL=postgres://… cargo run --release -p lifeline-server --example bench_replicas
//! -- [N=10000] [SWEEP_SECS=30] [MAX_REPLICAS=3]` (a fresh database per replica count).
//!
//! The same binary plays the simulator (`LIFELINE_BENCH_ROLE=sim`) and each replica
//! (`LIFELINE_BENCH_ROLE=serve`), started as children with RLIMIT_NOFILE raised.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_support::*;

/// This benchmark's simulated BMCs: `127.32.x.y`, half Redfish and half IPMI.
const PLACE: SimPlace = SimPlace { octet: 32, port_offset: 21000 };

fn main() {
    if !play_role() {
        orchestrate();
    }
}

/// Starts the simulators and writes the inventory; returns them and the inventory's path.
fn fleet(dir: &Path, n: usize) -> (Vec<Killed>, PathBuf) {
    let (sims, eps) = start_sims(dir, n, PLACE);
    let path = dir.join("inventory.toml");
    write_inventory(&path, n, &eps, false);
    (sims, path)
}

struct Round {
    replicas: usize,
    shares: Vec<f64>,
    durations: Vec<f64>,
    covered: usize,
    window: f64,
    p50: f64,
    p99: f64,
}

fn orchestrate() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = a.first().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let every: u64 = a.get(1).and_then(|v| v.parse().ok()).unwrap_or(30);
    let max: usize = a.get(2).and_then(|v| v.parse().ok()).unwrap_or(3);
    let admin = std::env::var("LIFELINE_TEST_DATABASE_URL").expect("LIFELINE_TEST_DATABASE_URL=postgres://…");
    let dir = tempfile::tempdir().unwrap();
    let (_sims, inventory) = fleet(dir.path(), n);
    let mut rounds = Vec::new();
    for k in 1..=max {
        rounds.push(round(dir.path(), &inventory, &admin, n, every, k));
    }
    println!(
        "\n{n} simulated BMCs, sweep interval {every} s, one PostgreSQL database, all on this machine ({} cores)\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    println!(
        "| replicas | BMCs per replica (sum) | sweep per replica | whole fleet swept once | swept within two periods | fleet list p50 / p99 (100 clients) |"
    );
    println!("|---|---|---|---|---|---|");
    for r in &rounds {
        let shares: Vec<String> = r.shares.iter().map(|s| format!("{s:.0}")).collect();
        let durs: Vec<String> = r.durations.iter().map(|d| format!("{d:.1} s")).collect();
        let whole = r.durations.iter().copied().fold(0.0, f64::max);
        println!(
            "| {} | {} ({:.0}) | {} | {whole:.1} s | {:.1} % ({:.0} s) | {:.0} / {:.0} ms |",
            r.replicas,
            shares.join(" + "),
            r.shares.iter().sum::<f64>(),
            durs.join(", "),
            100.0 * r.covered as f64 / n as f64,
            r.window,
            r.p50,
            r.p99
        );
    }
}

fn round(dir: &Path, inventory: &Path, admin: &str, n: usize, every: u64, k: usize) -> Round {
    let rdir = dir.join(format!("r{k}"));
    std::fs::create_dir_all(&rdir).unwrap();
    let db = rt().block_on(lifeline_test_utils::TestDatabase::create(admin));
    let cfg = rdir.join("lifeline.toml");
    std::fs::write(&cfg, format!("[server]\nsweep-interval = \"{every}s\"\nconsole-logging = false\n"))
        .unwrap();
    let data = rdir.join("data");
    let token = bench_token(&cfg, inventory, &data, Some(&db.url));
    let mut servers = Vec::new();
    let mut urls = Vec::new();
    for _ in 0..k {
        let listen = free_listen();
        let args = [cfg.display().to_string(), inventory.display().to_string(), data.display().to_string()];
        let mut args = args.to_vec();
        args.extend([listen.clone(), db.url.clone()]);
        servers.push(spawn_role("serve", &args, &[]));
        urls.push(format!("http://{listen}"));
    }
    for u in &urls {
        wait_for("a replica", Duration::from_secs(120), || http_get(&format!("{u}/healthz"), None).is_ok());
    }
    wait_for("every replica to see the others", Duration::from_secs(60), || {
        urls.iter().all(|u| metric(u, "lifeline_replicas").is_some_and(|v| v as usize == k))
    });
    // Steady state: every replica has finished a sweep that started after the membership settled.
    let base: Vec<f64> = urls.iter().map(|u| metric(u, "lifeline_sweeps_total").unwrap_or(0.0)).collect();
    wait_for("a settled sweep on every replica", Duration::from_secs(every * 6 + 600), || {
        urls.iter().zip(&base).all(|(u, b)| metric(u, "lifeline_sweeps_total").unwrap_or(0.0) >= b + 2.0)
    });
    let shares: Vec<f64> = urls.iter().map(|u| metric(u, "lifeline_sweep_devices").unwrap_or(0.0)).collect();
    let durations: Vec<f64> =
        urls.iter().map(|u| metric(u, "lifeline_sweep_duration_seconds").unwrap_or(0.0)).collect();
    // Two sweep periods (interval plus the slowest sweep, twice, plus slack): every BMC should be in it.
    // Observations are written when a replica's sweep ends, so one period can fall between two bursts.
    let slowest = durations.iter().copied().fold(0.0, f64::max);
    let window = (Duration::from_secs(every) + Duration::from_secs_f64(slowest)) * 2 + Duration::from_secs(2);
    let t0 = lifeline_engine::ops::runs::now_ms();
    std::thread::sleep(window);
    let t1 = t0 + i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let rows = lifeline_test_utils::pg_text_rows(
        &db.url,
        &format!(
            "SELECT count(DISTINCT device)::text FROM observations WHERE kind = 'sweep' \
             AND observed_at >= {t0} AND observed_at < {t1}"
        ),
    );
    let covered = rows[0][0].as_deref().unwrap_or("0").parse::<usize>().unwrap_or(0);
    // Each BMC in exactly one replica's share: the shares add up to the fleet.
    let overlap = shares.iter().sum::<f64>() as i64 - n as i64;
    println!(
        "{k} replica(s): shares {shares:?} (sum - N = {overlap}), sweep durations {durations:?} s; {covered} of {n} \
         swept within {:.1} s",
        window.as_secs_f64()
    );
    let (p50, p99) = fleet_list_pcts(&urls, &token, n);
    println!("{k} replica(s): fleet list p50 {p50:.0} ms, p99 {p99:.0} ms");
    drop(servers);
    drop(db);
    Round { replicas: k, shares, durations, covered, window: window.as_secs_f64(), p50, p99 }
}

/// 100 clients, 5 requests each, spread round-robin over the replicas: (p50, p99) in milliseconds.
fn fleet_list_pcts(urls: &[String], token: &str, n: usize) -> (f64, f64) {
    let lat = fleet_list(urls, token, n, 100, 5);
    (pct_ms(&lat, 0.5), pct_ms(&lat, 0.99))
}
