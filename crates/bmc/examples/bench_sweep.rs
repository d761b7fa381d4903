//! Fleet sweep benchmark: Lifeline's IPMI power-status sweep against FreeIPMI `ipmipower` and an `ipmitool`
//! loop, and Lifeline's Redfish health sweep against a Python `requests` thread-pool sweep doing the same
//! requests (`bench_sweep_peer.py`, shipped beside this file), at 0 ms and 200 ms injected BMC latency, all
//! against N simulated BMCs (`lifeline-sim`, Redfish over TLS + IPMI lanplus) in one run.
//!
//! ```text
//! cargo run --release -p lifeline-bmc --example bench_sweep -- [--n 1000] [--fanout F] [--runs 3]
//!     [--ipmitool-n N] [--skip-ipmitool] [--skip-redfish] [--skip-200] [--skip-python] [--base 127.41]
//! ```
//! `--skip-python`: no Python peer rows (each of its runs takes ~40 s of CPU on a shared machine, for
//! comparing two builds of ours back to back).
//! Every contender is a child process run under GNU `time`, ours included (this binary with `--sweep`), so
//! wall, CPU (user + system of the whole process, start-up included) and peak RSS are measured the same way
//! for both sides. The simulator is another child (`--serve`) and is never counted. Each figure is the
//! median of `--runs` runs. Rows:
//! - cold, nothing remembered: a first run ever (asks each BMC for its cipher suites / Redfish root);
//! - cold, discovery remembered: a new process with what an earlier one learnt (the store's
//!   `bmc_discovery` table in `lifeline`; here a JSON file standing in for it);
//! - warm: the second sweep inside one process (suites, paths and SDRs cached; IPMI over kept sessions, as
//!   the server keeps them: `bench_ipmi/kept.rs`; Redfish over kept session tokens), its CPU from
//!   `getrusage(RUSAGE_SELF)` around that sweep only.
//!
//! The fan-out defaults to `lifeline_bmc::fanout_for_fleet(N)` (the whole fleet within the descriptor
//! budget); ipmipower gets `-F 1024` (its maximum), the Python peer 64 threads.
//! Goals (issue 17): IPMI cold wall <= ipmipower's, CPU <= 1/3 of ipmipower's, <= 100 us CPU per BMC; warm
//! CPU <= 1/10 of ipmipower's; Redfish health <= 2 s at 0 ms, <= 1.5 s at 200 ms, every sensor <= 2 s at
//! 0 ms, >= 10x the Python peer.
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_trait::async_trait;
use lifeline_bmc::*;
use lifeline_ipmi::client::Timing;
use lifeline_types::BmcProtocol;

/// The `lifeline` binary's allocator (`lifeline_server::ServerAllocator`, installed in `crates/cli`), so the
/// sweeps measured are the product's: under glibc's malloc a Redfish sweep spent a fifth of its CPU in
/// malloc/free and arena growth (`mprotect`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "bench_ipmi/kept.rs"]
mod ipmi_kept;
#[path = "bench_redfish/rows.rs"]
mod redfish_rows;

#[derive(Clone)]
struct Args {
    n: usize,
    fanout: Option<usize>,
    runs: usize,
    ipmitool_n: Option<usize>,
    skip_ipmitool: bool,
    skip_redfish: bool,
    skip_200: bool,
    skip_python: bool,
    base: (u8, u8),
    serve: bool,
    /// Child mode: `ipmi`, `redfish` or `redfish-all`.
    sweep: Option<String>,
    times: usize,
    memory: Option<PathBuf>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        n: 1000,
        fanout: None,
        runs: 3,
        ipmitool_n: None,
        skip_ipmitool: false,
        skip_redfish: false,
        skip_200: false,
        skip_python: false,
        base: (127, 41),
        serve: false,
        sweep: None,
        times: 1,
        memory: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = |what: &str| it.next().with_context(|| format!("{x} {what}"));
        match x.as_str() {
            "--n" => a.n = val("N")?.parse()?,
            "--fanout" => a.fanout = Some(val("N")?.parse()?),
            "--runs" => a.runs = val("N")?.parse::<usize>()?.max(1),
            "--ipmitool-n" => a.ipmitool_n = Some(val("N")?.parse()?),
            "--skip-ipmitool" => a.skip_ipmitool = true,
            "--skip-redfish" => a.skip_redfish = true,
            "--skip-200" => a.skip_200 = true,
            "--skip-python" => a.skip_python = true,
            "--base" => {
                let v = val("A.B")?;
                let (x, y) = v.split_once('.').context("--base A.B")?;
                a.base = (x.parse()?, y.parse()?);
            }
            "--serve" => a.serve = true,
            "--sweep" => a.sweep = Some(val("KIND")?),
            "--times" => a.times = val("K")?.parse()?,
            "--memory" => a.memory = Some(val("FILE")?.into()),
            other => bail!("unknown argument {other}"),
        }
    }
    if a.base.0 != 127 {
        bail!("--base must be in 127.0.0.0/8");
    }
    Ok(a)
}

fn addr(base: (u8, u8), i: usize) -> Ipv4Addr {
    Ipv4Addr::new(base.0, base.1, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// Ports of every simulated BMC (they share one socket per protocol). `BENCH_PORT_OFFSET` moves them when
/// another simulator holds these.
fn ports() -> (u16, u16) {
    let off: u16 = std::env::var("BENCH_PORT_OFFSET").ok().and_then(|v| v.parse().ok()).unwrap_or(20000);
    (443 + off, 623 + off)
}

// ---------------------------------------------------------------------------------------------------------
// The simulator child.

async fn serve(a: &Args) -> anyhow::Result<()> {
    use lifeline_sim::{BmcSpec, Fault, Fleet, FleetSpec, GpuSpec, RedfishFlavor, ServerSpec, SimOptions};
    let (rf_port, ipmi_port) = ports();
    let servers: Vec<ServerSpec> = (0..a.n)
        .map(|i| ServerSpec {
            name: format!("bench-{:05}", i + 1),
            role: "gpu-node".into(),
            bmc: BmcSpec {
                address: IpAddr::V4(addr(a.base, i)),
                redfish_port: Some(rf_port),
                ipmi_port: Some(ipmi_port),
                username: "admin".into(),
                password: "password".into(),
                flavor: RedfishFlavor::ALL[i % RedfishFlavor::ALL.len()],
                cipher_suites: vec![],
                session_limit: None,
                replay: None,
            },
            gpus: GpuSpec::default(),
            rails: vec![],
            powered_on: true,
        })
        .collect();
    let opts = SimOptions { time_scale: 0.01, ..SimOptions::for_tests() };
    let fleet = Fleet::start(FleetSpec { servers: servers.clone(), switches: vec![] }, opts).await?;
    println!("READY");
    std::io::stdout().flush()?;
    let mut lines = BufReader::new(std::io::stdin()).lines();
    while let Some(Ok(l)) = tokio::task::block_in_place(|| lines.next()) {
        let fault = match l.trim() {
            "clear" => None,
            f => Some(f.parse::<Fault>().map_err(|e| anyhow::anyhow!("{e}"))?),
        };
        for s in &servers {
            let _ = match &fault {
                Some(f) => fleet.devices().inject(&s.name, f).await,
                None => fleet.devices().clear(&s.name).await,
            };
        }
        println!("OK");
        std::io::stdout().flush()?;
    }
    fleet.shutdown().await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Our sweep, as a child process.

/// One BMC's discovery in the file: (IPMI suite, (Redfish URL, root, system path)).
type Saved = (Option<u8>, Option<(String, serde_json::Value, Option<String>)>);

/// Stands in for the store's `bmc_discovery` table across processes: read whole at start, written at exit.
#[derive(Default)]
struct FileMemory {
    inner: MemoryProtocolMemory,
}

impl FileMemory {
    async fn load(path: &Path) -> FileMemory {
        let m = FileMemory::default();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let v: HashMap<String, Saved> = serde_json::from_str(&text).unwrap_or_default();
        for (bmc, (suite, rf)) in v {
            let redfish = rf.map(|(url, root, system)| RedfishDiscovery { url, root, system });
            let _ = m.inner.remember_discovery(&bmc, &Discovery { ipmi_suite: suite, redfish }).await;
        }
        redfish_rows::load_resources(&m.inner, path).await;
        m
    }
    async fn save(&self, path: &Path) -> anyhow::Result<()> {
        let all = self.inner.recall_discoveries().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let v: HashMap<_, _> = all
            .into_iter()
            .map(|(k, d)| (k, (d.ipmi_suite, d.redfish.map(|r| (r.url, r.root, r.system)))))
            .collect();
        std::fs::write(path, serde_json::to_string(&v)?)?;
        redfish_rows::save_resources(&self.inner, path).await
    }
}

#[async_trait]
impl ProtocolMemory for FileMemory {
    async fn recall(&self, bmc: &str) -> Result<Option<BmcProtocol>, BoxError> {
        self.inner.recall(bmc).await
    }
    async fn remember(&self, bmc: &str, p: BmcProtocol) -> Result<(), BoxError> {
        self.inner.remember(bmc, p).await
    }
    async fn forget(&self, bmc: &str) -> Result<(), BoxError> {
        self.inner.forget(bmc).await
    }
    async fn recall_discoveries(&self) -> Result<HashMap<String, Discovery>, BoxError> {
        self.inner.recall_discoveries().await
    }
    async fn remember_discovery(&self, bmc: &str, d: &Discovery) -> Result<(), BoxError> {
        self.inner.remember_discovery(bmc, d).await
    }
    async fn recall_redfish_resources(&self) -> Result<HashMap<String, RedfishResourcePaths>, BoxError> {
        self.inner.recall_redfish_resources().await
    }
    async fn remember_redfish_resources(&self, bmc: &str, r: &RedfishResourcePaths) -> Result<(), BoxError> {
        self.inner.remember_redfish_resources(bmc, r).await
    }
}

fn targets(a: &Args, protocol: BmcProtocol) -> Vec<BmcTarget> {
    let (rf_port, ipmi_port) = ports();
    (0..a.n)
        .map(|i| {
            let name = format!("bench-{:05}", i + 1);
            let mut t = BmcTarget::new(name, addr(a.base, i).to_string(), protocol, "admin", "password");
            t.redfish_port = rf_port;
            t.ipmi_port = ipmi_port;
            t
        })
        .collect()
}

/// CPU seconds (user + system) of this whole process, microsecond resolution.
fn self_cpu() -> f64 {
    cpu_of(nix::sys::resource::UsageWho::RUSAGE_SELF)
}

/// CPU seconds (user + system) of `who`, microsecond resolution.
fn cpu_of(who: nix::sys::resource::UsageWho) -> f64 {
    nix::sys::resource::getrusage(who)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

/// `--sweep KIND`: sweep `--times` times, print `SWEEP k ok wall cpu` per sweep, save the memory.
async fn sweep_child(a: &Args, kind: &str) -> anyhow::Result<()> {
    let memory = Arc::new(match &a.memory {
        Some(p) => FileMemory::load(p).await,
        None => FileMemory::default(),
    });
    let fanout = a.fanout.unwrap_or_else(|| fanout_for_fleet(a.n));
    let pins = Arc::new(redfish_rows::FilePins::load(a.memory.as_deref()));
    let opts = BmcOptions {
        fanout,
        tls: TlsPolicy::Pin(pins.clone()),
        ipmi_timing: Timing {
            attempt_timeout: Duration::from_millis(1000),
            max_attempt_timeout: Duration::from_secs(2),
            attempts: 4,
        },
        kept: ipmi_kept::options_for(a.times),
        ..BmcOptions::default()
    };
    let opts = redfish_rows::client_options(opts);
    let kept = opts.kept.clone();
    let pool = BmcPool::with_memory(opts, Arc::new(MemoryAuditSink::new()), memory.clone());
    let (protocol, sweep) = match kind {
        "ipmi" => (
            BmcProtocol::Ipmi,
            SweepOptions {
                health: false,
                events: 0,
                per_bmc_timeout: Duration::from_secs(60),
                ..Default::default()
            },
        ),
        kind @ ("redfish" | "redfish-all") => {
            (BmcProtocol::Redfish, redfish_rows::sweep_options(kind).context("sweep options")?)
        }
        other => bail!("unknown sweep {other}"),
    };
    for k in 0..a.times.max(1) {
        let ts = targets(a, protocol);
        let (cpu0, t0) = (self_cpu(), Instant::now());
        let rows = pool.sweep(ts, &sweep, |_, _| {}).await;
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), self_cpu() - cpu0);
        let ok = rows.iter().filter(|r| r.ok()).count();
        println!("SWEEP {k} {ok} {wall:.4} {cpu:.4}");
        if let Some(bad) = rows.iter().find(|r| !r.ok()) {
            println!("FIRST_ERROR {}: {}", bad.name, bad.errors.join("; "));
        }
    }
    ipmi_kept::finish(kept).await;
    if let Some(p) = &a.memory {
        memory.save(p).await?;
        pins.save(p)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Measuring.

#[derive(Clone)]
struct Measured {
    label: String,
    ok: usize,
    of: usize,
    wall: f64,
    cpu: f64,
    rss: f64,
    note: String,
}

/// Runs `argv` under GNU time; returns (stdout, wall, cpu, maxrss MiB). CPU is the children's
/// `getrusage` delta around the run, in microseconds (GNU time prints it to 10 ms, which at 1,000 BMCs is
/// 10 us per BMC); it includes GNU time's own start-up (well under a millisecond), on every side alike.
/// Runs are sequential and the simulator child is only reaped at the end, so the delta is this run's.
fn timed(argv: &[String]) -> anyhow::Result<(String, f64, f64, f64)> {
    use nix::sys::resource::UsageWho::RUSAGE_CHILDREN;
    let before = cpu_of(RUSAGE_CHILDREN);
    let t0 = Instant::now();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "LIFELINE_TIME %M"])
        .args(argv)
        .stdin(Stdio::null())
        .output()
        .context("run /usr/bin/time (apt-get install time)")?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_of(RUSAGE_CHILDREN) - before;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().rev().find(|l| l.starts_with("LIFELINE_TIME")).context("no time line")?;
    let rss: f64 = line.split_whitespace().nth(1).and_then(|x| x.parse().ok()).context("no maxrss")?;
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), wall, cpu, rss / 1024.0))
}

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// The median (by wall time) of `runs` runs of `f`.
fn median(runs: usize, mut f: impl FnMut() -> anyhow::Result<Measured>) -> anyhow::Result<Measured> {
    let mut all = Vec::new();
    for _ in 0..runs {
        all.push(f()?);
    }
    all.sort_by(|x, y| x.wall.total_cmp(&y.wall));
    Ok(all.swap_remove(all.len() / 2))
}

fn sweep_lines(out: &str) -> Vec<(usize, f64, f64)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("SWEEP "))
        .filter_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            Some((v.get(1)?.parse().ok()?, v.get(2)?.parse().ok()?, v.get(3)?.parse().ok()?))
        })
        .collect()
}

/// One of our sweeps in a child process; `memory`: start from (and update) this discovery file.
fn ours(a: &Args, kind: &str, memory: Option<&Path>, label: &str) -> anyhow::Result<Measured> {
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let mut argv = vec![exe, "--sweep".into(), kind.into(), "--n".into(), a.n.to_string()];
    argv.extend(["--base".into(), format!("{}.{}", a.base.0, a.base.1)]);
    if let Some(f) = a.fanout {
        argv.extend(["--fanout".into(), f.to_string()]);
    }
    if let Some(m) = memory {
        argv.extend(["--memory".into(), m.to_string_lossy().into_owned()]);
    }
    let (out, wall, cpu, rss) = timed(&argv)?;
    let ok = sweep_lines(&out).first().map_or(0, |s| s.0);
    let note = out.lines().find_map(|l| l.strip_prefix("FIRST_ERROR ")).unwrap_or("").to_owned();
    Ok(Measured { label: label.into(), ok, of: a.n, wall, cpu, rss, note })
}

/// Two sweeps in one child: the second one's wall and CPU (getrusage of the process around it).
fn ours_warm(a: &Args, kind: &str, memory: &Path, label: &str) -> anyhow::Result<Measured> {
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let mut argv = vec![exe, "--sweep".into(), kind.into(), "--n".into(), a.n.to_string(), "--times".into()];
    argv.extend(["2".into(), "--base".into(), format!("{}.{}", a.base.0, a.base.1)]);
    argv.extend(["--memory".into(), memory.to_string_lossy().into_owned()]);
    if let Some(f) = a.fanout {
        argv.extend(["--fanout".into(), f.to_string()]);
    }
    let (out, _, _, rss) = timed(&argv)?;
    let s = sweep_lines(&out);
    let (ok, wall, cpu) = s.get(1).copied().context("no second sweep")?;
    let note = out.lines().find_map(|l| l.strip_prefix("KEPT ")).unwrap_or("").to_owned();
    Ok(Measured { label: label.into(), ok, of: a.n, wall, cpu, rss, note })
}

/// BMCs `from..to` as FreeIPMI host ranges.
fn hostlist(base: (u8, u8), from: usize, to: usize, port: u16) -> String {
    let mut parts = Vec::new();
    let mut i = from;
    while i < to {
        let block = i / 250;
        let last = ((block + 1) * 250).min(to);
        let (a, b) = (i % 250 + 1, (last - 1) % 250 + 1);
        // The port goes on every range: FreeIPMI applies `:PORT` to the host it follows, not to the list.
        let port = if port == 623 { String::new() } else { format!(":{port}") };
        parts.push(format!("{}.{}.{block}.[{a}-{b}]{port}", base.0, base.1));
        i = last;
    }
    parts.join(",")
}

/// ipmipower opens a socket per host and stops with `ipmi_get_random: Bad file descriptor` past about
/// 1,000 hosts in one run, so larger fleets are swept the way an operator would: runs of 1,000 in a row.
const IPMIPOWER_CHUNK: usize = 1000;

fn ipmipower(a: &Args) -> anyhow::Result<Measured> {
    let (_, ipmi_port) = ports();
    let mut cmds = Vec::new();
    let mut start = 0;
    while start < a.n {
        let end = (start + IPMIPOWER_CHUNK).min(a.n);
        let hosts = hostlist(a.base, start, end, ipmi_port);
        cmds.push(format!(
            "ipmipower -h '{hosts}' -u admin -p password -D LAN_2_0 -W opensesspriv --stat -F 1024"
        ));
        start = end;
    }
    let (out, wall, cpu, rss) = timed(&sh(&cmds.join("; ")))?;
    let ok =
        out.lines().filter(|l| l.trim_end().ends_with(": on") || l.trim_end().ends_with(": off")).count();
    let note = if ok < a.n {
        out.lines().find(|l| !l.ends_with(": on")).unwrap_or("").to_owned()
    } else {
        String::new()
    };
    let label = if cmds.len() > 1 {
        format!("FreeIPMI ipmipower -F 1024, {} runs of {IPMIPOWER_CHUNK} hosts in a row", cmds.len())
    } else {
        "FreeIPMI ipmipower -F 1024".into()
    };
    Ok(Measured { label, ok, of: a.n, wall, cpu, rss, note })
}

fn send(child_in: &mut std::process::ChildStdin, out: &mut impl BufRead, cmd: &str) -> anyhow::Result<()> {
    writeln!(child_in, "{cmd}")?;
    child_in.flush()?;
    let mut l = String::new();
    out.read_line(&mut l)?;
    if l.trim() != "OK" {
        bail!("sim did not acknowledge `{cmd}`: {l}");
    }
    Ok(())
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

struct Table(Mutex<Vec<(String, Measured, String)>>);

impl Table {
    fn add(&self, workload: &str, m: &Measured, cmp: String) {
        println!(
            "  {workload} | {} | {}/{} ok | {:.3} s | CPU {:.3} s | {:.1} MiB | {cmp}",
            m.label, m.ok, m.of, m.wall, m.cpu, m.rss
        );
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push((workload.into(), m.clone(), cmp));
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    // As `lifeline`'s main does (no transparent huge pages): the sweep child measures the CLI's setup.
    let _ = nix::sys::prctl::set_thp_disable(true);
    let a = args()?;
    if a.serve {
        return serve(&a).await;
    }
    if let Some(kind) = a.sweep.clone() {
        return sweep_child(&a, &kind).await;
    }
    raise_nofile_limit();
    let exe = std::env::current_exe()?;
    let t0 = Instant::now();
    let mut child = Command::new(exe)
        .args(["--serve", "--n", &a.n.to_string(), "--base", &format!("{}.{}", a.base.0, a.base.1)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut child_in = child.stdin.take().context("stdin")?;
    let mut child_out = BufReader::new(child.stdout.take().context("stdout")?);
    let mut l = String::new();
    child_out.read_line(&mut l)?;
    if l.trim() != "READY" {
        bail!("simulator did not start: {l}");
    }
    let fanout = a.fanout.unwrap_or_else(|| fanout_for_fleet(a.n));
    println!(
        "simulated fleet: {} BMCs (Redfish TLS + IPMI) in a child process, started in {:.1} s; our fan-out {fanout}",
        a.n,
        t0.elapsed().as_secs_f64()
    );
    let dir = tempfile::tempdir()?;
    let table = Table(Mutex::new(Vec::new()));
    let runs = a.runs;

    // --- IPMI power status ---
    let mem = dir.path().join("ipmi-discovery.json");
    let fresh = dir.path().join("fresh.json");
    let cold = median(runs, || {
        let _ = std::fs::remove_file(&fresh);
        ours(&a, "ipmi", Some(&fresh), "Lifeline, cold process, nothing remembered")
    })?;
    ours(&a, "ipmi", Some(&mem), "prime")?;
    let remembered =
        median(runs, || ours(&a, "ipmi", Some(&mem), "Lifeline, cold process, discovery remembered"))?;
    let warm = median(runs, || ours_warm(&a, "ipmi", &mem, "Lifeline, warm (2nd sweep over kept sessions)"))?;
    let peer = median(runs, || ipmipower(&a));
    match &peer {
        Ok(p) => {
            for m in [&cold, &remembered] {
                let us_per_bmc = m.cpu / a.n as f64 * 1e6;
                table.add(
                    "IPMI power status",
                    m,
                    format!(
                        "wall {:.2}x ipmipower's ({}), CPU {:.3}x ipmipower's (goal <= 0.333: {}), {us_per_bmc:.0} us CPU/BMC (goal <= 100: {})",
                        m.wall / p.wall,
                        met(m.wall <= p.wall),
                        m.cpu / p.cpu,
                        met(m.cpu <= p.cpu / 3.0),
                        met(us_per_bmc <= 100.0)
                    ),
                );
            }
            ipmi_kept::add_warm_row(&table, &warm, p, a.n);
            table.add("IPMI power status", p, "the peer".into());
        }
        Err(e) => println!("ipmipower not measured: {e:#}"),
    }
    if !a.skip_ipmitool {
        let (_, ipmi_port) = ports();
        let m = a.ipmitool_n.unwrap_or(50).min(a.n);
        let list: Vec<String> = (0..m).map(|i| addr(a.base, i).to_string()).collect();
        let script = format!(
            "for h in {}; do ipmitool -I lanplus -C 3 -H $h -p {ipmi_port} -U admin -P password chassis power status; done",
            list.join(" ")
        );
        let (out, wall, cpu, rss) = timed(&sh(&script))?;
        let ok = out.lines().filter(|l| l.starts_with("Chassis Power is")).count();
        let scale = a.n as f64 / m as f64;
        let r = Measured {
            label: format!("ipmitool loop ({m} BMCs measured, scaled x{scale:.0})"),
            ok: (ok as f64 * scale).round() as usize,
            of: a.n,
            wall: wall * scale,
            cpu: cpu * scale,
            rss,
            note: String::new(),
        };
        table.add("IPMI power status", &r, format!("{:.0}x Lifeline's cold wall", r.wall / cold.wall));
    }

    // --- Redfish health (power + rollup + events) and every sensor ---
    if !a.skip_redfish {
        redfish_rows::rows(&a, &mut child_in, &mut child_out, &table, dir.path())?;
    }

    println!(
        "\n### Fleet sweep of {} simulated BMCs (median of {runs}; every contender a child process under GNU time)\n",
        a.n
    );
    println!("| workload | contender | BMCs ok | wall s | CPU s | peak RSS MiB | vs peer / goal |");
    println!("|---|---|---|---|---|---|---|");
    let rows = table.0.into_inner().unwrap_or_else(|p| p.into_inner());
    for (w, m, cmp) in &rows {
        println!(
            "| {w} | {} | {}/{} | {:.3} | {:.3} | {:.1} | {cmp} |",
            m.label, m.ok, m.of, m.wall, m.cpu, m.rss
        );
    }
    for (_, m, _) in rows.iter().filter(|(_, m, _)| !m.note.is_empty()) {
        println!("\n_{}_: {}", m.label, m.note);
    }
    println!(
        "\nCPU: user + system of the whole child process (start-up included), the children's getrusage delta \
         around each run in microseconds, both sides (peak RSS from GNU time); warm \
         rows: getrusage(RUSAGE_SELF) around the second sweep only (over kept sessions, as the server sweeps: \
         IPMI sessions, Redfish session tokens). \
         The simulator runs in its own process and is not counted."
    );
    drop(child_in);
    let _ = child.wait();
    Ok(())
}
