//! Server benchmarks (issue 12), each against `lifeline sim` BMCs in a separate process so the figures
//! are the server's own:
//!
//! 1. Fleet: N simulated BMCs (half Redfish, half IPMI) managed by the server and swept every 60 s — the
//!    server's RSS during the sweeps and idle between them (goal < 150 MiB at 10,000).
//! 2. API: `GET /api/v1/devices` with those N devices from 100 concurrent clients, p50/p99.
//! 3. Consoles: M IPMI SOL consoles logged always-on by the server (goal: 1,000 under 256 MiB and under
//!    one core), idle and during a boot storm (every node power-cycled through the simulator).
//!
//! `cargo run --release -p lifeline-server --example bench_server -- [N=10000] [M=1000] [SWEEP_SECS=60]
//! [SWEEPS=4]` (figures are medians over the sweeps after the first, which discovers every BMC).
//!
//! The same binary plays the simulator (`LIFELINE_BENCH_ROLE=sim`) and the server
//! (`LIFELINE_BENCH_ROLE=serve`), started as children with RLIMIT_NOFILE raised (`ulimit -n`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod bench_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bench_support::*;

/// This benchmark's simulated BMCs: `127.30.x.y` (mixed) and `127.31.x.y` (IPMI only, consoles).
const MIXED: SimPlace = SimPlace { octet: 30, port_offset: 20000 };
const IPMI_ONLY: SimPlace = SimPlace { octet: 31, port_offset: 20000 };

fn main() {
    if !play_role() {
        orchestrate();
    }
}

/// Starts the simulator, writes the inventory from its endpoints, makes a token, starts the server.
struct Setup {
    _sims: Vec<Killed>,
    server: Killed,
    url: String,
    token: String,
    data: PathBuf,
    names: Vec<String>,
    control: String,
    /// Where the server writes its allocator's account (`LIFELINE_BENCH_HEAP`).
    heap: PathBuf,
}

fn setup(dir: &Path, n: usize, ipmi_only: bool, config: &str) -> Setup {
    let (sims, eps) = start_sims(dir, n, if ipmi_only { IPMI_ONLY } else { MIXED });
    let control = control_url(&eps);
    let (invp, cfgp, data) = (dir.join("inventory.toml"), dir.join("lifeline.toml"), dir.join("data"));
    let names = write_inventory(&invp, n, &eps, ipmi_only);
    std::fs::write(&cfgp, config).unwrap();
    let token = bench_token(&cfgp, &invp, &data, None);
    let listen = free_listen();
    // LIFELINE_BENCH_SERVE_WRAP: e.g. `heaptrack -o /tmp/serve` (the RSS figures are then the wrapper's).
    let wrap = std::env::var("LIFELINE_BENCH_SERVE_WRAP").unwrap_or_default();
    let heap = dir.join("heap.txt");
    let server = spawn_role(
        "serve",
        &[cfgp.display().to_string(), invp.display().to_string(), data.display().to_string(), listen.clone()],
        &[("WRAP", wrap), ("LIFELINE_BENCH_HEAP", heap.display().to_string())],
    );
    let url = format!("http://{listen}");
    wait_for("the server", Duration::from_secs(120), || http_get(&format!("{url}/healthz"), None).is_ok());
    Setup { _sims: sims, server, url, token, data, names, control, heap }
}

// ----------------------------------------------------------------------------------------------------
// The benchmarks

fn orchestrate() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = a.first().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let m: usize = a.get(1).and_then(|v| v.parse().ok()).unwrap_or(1_000);
    let every: u64 = a.get(2).and_then(|v| v.parse().ok()).unwrap_or(60);
    let sweeps: usize = a.get(3).and_then(|v| v.parse().ok()).unwrap_or(4);
    let mut table: Vec<(String, String, String)> = Vec::new();
    if n > 0 {
        fleet_and_api(n, every, sweeps, &mut table);
    }
    if m > 0 {
        consoles(m, &mut table);
    }
    println!("\n| measure | figure | goal |\n|---|---|---|");
    for (what, fig, goal) in &table {
        println!("| {what} | {fig} | {goal} |");
    }
}

fn fleet_and_api(n: usize, every: u64, sweeps_wanted: usize, table: &mut Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("[server]\nsweep-interval = \"{every}s\"\nconsole-logging = false\n");
    let s = setup(dir.path(), n, false, &cfg);
    let pid = s.server.id();
    println!("server: pid {pid}, RSS at start {:.0} MiB", rss_mib(pid));
    // SWEEPS sweeps, RSS sampled every second. A sweep's peak is the highest sample from the end of the
    // previous idle window to its completion; its idle window is from 5 s after it completes to 3 s
    // before the next one starts (the scheduler sleeps the interval after each sweep).
    let mut sweeps: Vec<SweepFigures> = Vec::new();
    let (mut peak, mut idle): (f64, Option<SweepFigures>) = (0.0, None);
    let t = Instant::now();
    let mut last = 0.0;
    let mut done_at: Option<Instant> = None;
    loop {
        let rss = rss_mib(pid);
        let done = metric(&s.url, "lifeline_sweeps_total").unwrap_or(0.0);
        let in_idle = done_at.is_some_and(|d| {
            d.elapsed() > Duration::from_secs(5)
                && d.elapsed() + Duration::from_secs(3) < Duration::from_secs(every)
        });
        if done > last {
            last = done;
            peak = peak.max(rss);
            if let Some(f) = idle.take() {
                sweeps.push(f);
            }
            let secs = metric(&s.url, "lifeline_sweep_duration_seconds").unwrap_or(0.0);
            let failing = metric(&s.url, "lifeline_sweep_failing").unwrap_or(0.0);
            println!("sweep {done}: {secs:.1} s, {failing} failing, RSS {rss:.0} MiB (peak {peak:.0})");
            idle = Some(SweepFigures { secs, peak, ..Default::default() });
            peak = 0.0;
            done_at = Some(Instant::now());
        } else if in_idle && let Some(f) = idle.as_mut() {
            f.idle_rss.push(rss);
            if let Some((used, free)) = heap_mib(&s.heap) {
                f.heap_used.push(used);
                f.heap_free.push(free);
            }
        } else {
            peak = peak.max(rss);
        }
        if last >= sweeps_wanted as f64
            && done_at.is_some_and(|d| d.elapsed() > Duration::from_secs(every * 3 / 4))
        {
            sweeps.extend(idle.take());
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(3600), "sweeps take too long");
        std::thread::sleep(Duration::from_secs(1));
    }
    println!(
        "\n| sweep | duration | peak RSS | idle RSS (median) | heap in use / free in heap (median, glibc) |"
    );
    println!("|---|---|---|---|---|");
    for (i, f) in sweeps.iter().enumerate() {
        println!(
            "| {} | {:.1} s | {:.0} MiB | {:.0} MiB | {:.0} / {:.0} MiB |",
            i + 1,
            f.secs,
            f.peak,
            median(&f.idle_rss),
            median(&f.heap_used),
            median(&f.heap_free)
        );
    }
    // Medians over the sweeps after the first (the first one discovers every BMC: a different workload).
    let steady: &[SweepFigures] = if sweeps.len() > 1 { &sweeps[1..] } else { &sweeps };
    let col = |f: fn(&SweepFigures) -> f64| median(&steady.iter().map(f).collect::<Vec<_>>());
    let (peak_med, idle_med) = (col(|f| f.peak), col(|f| median(&f.idle_rss)));
    let first_peak = sweeps.first().map_or(0.0, |f| f.peak);
    let idle_hi = steady.iter().flat_map(|f| f.idle_rss.iter().copied()).fold(0.0, f64::max);
    let heap_med = col(|f| median(&f.heap_used));
    let sweep_ms: Vec<f64> = sweeps.iter().map(|f| f.secs * 1000.0).collect();
    let db = du(&s.data);
    println!(
        "data dir after {last} sweeps: {} MiB ({} bytes per BMC per sweep)",
        db / (1 << 20),
        db / (n as u64 * last as u64).max(1)
    );
    table.push((
        format!("store growth, {n} BMCs swept"),
        format!("{} KiB per sweep", db / 1024 / (last as u64).max(1)),
        "—".into(),
    ));
    let secs: Vec<String> = sweep_ms.iter().map(|m| format!("{:.1} s", m / 1000.0)).collect();
    let k = steady.len();
    table.push((
        format!("server RSS, {n} BMCs, peak during sweeps (median of {k}; first sweep {first_peak:.0} MiB)"),
        format!("{peak_med:.0} MiB"),
        "—".into(),
    ));
    table.push((
        format!("server RSS, {n} BMCs, idle between sweeps (median of {k}; highest sample {idle_hi:.0} MiB)"),
        format!("{idle_med:.0} MiB"),
        "< 150 MiB".into(),
    ));
    if heap_med > 0.0 {
        table.push((
            format!("glibc malloc heap in use, {n} BMCs, idle (median of {k}; the whole heap under glibc, only C code such as SQLite under mimalloc)"),
            format!("{heap_med:.0} MiB"),
            "—".into(),
        ));
    }
    table.push((
        format!("sweep duration, {n} BMCs (every {every} s)"),
        secs.join(", "),
        format!("< {every} s"),
    ));

    // The fleet list from 100 concurrent clients.
    let (clients, per) = (100usize, 5usize);
    let lat = fleet_list(std::slice::from_ref(&s.url), &s.token, n, clients, per);
    let pct = |p: f64| pct_ms(&lat, p);
    println!(
        "fleet list: {} requests, p50 {:.0} ms, p99 {:.0} ms, server RSS {:.0} MiB",
        lat.len(),
        pct(0.5),
        pct(0.99),
        rss_mib(pid)
    );
    table.push((
        format!("GET /api/v1/devices ({n} devices, {clients} clients) p50"),
        format!("{:.0} ms", pct(0.5)),
        "—".into(),
    ));
    table.push((
        format!("GET /api/v1/devices ({n} devices, {clients} clients) p99"),
        format!("{:.0} ms", pct(0.99)),
        "—".into(),
    ));
    table.push((
        "server RSS right after the API load (100 clients each read the whole fleet list at once)".into(),
        format!("{:.0} MiB", rss_mib(pid)),
        // The memory goal is RSS idle between sweeps (the rows above); this is the transient peak
        // of many large responses in flight, shown so that a regression in it is seen too.
        "— (transient)".into(),
    ));
    let _ = &s.data;
}

fn consoles(m: usize, table: &mut Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), m, true, "[server]\nsweep-interval = \"0s\"\nconsole-logging = true\n");
    let pid = s.server.id();
    let t = Instant::now();
    wait_for("every console to be logged", Duration::from_secs(600), || {
        metric(&s.url, "lifeline_console_sessions").unwrap_or(0.0) as usize >= m
    });
    println!("consoles: {m} connected in {:.1} s, RSS {:.0} MiB", t.elapsed().as_secs_f64(), rss_mib(pid));
    let window = |secs: u64| {
        let (c0, t0) = (cpu_secs(pid), Instant::now());
        let mut peak = 0.0f64;
        while t0.elapsed() < Duration::from_secs(secs) {
            peak = peak.max(rss_mib(pid));
            std::thread::sleep(Duration::from_millis(500));
        }
        ((cpu_secs(pid) - c0) / t0.elapsed().as_secs_f64(), peak)
    };
    let (idle_cpu, idle_rss) = window(20);
    let bytes0 = du(&s.data);
    // Boot storm: every node power-cycled through the simulator (not through the server), so the
    // consoles carry firmware and boot output all at once.
    rt().block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for name in s.names.clone() {
            let url = s.control.clone();
            set.spawn(
                async move { lifeline_sim::control::Client::power(&url, &name, "cycle").await.is_ok() },
            );
        }
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            ok += usize::from(r.unwrap_or(false));
        }
        println!("boot storm: {ok} of {m} nodes cycled");
    });
    let (storm_cpu, storm_rss) = window(30);
    let logged = du(&s.data).saturating_sub(bytes0);
    let connected = metric(&s.url, "lifeline_console_sessions").unwrap_or(0.0);
    println!(
        "consoles: idle {:.2} cores / {idle_rss:.0} MiB; boot storm {:.2} cores / {storm_rss:.0} MiB; {} KiB logged in 30 s; {connected} connected",
        idle_cpu,
        storm_cpu,
        logged / 1024
    );
    table.push((
        format!("{m} consoles logged, idle: RSS / CPU"),
        format!("{idle_rss:.0} MiB / {idle_cpu:.2} core"),
        "< 256 MiB / < 1 core".into(),
    ));
    table.push((
        format!("{m} consoles logged, boot storm: RSS / CPU"),
        format!("{storm_rss:.0} MiB / {storm_cpu:.2} core"),
        "< 256 MiB / < 1 core".into(),
    ));
    table.push((
        format!("console bytes logged in the 30 s storm ({m} consoles)"),
        format!("{} KiB", logged / 1024),
        "every byte".into(),
    ));
}

/// What one sweep cost: its duration, the RSS peak while it ran, and the samples of the idle time after it.
#[derive(Default)]
struct SweepFigures {
    secs: f64,
    peak: f64,
    idle_rss: Vec<f64>,
    heap_used: Vec<f64>,
    heap_free: Vec<f64>,
}
