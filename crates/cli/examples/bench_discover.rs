//! Discovery of a range of simulated BMCs: `lifeline discover RANGE --protocol ipmi` beside FreeIPMI's
//! `ipmiping` over the same range, in the same run, against the same `lifeline sim --nodes N`.
//!
//! The simulator binds the standard ports (623/udp) on 127.10.x.y (one shared socket, routed by
//! destination), so it needs root; ipmiping has no port option. FreeIPMI has no range scanner: the peer
//! is one `ipmiping -c 1 -t T` per address, `--parallel` at once (what an operator's xargs loop does).
//!
//! Default: 500 BMCs in 127.10.0.0/22 (1,024 addresses). `--full`: 10,000 BMCs in 127.10.0.0/16 (65,536
//! addresses). Packets per second count requests sent: lifeline's presence pings plus one capabilities
//! request per pong; ipmiping's one request per address.
//!
//! Run (release binary recommended): `cargo build --release -p lifeline-cli && cargo run --release -p
//! lifeline-cli --example bench_discover -- [--full] [--lifeline target/release/lifeline]`.
//!
//! Goal (a ratio, judged in the same run): lifeline's wall time at most 1/10 of the per-address peer's.

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Args {
    full: bool,
    lifeline: String,
    parallel: usize,
    rate: u32,
    concurrency: usize,
    timeout_s: u32,
    skip_peer: bool,
}

const HELP: &str =
    "bench_discover: `lifeline discover RANGE --protocol ipmi` beside FreeIPMI's ipmiping over the same
range of simulated BMCs (`lifeline sim` on 623/udp: run as root), in the same run; wall time and
requests per second, and the ratio.

usage: bench_discover [--full] [--lifeline PATH] [--parallel N] [--rate PPS] [--concurrency N]
                      [--timeout S] [--skip-peer]

  --full           10,000 BMCs in 127.10.0.0/16 (default: 500 in 127.10.0.0/22)
  --lifeline PATH  the lifeline binary (default target/release/lifeline)
  --parallel N     ipmiping processes at once (default 64)
  --rate PPS       lifeline discover --rate (default 10000)
  --concurrency N  lifeline discover --concurrency (default 64)
  --timeout S      both scanners' per-address timeout in seconds (default 1)
  --skip-peer      lifeline alone
  --help           this text";

/// What `args` found wrong, or that help was asked for.
enum Usage {
    Help,
    Error(String),
}

fn args() -> Result<Args, Usage> {
    let mut a = Args {
        full: false,
        lifeline: "target/release/lifeline".into(),
        parallel: 64,
        rate: 10_000,
        concurrency: 64,
        timeout_s: 1,
        skip_peer: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().ok_or(Usage::Error(format!("{x} needs a value")));
        fn num<T: std::str::FromStr>(flag: &str, v: String) -> Result<T, Usage> {
            match v.parse::<T>() {
                Ok(n) => Ok(n),
                Err(_) => Err(Usage::Error(format!("{flag} takes a positive whole number, not `{v}`"))),
            }
        }
        match x.as_str() {
            "--help" | "-h" => return Err(Usage::Help),
            "--full" => a.full = true,
            "--skip-peer" => a.skip_peer = true,
            "--lifeline" => a.lifeline = val()?,
            "--parallel" => a.parallel = num(&x, val()?)?,
            "--rate" => a.rate = num(&x, val()?)?,
            "--concurrency" => a.concurrency = num(&x, val()?)?,
            "--timeout" => a.timeout_s = num(&x, val()?)?,
            other => return Err(Usage::Error(format!("unknown argument `{other}`"))),
        }
    }
    if a.parallel == 0 || a.rate == 0 || a.concurrency == 0 || a.timeout_s == 0 {
        return Err(Usage::Error("--parallel, --rate, --concurrency and --timeout must be above 0".into()));
    }
    Ok(a)
}

/// The simulator, until dropped.
struct Sim(std::process::Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_sim(a: &Args, nodes: usize, data: &std::path::Path) -> Result<Sim, String> {
    let mut c = Command::new(&a.lifeline)
        .args(["sim", "--nodes", &nodes.to_string(), "--port-offset", "0", "--time-scale", "0.01"])
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", a.lifeline))?;
    let out = c.stdout.take().ok_or("no stdout")?;
    let sim = Sim(c);
    for l in BufReader::new(out).lines() {
        let l = l.map_err(|e| e.to_string())?;
        if l.contains("simulated fleet up") {
            return Ok(sim);
        }
    }
    Err("the simulator exited before it was up (is 623/udp free, and are we root?)".into())
}

struct Run {
    wall: Duration,
    found: usize,
    requests: usize,
}

fn lifeline_run(a: &Args, range: &str, data: &std::path::Path) -> Result<Run, String> {
    let t = Instant::now();
    let o = Command::new(&a.lifeline)
        .args(["discover", range, "--protocol", "ipmi", "--no-identify", "--diff", "--json"])
        .args(["--rate", &a.rate.to_string(), "--concurrency", &a.concurrency.to_string()])
        .args(["--timeout", &a.timeout_s.to_string()])
        .env("LIFELINE_DATA_DIR", data)
        .env_remove("LIFELINE_INVENTORY")
        .output()
        .map_err(|e| e.to_string())?;
    let wall = t.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .map_err(|e| format!("discover output: {e}: {}", String::from_utf8_lossy(&o.stderr)))?;
    let found = v["report"]["found"].as_array().map_or(0, Vec::len);
    let pings = v["report"]["pings_sent"].as_u64().unwrap_or(0) as usize;
    Ok(Run { wall, found, requests: pings + found })
}

fn peer_run(a: &Args, addrs: &[Ipv4Addr]) -> Run {
    let next = Arc::new(AtomicUsize::new(0));
    let found = Arc::new(AtomicUsize::new(0));
    let addrs: Arc<Vec<Ipv4Addr>> = Arc::new(addrs.to_vec());
    let t = Instant::now();
    let workers: Vec<_> = (0..a.parallel)
        .map(|_| {
            let (next, found, addrs) = (next.clone(), found.clone(), addrs.clone());
            let timeout = a.timeout_s.to_string();
            std::thread::spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(ip) = addrs.get(i) else { break };
                    let ok = Command::new("ipmiping")
                        .args(["-c", "1", "-t", &timeout, &ip.to_string()])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .is_ok_and(|s| s.success());
                    if ok {
                        found.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    Run { wall: t.elapsed(), found: found.load(Ordering::Relaxed), requests: addrs.len() }
}

fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(Usage::Help) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(Usage::Error(e)) => {
            eprintln!("bench_discover: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_discover: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    let (nodes, range, prefix) =
        if a.full { (10_000, "127.10.0.0/16", 16) } else { (500, "127.10.0.0/22", 22) };
    let addrs: Vec<Ipv4Addr> = (0..1u32 << (32 - prefix))
        .map(|i| Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 10, 0, 0)) + i))
        .collect();
    let dir = std::env::temp_dir().join(format!("bench-discover-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sim")).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir.join("scan")).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let _sim = start_sim(a, nodes, &dir.join("sim"))?;
    eprintln!("simulator up: {nodes} BMCs in {range} ({:.1} s)", t.elapsed().as_secs_f64());
    let ours = lifeline_run(a, range, &dir.join("scan"))?;
    let peer = (!a.skip_peer).then(|| peer_run(a, &addrs));
    let pps = |r: &Run| r.requests as f64 / r.wall.as_secs_f64();
    println!("| scanner | addresses | BMCs answering | found | wall (s) | requests/s |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| lifeline discover --protocol ipmi --rate {} --concurrency {} --timeout {} | {} | {nodes} | {} | {:.2} | {:.0} |",
        a.rate,
        a.concurrency,
        a.timeout_s,
        addrs.len(),
        ours.found,
        ours.wall.as_secs_f64(),
        pps(&ours)
    );
    if let Some(p) = &peer {
        println!(
            "| ipmiping -c 1 -t {} per address, {} at once | {} | {nodes} | {} | {:.2} | {:.0} |",
            a.timeout_s,
            a.parallel,
            addrs.len(),
            p.found,
            p.wall.as_secs_f64(),
            pps(p)
        );
        println!(
            "ratio (lifeline / ipmiping): wall {:.3}x (goal at --full size: <= 0.1), requests/s {:.1}x",
            ours.wall.as_secs_f64() / p.wall.as_secs_f64(),
            pps(&ours) / pps(p)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if ours.found != nodes {
        return Err(format!("lifeline found {} of {nodes} BMCs", ours.found));
    }
    Ok(())
}
