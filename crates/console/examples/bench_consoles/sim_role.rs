//! The simulator side of the console bench, run as a child process (`LIFELINE_BENCH_ROLE=sim`) so the
//! manager's CPU and memory figures are its own: `lifeline-sim`'s fleet (the engine of `lifeline sim`),
//! N servers whose BMCs speak IPMI lanplus + SOL on port 623 of their own loopback addresses (port 623
//! because the peer, ConMan, cannot be given another port; 24623 when not root, without the peer), every
//! host printing kernel-log lines at a given rate while told to.
//!
//! Driven over stdin/stdout by the bench: it prints `ready` once every BMC listens; `start` makes every
//! console print RATE lines a second (answered `started`), `stop` ends that (answered
//! `stopped LINES BYTES`: what the hosts printed). End of stdin (the bench is gone) stops the fleet.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lifeline_sim::{Fleet, FleetSpec, Host, PortPlan, ServerSpec, SimOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

pub const PASSWORD: &str = "bench-pass";
/// In every line the hosts print and nowhere else: logged lines are counted by it.
pub const LINE_MARK: &[u8] = b" kernel: eth";

/// The BMC address of console `i`: 127.47.x.y, a block no test and no other bench uses.
pub fn bmc_address(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 47, (i / 250) as u8, (i % 250 + 1) as u8)
}

pub fn console_name(i: usize) -> String {
    format!("node-{i:05}")
}

/// `sim N RATE ENDPOINTS_JSON`.
pub fn run(args: &[String]) {
    let n: usize = args[0].parse().expect("N");
    let rate: u64 = args[1].parse().expect("RATE");
    let endpoints = PathBuf::from(&args[2]);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    rt.block_on(async move {
        let servers = (0..n)
            .map(|i| ServerSpec::bare(console_name(i), IpAddr::V4(bmc_address(i)), "admin", PASSWORD))
            .collect();
        let spec = FleetSpec { servers, switches: Vec::new() };
        // Port 623 for ConMan's sake where it can be bound (root); elsewhere ours alone, on 24623
        // (bench_server and bench_replicas use offsets 20000 and 21000).
        let ports = match PortPlan::auto() {
            PortPlan::Standard => PortPlan::Standard,
            _ => PortPlan::Offset(24000),
        };
        let opts = SimOptions { ports, time_scale: 0.02, ..SimOptions::default() };
        let t = Instant::now();
        let fleet = match Fleet::start(spec, opts).await {
            Ok(f) => f,
            Err(e) => {
                eprintln!("sim: the simulated fleet did not start: {e}");
                std::process::exit(1);
            }
        };
        std::fs::write(&endpoints, serde_json::to_string(fleet.endpoints()).expect("endpoints serialise"))
            .expect("write endpoints");
        let hosts: Vec<Arc<Host>> = (0..n).filter_map(|i| fleet.host(&console_name(i))).collect();
        eprintln!("sim: {n} BMCs up in {:.1} s", t.elapsed().as_secs_f64());
        let mut out = tokio::io::stdout();
        let _ = out.write_all(b"ready\n").await;
        let _ = out.flush().await;

        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut chatter: Option<(CancellationToken, tokio::task::JoinHandle<(u64, u64)>)> = None;
        while let Ok(Some(cmd)) = lines.next_line().await {
            let reply = match cmd.trim() {
                "start" if chatter.is_none() => {
                    let cancel = CancellationToken::new();
                    chatter = Some((cancel.clone(), tokio::spawn(chat(hosts.clone(), rate, cancel))));
                    "started".to_owned()
                }
                "stop" => match chatter.take() {
                    Some((cancel, task)) => {
                        cancel.cancel();
                        let (l, b) = task.await.unwrap_or((0, 0));
                        format!("stopped {l} {b}")
                    }
                    None => "stopped 0 0".to_owned(),
                },
                other => format!("unknown command {other:?}"),
            };
            let _ = out.write_all(format!("{reply}\n").as_bytes()).await;
            let _ = out.flush().await;
        }
        fleet.shutdown().await;
    });
}

/// Every host prints `rate` kernel-log lines a second, spread evenly over time and hosts (a tick every
/// 10 ms writes the lines that are due, round robin), until cancelled. Returns (lines, bytes) printed.
async fn chat(hosts: Vec<Arc<Host>>, rate: u64, cancel: CancellationToken) -> (u64, u64) {
    if hosts.is_empty() {
        return (0, 0);
    }
    let per_sec = hosts.len() as f64 * rate as f64;
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let (mut lines, mut bytes) = (0u64, 0u64);
    let mut next = 0usize;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tick.tick() => {}
        }
        let due = (started.elapsed().as_secs_f64() * per_sec) as u64;
        while lines < due {
            let k = lines;
            lines += 1;
            let h = &hosts[next % hosts.len()];
            next += 1;
            let t = started.elapsed();
            // About 64 bytes, like a busy kernel log; never the bench's echo key ('#').
            let line = format!(
                "[{:>6}.{:06}] {} kernel: eth{} link up, 400G {:>6}\r\n",
                t.as_secs(),
                t.subsec_micros(),
                h.name(),
                k % 8,
                k % 1_000_000
            );
            bytes += line.len() as u64;
            h.console().emit(line.into_bytes());
        }
    }
    (lines, bytes)
}
