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

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use lifeline_sim::{BmcSpec, EndpointKind, Fleet, FleetSpec, GpuSpec, PortPlan, ServerSpec, SimOptions};

const PASSWORD: &str = "bench-pass";
/// BMCs per simulator process (each is a TCP and a UDP socket; RLIMIT_NOFILE is 20,000 here).
const PER_SIM: usize = 5_000;

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

/// `sim FIRST COUNT ENDPOINTS`: serve BMCs FIRST..FIRST+COUNT until killed.
fn role_sim() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (first, n): (usize, usize) = (a[0].parse().expect("FIRST"), a[1].parse().expect("COUNT"));
    let endpoints = PathBuf::from(&a[2]);
    rt().block_on(async move {
        let servers = (first..first + n)
            .map(|i| ServerSpec {
                name: format!("node-{i:05}"),
                role: "head-node".into(),
                bmc: BmcSpec {
                    address: std::net::IpAddr::V4(std::net::Ipv4Addr::new(
                        127,
                        32,
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
        let opts = SimOptions { ports: PortPlan::Offset(21000), time_scale: 0.02, ..SimOptions::default() };
        let fleet = Fleet::start(spec, opts).await.expect("the simulated fleet starts");
        let json = serde_json::to_string(fleet.endpoints()).expect("endpoints serialise");
        let tmp = endpoints.with_extension("tmp");
        std::fs::write(&tmp, json).expect("write endpoints");
        std::fs::rename(&tmp, &endpoints).expect("publish endpoints");
        std::future::pending::<()>().await;
    });
}

/// `serve CONFIG INVENTORY DATA LISTEN DATABASE_URL`.
fn role_serve() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let opts = lifeline_server::ServeOptions {
        settings: lifeline_engine::Settings {
            config: Some(a[0].clone().into()),
            inventory: Some(a[1].clone().into()),
            data_dir: Some(a[2].clone().into()),
            database_url: Some(a[4].clone()),
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

fn spawn_role(role: &str, args: &[String]) -> Killed {
    let exe = std::env::current_exe().expect("current exe");
    let script = "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec \"$0\" \"$@\"";
    Killed(
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(exe)
            .args(args)
            .env("LIFELINE_BENCH_ROLE", role)
            .env("LIFELINE_BMC_PASSWORD", PASSWORD)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("spawn role"),
    )
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

fn metric(url: &str, name: &str) -> Option<f64> {
    let body = http_get(&format!("{url}/metrics"), None).ok()?;
    body.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < within, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Starts the simulators and writes the inventory; returns them and the device count.
fn fleet(dir: &Path, n: usize) -> (Vec<Killed>, PathBuf) {
    let t = Instant::now();
    let mut sims = Vec::new();
    let mut eps: Vec<lifeline_sim::Endpoint> = Vec::new();
    for (k, first) in (0..n).step_by(PER_SIM).enumerate() {
        let endpoints = dir.join(format!("endpoints-{k}.json"));
        let count = PER_SIM.min(n - first);
        sims.push(spawn_role(
            "sim",
            &[first.to_string(), count.to_string(), endpoints.display().to_string()],
        ));
        wait_for("the simulator", Duration::from_secs(900), || endpoints.exists());
        let text = std::fs::read_to_string(&endpoints).unwrap();
        eps.extend(serde_json::from_str::<Vec<lifeline_sim::Endpoint>>(&text).unwrap());
    }
    println!("simulators: {n} BMCs in {} process(es), up in {:.1} s", sims.len(), t.elapsed().as_secs_f64());
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
    for i in 0..n {
        let name = format!("node-{i:05}");
        let ipmi = i % 2 == 1;
        let e = by.get(&(name.as_str(), ipmi)).expect("every BMC served");
        let proto = if ipmi { "ipmi" } else { "redfish" };
        inv.push_str(&format!(
            "[[device]]\nname = \"{name}\"\nrole = \"head-node\"\nrack = \"r{}\"\nbmc = {{ address = \"{}\", port = {}, protocol = \"{proto}\" }}\n\n",
            i / 100,
            e.address,
            e.port
        ));
    }
    let path = dir.join("inventory.toml");
    std::fs::write(&path, inv).unwrap();
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
    let token = rt().block_on(async {
        let settings = lifeline_engine::Settings {
            config: Some(cfg.clone()),
            inventory: Some(inventory.to_path_buf()),
            data_dir: Some(data.clone()),
            database_url: Some(db.url.clone()),
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
    let mut servers = Vec::new();
    let mut urls = Vec::new();
    for _ in 0..k {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let listen = format!("127.0.0.1:{port}");
        let args = [cfg.display().to_string(), inventory.display().to_string(), data.display().to_string()];
        let mut args = args.to_vec();
        args.extend([listen.clone(), db.url.clone()]);
        servers.push(spawn_role("serve", &args));
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
        urls.iter().map(|u| metric(u, "lifeline_sweep_duration_ms").unwrap_or(0.0) / 1000.0).collect();
    // Two sweep periods (interval plus the slowest sweep, twice, plus slack): every BMC should be in it.
    // Observations are written when a replica's sweep ends, so one period can fall between two bursts.
    let slowest = durations.iter().copied().fold(0.0, f64::max);
    let window = (Duration::from_secs(every) + Duration::from_secs_f64(slowest)) * 2 + Duration::from_secs(2);
    let t0 = lifeline_store::now_ms();
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
    let (p50, p99) = fleet_list(&urls, &token, n);
    println!("{k} replica(s): fleet list p50 {p50:.0} ms, p99 {p99:.0} ms");
    drop(servers);
    drop(db);
    Round { replicas: k, shares, durations, covered, window: window.as_secs_f64(), p50, p99 }
}

/// 100 clients, 5 requests each, spread round-robin over the replicas.
fn fleet_list(urls: &[String], token: &str, n: usize) -> (f64, f64) {
    let (clients, per) = (100usize, 5usize);
    let lat = rt().block_on(async {
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        let first = c
            .get(format!("{}/api/v1/devices", urls[0]))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v.as_array().map(Vec::len), Some(n), "every device listed");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..clients {
            let (c, url, tok) =
                (c.clone(), format!("{}/api/v1/devices", urls[i % urls.len()]), token.to_owned());
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
    (pct(0.5), pct(0.99))
}
