//! Benchmark: back up N simulated switches (mixed SONiC/EOS/Cumulus/IOS) with a progress bar, and
//! print wall time, per-device latency and peak RSS; beside it, the same client against FakeNOS
//! (if `$OOB_PEERS_RUN/switches/endpoints.txt` exists).
//!
//! `cargo run --release -p lifeline-netcfg --example backup_bench -- [N=500] [CONCURRENCY=64]`
//! Target: 500 switches in <= 30 s on 2 cores. The simulator runs in the same process, so the RSS
//! and CPU figures include both sides.

use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use lifeline_netcfg::BlobStore;
use lifeline_netcfg::backup::{BackupContext, BackupOutcome, BackupTarget, backup_all};
use lifeline_netcfg::index::{MemoryHostKeyPins, MemoryIndex};
use lifeline_netcfg::ssh::{SshAuth, SshTarget, Timeouts, Transport};
use lifeline_sim::switch::{SwitchState, serve};
use lifeline_types::{DeviceName, Platform};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()))
        .map(|kib| kib / 1024.0)
        .unwrap_or(f64::NAN)
}

fn target(name: &str, host: String, port: u16, user: &str, pw: &str, platform: Platform) -> BackupTarget {
    BackupTarget::new(
        SshTarget {
            device: DeviceName::new(name).expect("name"),
            host,
            port,
            username: user.into(),
            auth: SshAuth::Password(pw.into()),
            enable_password: None,
            algorithms: None,
            transport: Transport::Auto,
            timeouts: Timeouts { total: Duration::from_secs(60), ..Timeouts::default() },
        },
        platform,
    )
}

struct Run {
    label: String,
    devices: usize,
    ok: usize,
    failed: usize,
    wall: Duration,
    p50: Duration,
    p99: Duration,
}

async fn run(label: &str, targets: Vec<BackupTarget>, concurrency: usize) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = BackupContext {
        pins: Arc::new(MemoryHostKeyPins::default()),
        index: Arc::new(MemoryIndex::default()),
        blobs: BlobStore::new(dir.path()),
        raw: None,
    };
    let n = targets.len();
    let bar = ProgressBar::new(n as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:40}] {pos}/{len} {per_sec} {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_owned());
    let b2 = bar.clone();
    let start = Instant::now();
    let results = backup_all(&ctx, targets, concurrency, move |r| {
        if let Err(e) = &r.outcome {
            b2.println(format!("FAILED {}: {}", r.device, e.chain()));
        }
        b2.inc(1);
    })
    .await;
    let wall = start.elapsed();
    bar.finish();
    let mut lat: Vec<Duration> = results.iter().map(|r| r.elapsed).collect();
    lat.sort();
    let ok = results.iter().filter(|r| matches!(r.outcome, Ok(BackupOutcome::NewVersion { .. }))).count();
    Run {
        label: label.into(),
        devices: n,
        ok,
        failed: n - ok,
        wall,
        p50: lat.get(n / 2).copied().unwrap_or_default(),
        p99: lat.get(n * 99 / 100).copied().unwrap_or_default(),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(500);
    let concurrency = args.get(1).copied().unwrap_or(64);
    let platforms = [Platform::Sonic, Platform::Eos, Platform::Cumulus, Platform::Ios];

    let mut servers = tokio::task::JoinSet::new();
    let mut targets = Vec::with_capacity(n);
    for i in 0..n {
        let ip = std::net::Ipv4Addr::new(127, 88, (i / 250) as u8, (i % 250 + 1) as u8);
        let l = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind loopback");
        let port = l.local_addr().expect("addr").port();
        let p = platforms[i % platforms.len()];
        let name = format!("leaf{}", i + 1);
        let state = Arc::new(SwitchState::new(&name, p, "leaf", "admin", "bench-pw"));
        servers.spawn(serve(l, state));
        targets.push(target(&name, ip.to_string(), port, "admin", "bench-pw", p));
    }
    let rss_before = peak_rss_mib();
    let mut runs = vec![run("sim", targets, concurrency).await];
    let rss_after = peak_rss_mib();

    // The same client against the real third-party peer, where it is running.
    let run_dir = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    if let Ok(text) = std::fs::read_to_string(format!("{run_dir}/switches/endpoints.txt")) {
        let rows: Vec<Vec<String>> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .filter(|r: &Vec<String>| r.len() >= 6)
            .collect();
        let t: Vec<_> = rows
            .iter()
            .map(|r| {
                let p = match r[5].as_str() {
                    "cisco_ios" => Platform::Ios,
                    "arista_eos" => Platform::Eos,
                    _ => Platform::Sonic,
                };
                target(&r[0], r[1].clone(), r[2].parse().unwrap_or(22), &r[3], &r[4], p)
            })
            .collect();
        runs.push(run("fakenos", t, concurrency).await);
    } else {
        eprintln!("(no FakeNOS endpoints under {run_dir}: peer column skipped)");
    }
    servers.abort_all();

    println!();
    println!("| run     | devices | ok  | failed | wall (s) | devices/s | p50 (ms) | p99 (ms) |");
    println!("|---------|---------|-----|--------|----------|-----------|----------|----------|");
    for r in &runs {
        println!(
            "| {:7} | {:7} | {:3} | {:6} | {:8.2} | {:9.1} | {:8.1} | {:8.1} |",
            r.label,
            r.devices,
            r.ok,
            r.failed,
            r.wall.as_secs_f64(),
            r.devices as f64 / r.wall.as_secs_f64(),
            r.p50.as_secs_f64() * 1e3,
            r.p99.as_secs_f64() * 1e3
        );
    }
    println!();
    println!(
        "peak RSS (sim + client, one process): {rss_after:.1} MiB (after starting {n} sim switches: {rss_before:.1} MiB); concurrency {concurrency}; target: 500 in <= 30 s"
    );
}
