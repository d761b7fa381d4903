//! Server benchmarks (issue 12), each against `lifeline sim` BMCs in a separate process so the figures
//! are the server's own:
//!
//! 1. Fleet: N simulated BMCs (half Redfish, half IPMI) managed by the server and swept every 60 s — the
//!    server's RSS during the sweeps and idle between them (goal < 150 MiB at 10,000).
//! 2. API: `GET /api/v1/devices` with those N devices from 100 concurrent clients, p50/p99.
//! 3. Consoles: M IPMI SOL consoles logged always-on by the server (goal: 1,000 under 256 MiB and under
//!    one core), idle and during a boot storm (every node power-cycled through the simulator).
//!
//! `cargo run --release -p lifeline-server --example bench_server -- [N=10000] [M=1000] [SWEEP_SECS=60]`
//!
//! The same binary plays the simulator (`LIFELINE_BENCH_ROLE=sim`) and the server
//! (`LIFELINE_BENCH_ROLE=serve`), started as children with RLIMIT_NOFILE raised (`ulimit -n`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use lifeline_sim::{BmcSpec, EndpointKind, Fleet, FleetSpec, GpuSpec, PortPlan, ServerSpec, SimOptions};

const PASSWORD: &str = "bench-pass";

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match std::env::var("LIFELINE_BENCH_ROLE").as_deref() {
        Ok("sim") => role_sim(),
        Ok("serve") => role_serve(),
        _ => orchestrate(),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime")
}

// ----------------------------------------------------------------------------------------------------
// Roles

/// BMCs per simulator process: each is a TCP and a UDP socket, and RLIMIT_NOFILE here is 20,000 and
/// cannot be raised without CAP_SYS_RESOURCE — so 10,000 BMCs are served by two processes.
const PER_SIM: usize = 5_000;

/// `sim FIRST COUNT ipmi|mixed ENDPOINTS`: serve BMCs FIRST..FIRST+COUNT until killed.
fn role_sim() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let first: usize = a[0].parse().expect("FIRST");
    let n: usize = a[1].parse().expect("COUNT");
    let ipmi_only = a[2] == "ipmi";
    let endpoints = PathBuf::from(&a[3]);
    rt().block_on(async move {
        let servers = (first..first + n)
            .map(|i| ServerSpec {
                name: format!("node-{i:05}"),
                role: "head-node".into(),
                bmc: BmcSpec {
                    address: std::net::IpAddr::V4(std::net::Ipv4Addr::new(
                        127,
                        if ipmi_only { 31 } else { 30 },
                        (i / 250) as u8,
                        (i % 250 + 1) as u8,
                    )),
                    redfish_port: None,
                    ipmi_port: None,
                    username: "admin".into(),
                    password: PASSWORD.into(),
                    flavor: Default::default(),
                    cipher_suites: Vec::new(),
                    session_limit: None,
                },
                gpus: GpuSpec { count: 0, ..GpuSpec::default() },
                rails: Vec::new(),
                powered_on: true,
            })
            .collect();
        let spec = FleetSpec { servers, switches: Vec::new() };
        let opts = SimOptions { ports: PortPlan::Offset(20000), time_scale: 0.02, ..SimOptions::default() };
        let t = Instant::now();
        let fleet = Fleet::start(spec, opts).await.expect("the simulated fleet starts");
        let json = serde_json::to_string(fleet.endpoints()).expect("endpoints serialise");
        let tmp = endpoints.with_extension("tmp");
        std::fs::write(&tmp, json).expect("write endpoints");
        std::fs::rename(&tmp, &endpoints).expect("publish endpoints");
        eprintln!("sim: {n} BMCs up in {:.1} s", t.elapsed().as_secs_f64());
        std::future::pending::<()>().await;
    });
}

/// `serve CONFIG INVENTORY DATA LISTEN`: `lifeline serve --plain-http`.
fn role_serve() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let opts = lifeline_server::ServeOptions {
        settings: lifeline_engine::Settings {
            config: Some(a[0].clone().into()),
            inventory: Some(a[1].clone().into()),
            data_dir: Some(a[2].clone().into()),
            database_url: None,
        },
        listen: Some(a[3].clone()),
        plain_http: true,
        ..Default::default()
    };
    if let Err(e) = rt().block_on(lifeline_server::serve(opts)) {
        eprintln!("serve: {}", lifeline_engine::error_chain(&e));
        std::process::exit(1);
    }
}

// ----------------------------------------------------------------------------------------------------
// Measuring a child

fn spawn_role(role: &str, args: &[String]) -> Child {
    let exe = std::env::current_exe().expect("current exe");
    // Each BMC is a TCP and a UDP socket (the simulator), each logged console one (the server): as many
    // descriptors as the hard limit allows (raising it needs CAP_SYS_RESOURCE).
    let script = "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec \"$0\" \"$@\"";
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(exe)
        .args(args)
        .env("LIFELINE_BENCH_ROLE", role)
        .env("LIFELINE_BMC_PASSWORD", PASSWORD)
        .env("RUST_LOG", "warn")
        .spawn()
        .expect("spawn role")
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// utime + stime of a process, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0 // fields 14 and 15 of stat; CLK_TCK is 100 on Linux
}

fn metric(url: &str, name: &str) -> Option<f64> {
    let body = http_get(&format!("{url}/metrics"), None).ok()?;
    body.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

fn http_get(url: &str, token: Option<&str>) -> Result<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let c =
            reqwest::Client::builder().timeout(Duration::from_secs(60)).build().map_err(|e| e.to_string())?;
        let mut r = c.get(url);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send().await.map_err(|e| e.to_string())?.text().await.map_err(|e| e.to_string())
    })
}

fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < within, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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
}

fn setup(dir: &Path, n: usize, ipmi_only: bool, config: &str) -> Setup {
    let t = Instant::now();
    let mut sims = Vec::new();
    let mut eps: Vec<lifeline_sim::Endpoint> = Vec::new();
    for (k, first) in (0..n).step_by(PER_SIM).enumerate() {
        let endpoints = dir.join(format!("endpoints-{k}.json"));
        let count = PER_SIM.min(n - first);
        let mode = if ipmi_only { "ipmi" } else { "mixed" };
        let sim = Killed(spawn_role(
            "sim",
            &[first.to_string(), count.to_string(), mode.into(), endpoints.display().to_string()],
        ));
        wait_for("the simulator", Duration::from_secs(900), || endpoints.exists());
        let text = std::fs::read_to_string(&endpoints).unwrap();
        eps.extend(serde_json::from_str::<Vec<lifeline_sim::Endpoint>>(&text).unwrap());
        println!("simulator {k}: {count} BMCs (pid {}, RSS {:.0} MiB)", sim.0.id(), rss_mib(sim.0.id()));
        sims.push(sim);
    }
    println!("simulators: {n} BMCs in {} process(es), up in {:.1} s", sims.len(), t.elapsed().as_secs_f64());
    let control = eps
        .iter()
        .find(|e| e.kind == EndpointKind::Control)
        .map(|e| format!("http://{}:{}", e.address, e.port))
        .unwrap();
    let mut inv = String::from(
        "[cluster]\nname = \"bench\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n",
    );
    for r in 0..n.div_ceil(100) {
        inv.push_str(&format!("[[rack]]\nname = \"r{r}\"\nsite = \"s\"\n\n"));
    }
    let by: std::collections::HashMap<(&str, bool), &lifeline_sim::Endpoint> = eps
        .iter()
        .filter(|e| matches!(e.kind, EndpointKind::Redfish | EndpointKind::Ipmi))
        .map(|e| ((e.name.as_str(), e.kind == EndpointKind::Ipmi), e))
        .collect();
    let mut names = Vec::new();
    for i in 0..n {
        let name = format!("node-{i:05}");
        // Half Redfish, half IPMI (the simulator serves both on every BMC); only IPMI for consoles.
        let ipmi = ipmi_only || i % 2 == 1;
        let Some(e) = by.get(&(name.as_str(), ipmi)) else { continue };
        let proto = if ipmi { "ipmi" } else { "redfish" };
        inv.push_str(&format!(
            "[[device]]\nname = \"{name}\"\nrole = \"head-node\"\nrack = \"r{}\"\nbmc = {{ address = \"{}\", port = {}, protocol = \"{proto}\" }}\n\n",
            i / 100,
            e.address,
            e.port
        ));
        names.push(name);
    }
    assert_eq!(names.len(), n, "one device per simulated BMC");
    let (invp, cfgp, data) = (dir.join("inventory.toml"), dir.join("lifeline.toml"), dir.join("data"));
    std::fs::write(&invp, inv).unwrap();
    std::fs::write(&cfgp, config).unwrap();
    let token = rt().block_on(async {
        let settings = lifeline_engine::Settings {
            config: Some(cfgp.clone()),
            inventory: Some(invp.clone()),
            data_dir: Some(data.clone()),
            database_url: None,
        };
        let l = lifeline_engine::Lifeline::new(&settings, lifeline_engine::Identity::new("bench")).unwrap();
        let store = l.store().await.unwrap().clone();
        let audit = lifeline_engine::AuditService::new(store.clone(), "bench");
        let role = lifeline_server::Role::Operator;
        lifeline_server::accounts::user_add(&store, &audit, "bench", role, "bench password").await.unwrap();
        let t = lifeline_server::accounts::token_create(&store, &audit, "bench", None, None).await.unwrap();
        l.close().await;
        t.token
    });
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let server = Killed(spawn_role(
        "serve",
        &[cfgp.display().to_string(), invp.display().to_string(), data.display().to_string(), listen.clone()],
    ));
    let url = format!("http://{listen}");
    wait_for("the server", Duration::from_secs(120), || http_get(&format!("{url}/healthz"), None).is_ok());
    Setup { _sims: sims, server, url, token, data, names, control }
}

// ----------------------------------------------------------------------------------------------------
// The benchmarks

fn orchestrate() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = a.first().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let m: usize = a.get(1).and_then(|v| v.parse().ok()).unwrap_or(1_000);
    let every: u64 = a.get(2).and_then(|v| v.parse().ok()).unwrap_or(60);
    let mut table: Vec<(String, String, String)> = Vec::new();
    if n > 0 {
        fleet_and_api(n, every, &mut table);
    }
    if m > 0 {
        consoles(m, &mut table);
    }
    println!("\n| measure | figure | goal |\n|---|---|---|");
    for (what, fig, goal) in &table {
        println!("| {what} | {fig} | {goal} |");
    }
}

fn fleet_and_api(n: usize, every: u64, table: &mut Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!("[server]\nsweep-interval = \"{every}s\"\nconsole-logging = false\n");
    let s = setup(dir.path(), n, false, &cfg);
    let pid = s.server.0.id();
    println!("server: pid {pid}, RSS at start {:.0} MiB", rss_mib(pid));
    // Two sweeps and the idle time between them; RSS sampled every second.
    let (mut peak, mut idle_max, mut idle_min) = (0.0f64, 0.0f64, f64::MAX);
    let mut sweep_ms = Vec::new();
    let t = Instant::now();
    let mut last = 0.0;
    let mut idle_since: Option<Instant> = None;
    loop {
        let rss = rss_mib(pid);
        peak = peak.max(rss);
        let done = metric(&s.url, "lifeline_sweeps_total").unwrap_or(0.0);
        if done > last {
            last = done;
            let ms = metric(&s.url, "lifeline_sweep_duration_ms").unwrap_or(0.0);
            let failing = metric(&s.url, "lifeline_sweep_failing").unwrap_or(0.0);
            println!(
                "sweep {done}: {:.1} s, {failing} failing, RSS {rss:.0} MiB (peak {peak:.0})",
                ms / 1000.0
            );
            sweep_ms.push(ms);
            idle_since = Some(Instant::now());
        } else if let Some(since) = idle_since
            && since.elapsed() > Duration::from_secs(5)
        {
            idle_max = idle_max.max(rss);
            idle_min = idle_min.min(rss);
        }
        // Idle: most of the interval after the second sweep.
        if last >= 2.0 && idle_since.is_some_and(|s| s.elapsed() > Duration::from_secs(every * 3 / 4)) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(1800), "sweeps take too long");
        std::thread::sleep(Duration::from_secs(1));
    }
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
    table.push((
        format!("server RSS, {n} BMCs, peak during sweeps"),
        format!("{peak:.0} MiB"),
        "< 150 MiB".into(),
    ));
    table.push((
        format!("server RSS, {n} BMCs, idle between sweeps"),
        format!("{idle_min:.0}–{idle_max:.0} MiB"),
        "< 150 MiB".into(),
    ));
    table.push((
        format!("sweep duration, {n} BMCs (every {every} s)"),
        secs.join(", "),
        format!("< {every} s"),
    ));

    // The fleet list from 100 concurrent clients.
    let (clients, per) = (100usize, 5usize);
    let lat = rt().block_on(async {
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        let url = format!("{}/api/v1/devices", s.url);
        let first = c.get(&url).bearer_auth(&s.token).send().await.unwrap().text().await.unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(n), "every device listed");
        println!("fleet list: {} devices, {} KiB per response", n, first.len() / 1024);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..clients {
            let (c, url, tok) = (c.clone(), url.clone(), s.token.clone());
            tasks.spawn(async move {
                let mut out = Vec::new();
                for _ in 0..per {
                    let t = Instant::now();
                    let r = c.get(&url).bearer_auth(&tok).send().await.unwrap();
                    assert!(r.status().is_success());
                    let _ = r.bytes().await.unwrap();
                    out.push(t.elapsed());
                }
                out
            });
        }
        let mut all = Vec::new();
        while let Some(r) = tasks.join_next().await {
            all.extend(r.unwrap());
        }
        all.sort();
        all
    });
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_secs_f64() * 1000.0;
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
        "server RSS after the API load".into(),
        format!("{:.0} MiB", rss_mib(pid)),
        "< 150 MiB".into(),
    ));
    let _ = &s.data;
}

fn consoles(m: usize, table: &mut Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let s = setup(dir.path(), m, true, "[server]\nsweep-interval = \"0s\"\nconsole-logging = true\n");
    let pid = s.server.0.id();
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

fn du(p: &Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => n += du(&e.path()),
                Ok(m) => n += m.len(),
                Err(_) => {}
            }
        }
    }
    n
}
