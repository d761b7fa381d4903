//! Benchmark: N consoles logged always-on by one console manager over real IPMI SOL, beside a peer from
//! the same run (LLNL ConMan, when installed).
//!
//! ```text
//! cargo run --release -p lifeline-console --example bench_consoles -- [CONSOLES] [SECONDS] [LINES_PER_SEC] [--no-peer]
//!   CONSOLES       simulated BMCs, one always-on console each (default 1000)
//!   SECONDS        measured window, after every console is up and printing (default 15)
//!   LINES_PER_SEC  lines (~64 bytes) each simulated host prints per second (default 5)
//! ```
//! The goal (the server issue's): 1,000 consoles logged always-on under 256 MiB and under one core.
//!
//! How: this binary starts itself again as the simulator (`sim_role`, a separate process, so the
//! figures below are the manager's own): N BMCs speaking lanplus + SOL on 127.47.x.y:623. This process
//! then runs `lifeline-console`'s manager with one `SolTransport` per BMC, pinned (`start`, as the server
//! does for every console), logging every byte. The simulator makes every host print at the given rate;
//! over the window the bench reads the manager's CPU (`/proc/<pid>/stat`, every thread) and RSS, and
//! times keystroke echoes: a viewer on each of the first 100 consoles writes `#`, the simulated host
//! echoes it (login prompt), and the echo comes back through SOL and the manager. Then the manager is
//! shut down (its SOL sessions closed) and ConMan (`conmand`) takes the same consoles over SOL through
//! FreeIPMI's libipmiconsole, measured the same way, its echoes through `conman -j` clients.
//!
//! The simulator serves port 623 (ConMan's IPMI consoles cannot be given another port) when run as root,
//! else 24623 and ours alone. RLIMIT_NOFILE: the soft limit is raised to the hard one (children inherit it).
#![allow(clippy::print_stdout)]

mod measure;
mod peer;
mod sim_role;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lifeline_console::{
    AttachOptions, ConsoleManager, DirLogIndex, ManagerConfig, SolTransport, Viewer, ViewerEvent, WriteMode,
};
use lifeline_ipmi::ClientConfig;
use lifeline_sim::{Endpoint, EndpointKind};
use measure::{cpu_seconds, latency_summary, mib, status_field};

/// Consoles that carry an echo viewer.
const ECHO_CONSOLES: usize = 100;
/// The keystroke echoed (never in the simulated hosts' own output).
const KEY: u8 = b'#';
/// Time for output to reach steady state before the window, and for the tail to drain after it.
const SETTLE: Duration = Duration::from_secs(2);

fn usage() -> ! {
    eprintln!(
        "usage: bench_consoles [CONSOLES=1000] [SECONDS=15] [LINES_PER_SEC=5] [--no-peer]\n  \
         CONSOLES: simulated BMCs (a separate simulator process), one always-on SOL console each\n  \
         SECONDS: measured window once every console is up and printing\n  \
         LINES_PER_SEC: ~64-byte lines each simulated host prints per second\n  \
         --no-peer: skip ConMan (run otherwise when `conmand` and `conman` are installed)"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var("LIFELINE_BENCH_ROLE").as_deref() == Ok("sim") {
        sim_role::run(&args);
        return;
    }
    let no_peer = args.iter().any(|a| a == "--no-peer");
    let mut nums = Vec::new();
    for a in args.iter().filter(|a| *a != "--no-peer") {
        match a.parse::<u64>() {
            Ok(v) if v > 0 => nums.push(v),
            _ => usage(),
        }
    }
    let n = *nums.first().unwrap_or(&1000) as usize;
    let secs = *nums.get(1).unwrap_or(&15);
    let rate = *nums.get(2).unwrap_or(&5);
    let (soft, hard, now) = measure::raise_nofile();
    println!("RLIMIT_NOFILE: soft {soft}, hard {hard}; soft raised to {now}");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut sim = Sim::start(n, rate, tmp.path());
    let eps: Vec<Endpoint> =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("endpoints.json")).expect("endpoints"))
            .expect("endpoints JSON");
    let consoles: Vec<(String, SocketAddr)> = eps
        .iter()
        .filter(|e| e.kind == EndpointKind::Ipmi)
        .map(|e| (e.name.clone(), SocketAddr::new(e.address, e.port)))
        .collect();
    println!(
        "{} consoles, {rate} lines/s each, {secs} s window; simulator pid {} ({:.0} MiB); load {}",
        consoles.len(),
        sim.pid(),
        mib(status_field(sim.pid(), "VmRSS:")),
        measure::load()
    );

    let ours = rt.block_on(run_ours(&consoles, &mut sim, secs, tmp.path()));
    let peer = if no_peer {
        Err("skipped (--no-peer)".to_owned())
    } else {
        match peer::find() {
            None => Err("not installed (`apt-get install conman`): ours only, against the goal".to_owned()),
            Some(bins) => run_peer(&bins, &consoles, &mut sim, secs, tmp.path()),
        }
    };
    print_table(&ours, peer.as_ref(), n, secs, rate);
    let goal = mib(ours.w.rss_peak_kib.max(ours.hwm_kib)) < 256.0 && ours.w.cores < 1.0;
    println!(
        "goal (1,000 consoles always-on under 256 MiB and under one core): {} at {n} consoles",
        if goal { "met" } else { "MISSED" }
    );
    // A bench that lost consoles, lines or keystrokes measured something else: fail (CI smoke runs).
    let mut broken = Vec::new();
    if ours.attached < consoles.len() {
        broken.push(format!("{} of {} consoles attached", ours.attached, consoles.len()));
    }
    if ours.logged_lines < ours.printed.0 {
        broken.push(format!("{} of {} host lines logged", ours.logged_lines, ours.printed.0));
    }
    if ours.w.echo_errors > 0 || ours.w.echoes.is_empty() {
        broken.push(format!("{} echoes lost, {} came back", ours.w.echo_errors, ours.w.echoes.len()));
    }
    if !broken.is_empty() {
        eprintln!("bench_consoles: ours is broken: {}", broken.join("; "));
        std::process::exit(1);
    }
}

/// The simulator child and its command pipe.
struct Sim {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    fn start(n: usize, rate: u64, dir: &std::path::Path) -> Sim {
        let mut child = Command::new(std::env::current_exe().expect("current exe"))
            .env("LIFELINE_BENCH_ROLE", "sim")
            .args([n.to_string(), rate.to_string()])
            .arg(dir.join("endpoints.json"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the simulator");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut sim = Sim { child, stdin, stdout };
        if sim.read_line() != "ready" {
            eprintln!("bench_consoles: the simulator did not start (its message is above)");
            std::process::exit(1);
        }
        sim
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn read_line(&mut self) -> String {
        let mut s = String::new();
        let _ = self.stdout.read_line(&mut s);
        s.trim().to_owned()
    }

    fn command(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").expect("simulator command");
        self.stdin.flush().expect("simulator command");
        self.read_line()
    }

    /// Stops the hosts' output: (lines, bytes) printed since `start`.
    fn stop(&mut self) -> (u64, u64) {
        let r = self.command("stop");
        let mut it = r.split_whitespace().skip(1).map(|v| v.parse().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    }
}

/// One side's figures.
struct Figures {
    name: String,
    attached: usize,
    attach_secs: f64,
    /// The process before any console (ours only: the peer is a daemon started with its consoles).
    rss_before_kib: Option<u64>,
    rss_idle_kib: u64,
    w: Window,
    hwm_kib: u64,
    /// (lines, bytes) the simulated hosts printed while this side logged them.
    printed: (u64, u64),
    logged_bytes: u64,
    logged_lines: u64,
}

/// What the measured window saw of one process.
struct Window {
    rss_peak_kib: u64,
    cores: f64,
    threads: u64,
    fds: usize,
    echoes: Vec<Duration>,
    echo_errors: usize,
    sim_cores: f64,
}

/// The measured window, the same for both sides: echo rounds (`echo` adds latencies, returns losses)
/// and RSS samples of `pid` until `secs` pass; CPU of `pid` and of the simulator over the window.
fn window(pid: u32, sim_pid: u32, secs: u64, mut echo: impl FnMut(&mut Vec<Duration>) -> usize) -> Window {
    let (cpu0, sim0, t0) = (cpu_seconds(pid), cpu_seconds(sim_pid), Instant::now());
    let (mut echoes, mut echo_errors, mut peak) = (Vec::new(), 0, 0);
    while t0.elapsed() < Duration::from_secs(secs) {
        echo_errors += echo(&mut echoes);
        peak = peak.max(status_field(pid, "VmRSS:"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let wall = t0.elapsed().as_secs_f64();
    Window {
        rss_peak_kib: peak,
        cores: (cpu_seconds(pid) - cpu0) / wall,
        threads: status_field(pid, "Threads:"),
        fds: measure::open_fds(pid),
        echoes,
        echo_errors,
        sim_cores: (cpu_seconds(sim_pid) - sim0) / wall,
    }
}

async fn run_ours(
    consoles: &[(String, SocketAddr)],
    sim: &mut Sim,
    secs: u64,
    dir: &std::path::Path,
) -> Figures {
    let me = std::process::id();
    let cfg = ManagerConfig::new(dir.join("ours"));
    let m = Arc::new(
        ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).expect("manager"),
    );
    let rss0 = status_field(me, "VmRSS:");
    let t = Instant::now();
    for (name, addr) in consoles {
        let client = ClientConfig::new("admin", sim_role::PASSWORD);
        m.add(name, Arc::new(SolTransport::new(name.clone(), *addr, client))).expect("add console");
    }
    // Pinned (always-on) sessions, opened 64 at a time as a server start would.
    let opened = futures::stream::iter(consoles.iter().map(|(name, _)| {
        let m = m.clone();
        async move { m.start(name, false).await.map_err(|e| eprintln!("ours: {name}: {e}")).is_ok() }
    }))
    .buffer_unordered(64)
    .filter(|ok| std::future::ready(*ok))
    .count()
    .await;
    let attach_secs = t.elapsed().as_secs_f64();
    let mut viewers = Vec::new();
    for (name, _) in consoles.iter().take(ECHO_CONSOLES) {
        let o = AttachOptions { who: "bench".into(), mode: WriteMode::Write, steal: false };
        match m.attach(name, o).await {
            Ok((v, _)) => viewers.push(v),
            Err(e) => eprintln!("ours: attach {name}: {e}"),
        }
    }
    let rss_idle = status_field(me, "VmRSS:");
    assert_eq!(sim.command("start"), "started");
    tokio::time::sleep(SETTLE).await;
    let handle = tokio::runtime::Handle::current();
    let w = tokio::task::block_in_place(|| {
        window(me, sim.pid(), secs, |lat| handle.block_on(echo_round(&mut viewers, lat)))
    });
    let printed = sim.stop();
    tokio::time::sleep(SETTLE).await;
    m.flush_logs().await;
    // Our log files are records (timestamp + bytes): the lines are counted in what the log reader gives.
    let (logged_bytes, _) = measure::text_logs(&cfg.log_root(), b"");
    let mut logged_lines = 0;
    for (name, _) in consoles {
        if let Ok(mut r) = m.log(name, None, false) {
            let mut data = Vec::new();
            while let Some(Ok(rec)) = r.next().await {
                data.extend_from_slice(&rec.data);
            }
            logged_lines += measure::occurrences(&data, sim_role::LINE_MARK);
        }
    }
    drop(viewers);
    m.shutdown().await;
    Figures {
        name: "lifeline-console (this process)".into(),
        attached: opened,
        attach_secs,
        rss_before_kib: Some(rss0),
        rss_idle_kib: rss_idle,
        w,
        hwm_kib: status_field(me, "VmHWM:"),
        printed,
        logged_bytes,
        logged_lines,
    }
}

/// Every echo viewer types the key once; returns how many echoes did not come back.
async fn echo_round(viewers: &mut [Viewer], lat: &mut Vec<Duration>) -> usize {
    let mut errors = 0;
    for v in viewers.iter_mut() {
        let t = Instant::now();
        if v.write(&[KEY]).await.is_err() {
            errors += 1;
            continue;
        }
        let got = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match v.recv().await {
                    ViewerEvent::Data(b) if b.contains(&KEY) => return true,
                    ViewerEvent::Closed => return false,
                    _ => {}
                }
            }
        })
        .await;
        match got {
            Ok(true) => lat.push(t.elapsed()),
            _ => errors += 1,
        }
    }
    errors
}

fn run_peer(
    bins: &(std::path::PathBuf, std::path::PathBuf),
    consoles: &[(String, SocketAddr)],
    sim: &mut Sim,
    secs: u64,
    dir: &std::path::Path,
) -> Result<Figures, String> {
    let v4: Vec<(String, std::net::Ipv4Addr)> = consoles
        .iter()
        .filter_map(|(n, a)| match a.ip() {
            IpAddr::V4(ip) if a.port() == 623 => Some((n.clone(), ip)),
            _ => None,
        })
        .collect();
    if v4.len() != consoles.len() {
        return Err("not run: ConMan's IPMI consoles need the simulator on port 623 (run as root)".into());
    }
    let peer_dir = dir.join("conman");
    std::fs::create_dir_all(&peer_dir).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut c = peer::Conman::start(bins, &peer_dir, &v4, sim_role::PASSWORD)?;
    let attached = c.wait_connected(v4.len(), Duration::from_secs(120));
    let attach_secs = t.elapsed().as_secs_f64();
    if attached == 0 {
        return Err(format!("conmand connected no console: {}", c.messages()));
    }
    let mut clients = Vec::new();
    for (name, _) in v4.iter().take(ECHO_CONSOLES) {
        match c.client(name) {
            Ok(cl) => clients.push(cl),
            Err(e) => eprintln!("peer: {e}"),
        }
    }
    let rss_idle = status_field(c.pid, "VmRSS:");
    assert_eq!(sim.command("start"), "started");
    std::thread::sleep(SETTLE);
    let w = window(c.pid, sim.pid(), secs, |lat| {
        let mut errors = 0;
        for cl in clients.iter_mut() {
            match cl.echo(KEY) {
                Ok(d) => lat.push(d),
                Err(_) => errors += 1,
            }
        }
        errors
    });
    let printed = sim.stop();
    std::thread::sleep(SETTLE);
    let hwm = status_field(c.pid, "VmHWM:");
    drop(clients);
    let logs = c.logs.clone();
    drop(c);
    let (logged_bytes, logged_lines) = measure::text_logs(&logs, sim_role::LINE_MARK);
    Ok(Figures {
        name: "ConMan 0.2.7 conmand (libipmiconsole)".into(),
        attached,
        attach_secs,
        rss_before_kib: None,
        rss_idle_kib: rss_idle,
        w,
        hwm_kib: hwm,
        printed,
        logged_bytes,
        logged_lines,
    })
}

fn print_table(ours: &Figures, peer: Result<&Figures, &String>, n: usize, secs: u64, rate: u64) {
    type Num<'a> = Option<&'a dyn Fn(&Figures) -> f64>;
    println!();
    let peer_head = match peer {
        Ok(p) => p.name.clone(),
        Err(why) => format!("peer: {why}"),
    };
    println!(
        "| {n} consoles, {rate} lines/s each, {secs} s | {} | {peer_head} | peer ÷ ours (> 1: ours lower) | goal |",
        ours.name
    );
    println!("|---|---|---|---|---|");
    // `num`: the figure the ratio is taken of (lower is better), where a ratio means something.
    let row = |label: &str, f: &dyn Fn(&Figures) -> String, num: Num<'_>, goal: &str| {
        let (p, ratio) = match (peer, num) {
            (Ok(p), Some(num)) if num(ours) > 0.0 => (f(p), format!("{:.2}", num(p) / num(ours))),
            (Ok(p), _) => (f(p), "–".into()),
            (Err(_), _) => ("–".into(), "–".into()),
        };
        println!("| {label} | {} | {p} | {ratio} | {goal} |", f(ours));
    };
    let attach_secs = |f: &Figures| f.attach_secs;
    row(
        "consoles attached over SOL (ratio: time)",
        &|f| format!("{} in {:.1} s", f.attached, f.attach_secs),
        Some(&attach_secs),
        "",
    );
    let rss = |f: &Figures| {
        let before = f.rss_before_kib.map(|k| format!("{:.1}", mib(k))).unwrap_or_else(|| "–".into());
        format!(
            "{before} / {:.1} / {:.1} / {:.1} MiB",
            mib(f.rss_idle_kib),
            mib(f.w.rss_peak_kib),
            mib(f.hwm_kib)
        )
    };
    let peak = |f: &Figures| f.w.rss_peak_kib as f64;
    row(
        "RSS before consoles / all attached / peak in window / high-water (ratio: peak)",
        &rss,
        Some(&peak),
        "< 256 MiB at 1,000",
    );
    let cores = |f: &Figures| f.w.cores;
    row(
        "CPU over the window (whole process)",
        &|f| format!("{:.3} cores", f.w.cores),
        Some(&cores),
        "< 1 core at 1,000",
    );
    row("threads / open descriptors", &|f| format!("{} / {}", f.w.threads, f.w.fds), None, "");
    row(
        "printed by the hosts (whole run)",
        &|f| format!("{} lines, {:.2} MiB", f.printed.0, f.printed.1 as f64 / 1048576.0),
        None,
        "",
    );
    let logged = |f: &Figures| {
        let pct = if f.printed.0 > 0 { 100.0 * f.logged_lines as f64 / f.printed.0 as f64 } else { 0.0 };
        format!("{} lines ({pct:.1} %), {:.2} MiB on disk", f.logged_lines, f.logged_bytes as f64 / 1048576.0)
    };
    row("host lines logged", &logged, None, "every line");
    let echo = |f: &Figures| {
        let errs = if f.w.echo_errors > 0 { format!(", {} lost", f.w.echo_errors) } else { String::new() };
        format!("{}{errs}", latency_summary(f.w.echoes.clone()))
    };
    let p99 = |f: &Figures| {
        let mut v = f.w.echoes.clone();
        v.sort();
        measure::pct(&v, 0.99).as_secs_f64()
    };
    row("keystroke echo p50 / p99 / max (ratio: p99)", &echo, Some(&p99), "");
    row("simulator CPU meanwhile (not ours)", &|f| format!("{:.3} cores", f.w.sim_cores), None, "");
    println!("load after: {}", measure::load());
}
