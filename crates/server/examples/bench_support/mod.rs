//! The harness the server benchmarks share (`bench_server`, `bench_replicas`, `bench_soak`): the binary
//! plays the simulator and the server as child processes (`LIFELINE_BENCH_ROLE`), so the figures are the
//! server's own; their inventory, a token, the fleet list under 100 clients, and reading a child's RSS
//! and CPU from `/proc`. One copy, so the benchmarks measure the same way.
#![allow(dead_code)] // each benchmark uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use lifeline_sim::{
    BmcSpec, Endpoint, EndpointKind, Fleet, FleetSpec, GpuSpec, PortPlan, ServerSpec, SimOptions,
};

pub const PASSWORD: &str = "bench-pass";

/// The allocator of the `lifeline` binary, so that the figures are the product's (to compare with glibc's
/// malloc, build with these two lines removed: its own account is then in the table).
#[global_allocator]
static GLOBAL: lifeline_server::ServerAllocator = lifeline_server::ServerAllocator;

/// BMCs per simulator process. Above 64 BMCs the simulator shares one socket per port and protocol, so
/// descriptors no longer bound it (RLIMIT_NOFILE is 20,000 here and cannot be raised without
/// CAP_SYS_RESOURCE); larger fleets are still split.
pub const PER_SIM: usize = 10_000;

/// Runs the role named by `LIFELINE_BENCH_ROLE` and returns `true`, or `false` in the orchestrator.
pub fn play_role() -> bool {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match std::env::var("LIFELINE_BENCH_ROLE").as_deref() {
        Ok("sim") => role_sim(),
        Ok("serve") => role_serve(),
        _ => return false,
    }
    true
}

pub fn rt() -> tokio::runtime::Runtime {
    // The stack `lifeline` itself gives its workers (crates/cli/src/main.rs): a debug build's server
    // futures overflow tokio's default 2 MiB (the soak's replicas did).
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(8 * 1024 * 1024)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

// ----------------------------------------------------------------------------------------------------
// Roles

/// Where a benchmark's simulated BMCs live: `127.OCTET.x.y`, ports at `OFFSET` + the standard ones.
#[derive(Debug, Clone, Copy)]
pub struct SimPlace {
    pub octet: u8,
    pub port_offset: u16,
}

/// `sim FIRST COUNT OCTET OFFSET ENDPOINTS`: serve BMCs FIRST..FIRST+COUNT until killed.
fn role_sim() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let first: usize = a[0].parse().expect("FIRST");
    let n: usize = a[1].parse().expect("COUNT");
    let octet: u8 = a[2].parse().expect("OCTET");
    let offset: u16 = a[3].parse().expect("OFFSET");
    let endpoints = PathBuf::from(&a[4]);
    rt().block_on(async move {
        let servers = (first..first + n)
            .map(|i| ServerSpec {
                name: format!("node-{i:05}"),
                role: "head-node".into(),
                bmc: BmcSpec {
                    address: std::net::IpAddr::V4(std::net::Ipv4Addr::new(
                        127,
                        octet,
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
                    replay: None,
                },
                gpus: GpuSpec { count: 0, ..GpuSpec::default() },
                rails: Vec::new(),
                powered_on: true,
            })
            .collect();
        let spec = FleetSpec { servers, switches: Vec::new() };
        let opts = SimOptions { ports: PortPlan::Offset(offset), time_scale: 0.02, ..SimOptions::default() };
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

/// `serve CONFIG INVENTORY DATA LISTEN [DATABASE_URL]`: `lifeline serve --plain-http`.
fn role_serve() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let opts = lifeline_server::ServeOptions {
        settings: lifeline_engine::Settings {
            config: Some(a[0].clone().into()),
            inventory: Some(a[1].clone().into()),
            data_dir: Some(a[2].clone().into()),
            database_url: a.get(4).cloned(),
        },
        listen: Some(a[3].clone()),
        plain_http: true,
        ..Default::default()
    };
    if let Ok(path) = std::env::var("LIFELINE_BENCH_HEAP") {
        std::thread::spawn(move || heap_writer(&PathBuf::from(path)));
    }
    if let Err(e) = rt().block_on(lifeline_server::serve(opts)) {
        eprintln!("serve: {}", lifeline_engine::error_chain(&e));
        std::process::exit(1);
    }
}

/// Starts this binary as `role` with RLIMIT_NOFILE raised. `WRAP` in `envs` (a command with its
/// arguments, e.g. `heaptrack -o FILE`) runs the role under a profiler.
pub fn spawn_role(role: &str, args: &[String], envs: &[(&str, String)]) -> Killed {
    let exe = std::env::current_exe().expect("current exe");
    // Each BMC is a TCP and a UDP socket (the simulator), each logged console one (the server): as many
    // descriptors as the hard limit allows (raising it needs CAP_SYS_RESOURCE). `$WRAP` is unquoted: a
    // command with its arguments, or nothing.
    let script = "ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec $WRAP \"$0\" \"$@\"";
    Killed(
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(exe)
            .args(args)
            .env("WRAP", "")
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .env("LIFELINE_BENCH_ROLE", role)
            .env("LIFELINE_BMC_PASSWORD", PASSWORD)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("spawn role"),
    )
}

/// A child killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Killed {
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// ----------------------------------------------------------------------------------------------------
// The fleet

/// Starts simulators for BMCs `0..n` (in processes of [`PER_SIM`]) and waits for their endpoints.
pub fn start_sims(dir: &Path, n: usize, place: SimPlace) -> (Vec<Killed>, Vec<Endpoint>) {
    let t = Instant::now();
    let mut sims = Vec::new();
    let mut eps: Vec<Endpoint> = Vec::new();
    for (k, first) in (0..n).step_by(PER_SIM).enumerate() {
        let endpoints = dir.join(format!("endpoints-{k}.json"));
        let count = PER_SIM.min(n - first);
        let sim = spawn_role(
            "sim",
            &[
                first.to_string(),
                count.to_string(),
                place.octet.to_string(),
                place.port_offset.to_string(),
                endpoints.display().to_string(),
            ],
            &[],
        );
        wait_for("the simulator", Duration::from_secs(900), || endpoints.exists());
        let text = std::fs::read_to_string(&endpoints).unwrap();
        eps.extend(serde_json::from_str::<Vec<Endpoint>>(&text).unwrap());
        println!("simulator {k}: {count} BMCs (pid {}, RSS {:.0} MiB)", sim.id(), rss_mib(sim.id()));
        sims.push(sim);
    }
    println!("simulators: {n} BMCs in {} process(es), up in {:.1} s", sims.len(), t.elapsed().as_secs_f64());
    (sims, eps)
}

/// The inventory of devices `node-00000`.. over `eps`, 100 per rack: half Redfish, half IPMI (the
/// simulator serves both on every BMC), or only IPMI (consoles). Returns the device names.
pub fn write_inventory(path: &Path, n: usize, eps: &[Endpoint], ipmi_only: bool) -> Vec<String> {
    let mut inv = String::from(
        "[cluster]\nname = \"bench\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n",
    );
    for r in 0..n.div_ceil(100) {
        inv.push_str(&format!("[[rack]]\nname = \"r{r}\"\nsite = \"s\"\n\n"));
    }
    let by: std::collections::HashMap<(&str, bool), &Endpoint> = eps
        .iter()
        .filter(|e| matches!(e.kind, EndpointKind::Redfish | EndpointKind::Ipmi))
        .map(|e| ((e.name.as_str(), e.kind == EndpointKind::Ipmi), e))
        .collect();
    let mut names = Vec::new();
    for i in 0..n {
        let name = format!("node-{i:05}");
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
    std::fs::write(path, inv).unwrap();
    names
}

/// The simulators' control API.
pub fn control_url(eps: &[Endpoint]) -> String {
    eps.iter()
        .find(|e| e.kind == EndpointKind::Control)
        .map(|e| format!("http://{}:{}", e.address, e.port))
        .expect("a control endpoint")
}

/// An operator `bench` and an API token for it, written to the store the server will use.
pub fn bench_token(config: &Path, inventory: &Path, data: &Path, database_url: Option<&str>) -> String {
    rt().block_on(async {
        let settings = lifeline_engine::Settings {
            config: Some(config.to_path_buf()),
            inventory: Some(inventory.to_path_buf()),
            data_dir: Some(data.to_path_buf()),
            database_url: database_url.map(str::to_owned),
        };
        let l = lifeline_engine::Lifeline::new(&settings, lifeline_engine::Identity::new("bench")).unwrap();
        let audit = l.audit().await.unwrap();
        let role = lifeline_server::Role::Operator;
        lifeline_server::accounts::user_add(&l, &audit, "bench", role, "bench password").await.unwrap();
        let t = lifeline_server::accounts::token_create(&l, &audit, "bench", None, None).await.unwrap();
        l.close().await;
        t.token
    })
}

/// A free loopback `ADDR:PORT` for a server to listen on.
pub fn free_listen() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

/// `GET /api/v1/devices` from `clients` concurrent clients, `per` requests each, spread round-robin over
/// `urls`; checks the first answer lists `n` devices and returns every latency, sorted.
pub fn fleet_list(urls: &[String], token: &str, n: usize, clients: usize, per: usize) -> Vec<Duration> {
    rt().block_on(async {
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
        println!("fleet list: {} devices, {} KiB per response", n, first.len() / 1024);
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
    })
}

/// The `p` quantile of sorted latencies, in milliseconds.
pub fn pct_ms(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

// ----------------------------------------------------------------------------------------------------
// Measuring a child

pub fn rss_mib(pid: u32) -> f64 {
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
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0 // fields 14 and 15 of stat; CLK_TCK is 100 on Linux
}

/// Every second, the C allocator's own account (glibc `mallinfo2`) into `path`: `in_use free` in bytes.
/// RSS alone cannot tell live data from memory the allocator holds but no one uses (fragmentation, idle
/// arenas); this can. Zero under another global allocator.
#[allow(unsafe_code)] // the one C call; a benchmark's instrument, not the product
fn heap_writer(path: &Path) {
    loop {
        // SAFETY: mallinfo2 takes no arguments and only reads the allocator's counters.
        let mi = unsafe { libc::mallinfo2() };
        let in_use = mi.uordblks + mi.hblkhd;
        let free = mi.fordblks;
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, format!("{in_use} {free}")).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The server's heap as its allocator counts it: (MiB in use, MiB free inside the heap).
pub fn heap_mib(path: &Path) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<f64>().ok());
    let (a, b) = (it.next()??, it.next()??);
    Some((a / 1048576.0, b / 1048576.0))
}

pub fn metric(url: &str, name: &str) -> Option<f64> {
    let body = http_get(&format!("{url}/metrics"), None).ok()?;
    body.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .reduce(|a, b| a + b)
}

pub fn http_get(url: &str, token: Option<&str>) -> Result<String, String> {
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

pub fn wait_for(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < within, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Bytes under `p`.
pub fn du(p: &Path) -> u64 {
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
