//! Benchmark: N simulated consoles logged by one manager, plus echo latency through the manager.
//!
//! `cargo run --release -p lifeline-console --example bench_consoles -- [CONSOLES] [SECONDS] [LINES_PER_SEC_PER_CONSOLE]`
//! (defaults 1000, 10, 5). Each console is an in-memory line whose "host" prints a 64-byte line at
//! the given rate; the manager keeps every console's session open (as the server does) and logs every
//! byte to rotating files in a temp dir. Then 100 consoles echo keys back and the round trip
//! writer -> manager -> line -> host -> manager -> viewer is timed. The simulated hosts run in this
//! process too, so the CPU figure includes them (an upper bound for the manager's own cost).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lifeline_console::{
    AttachOptions, ConsoleManager, DirLogIndex, HostInput, ManagerConfig, ViewerEvent, WriteMode, memory_line,
};

fn proc_status(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds of this process (clock ticks of 1/100 s on Linux).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn pct(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = *args.first().unwrap_or(&1000) as usize;
    let secs = *args.get(1).unwrap_or(&10);
    let rate = (*args.get(2).unwrap_or(&5)).max(1);
    let dir = tempfile::tempdir()?;
    let mut cfg = ManagerConfig::new(dir.path());
    cfg.rotate_bytes = 1 << 20;
    cfg.keep_files = 4;
    let m = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root())))?;
    let rss_before = proc_status("VmRSS:");

    let mut hosts = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("sw{i:04}");
        let (t, host) = memory_line(&name, 256);
        m.add(&name, Arc::new(t))?;
        m.start(&name, false).await?;
        hosts.push(host);
    }
    let t0 = Instant::now();
    let cpu0 = cpu_seconds();
    // Producers: one task per console printing 64-byte lines.
    let mut producers = tokio::task::JoinSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut echo_hosts = Vec::new();
    for (i, host) in hosts.into_iter().enumerate() {
        if i < 100 {
            echo_hosts.push(host);
            continue;
        }
        let w = host.writer();
        producers.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
            let mut k = 0u64;
            let mut sent = 0u64;
            while tokio::time::Instant::now() < deadline {
                tick.tick().await;
                let line = format!("[{k:>10}.000000] sw{i:04} kernel: eth{} link up, 400G .....\r\n", k % 64);
                if w.write(line.into_bytes()) {
                    sent += 64;
                }
                k += 1;
            }
            drop(host);
            sent
        });
    }
    // Echo consoles: the host echoes every key back.
    let mut echoers = tokio::task::JoinSet::new();
    for mut h in echo_hosts {
        echoers.spawn(async move {
            while let Some(i) = h.recv_input().await {
                if let HostInput::Data(d) = i {
                    h.write(d);
                }
            }
        });
    }
    let mut viewers = Vec::new();
    for i in 0..100.min(n) {
        let (v, _) = m
            .attach(
                &format!("sw{i:04}"),
                AttachOptions { who: "bench".into(), mode: WriteMode::Write, steal: false },
            )
            .await?;
        viewers.push(v);
    }
    // Echo rounds while the others are logging.
    let mut lat = Vec::new();
    let mut peak_rss = 0;
    while tokio::time::Instant::now() < deadline {
        for v in viewers.iter_mut() {
            let start = Instant::now();
            v.write(b"x").await?;
            loop {
                match tokio::time::timeout(Duration::from_secs(5), v.recv()).await {
                    Ok(ViewerEvent::Data(b)) if b.as_ref() == b"x" => break,
                    Ok(_) => continue,
                    Err(_) => anyhow::bail!("echo lost"),
                }
            }
            lat.push(start.elapsed());
        }
        peak_rss = peak_rss.max(proc_status("VmRSS:"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut bytes = 0u64;
    while let Some(r) = producers.join_next().await {
        bytes += r?;
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    m.flush_logs().await;
    let logged: u64 = walk(&cfg.log_root());
    echoers.abort_all();
    drop(viewers);
    m.shutdown().await;
    lat.sort();
    let hwm = proc_status("VmHWM:");
    println!("| metric | value | target |");
    println!("|---|---|---|");
    println!("| consoles logged concurrently | {n} | 1000 |");
    println!("| duration | {wall:.1} s | |");
    println!(
        "| host output | {} lines/s, {:.1} MiB total | |",
        (n as u64).saturating_sub(100) * rate,
        bytes as f64 / 1048576.0
    );
    println!("| log on disk (after rotation/retention) | {:.1} MiB | |", logged as f64 / 1048576.0);
    println!(
        "| RSS before consoles / peak during / VmHWM | {:.1} / {:.1} / {:.1} MiB | < 256 MiB |",
        rss_before as f64 / 1024.0,
        peak_rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    println!("| CPU (manager + simulated hosts) | {:.2} cores | < 1 core |", cpu / wall);
    println!("| echo round trips | {} | |", lat.len());
    println!(
        "| echo latency p50 / p99 / max | {:?} / {:?} / {:?} | |",
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        lat.last().copied().unwrap_or_default()
    );
    Ok(())
}

fn walk(p: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else { return 0 };
    rd.filter_map(Result::ok)
        .map(|e| {
            let path = e.path();
            if path.is_dir() { walk(&path) } else { e.metadata().map(|m| m.len()).unwrap_or(0) }
        })
        .sum()
}
