//! Benchmark: the full in-band check of an HGX-class node (10 rails, 8 GPUs) against a recorded tree,
//! beside a peer measured in the same run: `bench_check_peer.py` (next to this file), an NHC-style script
//! doing the same reads (port state, rate, link layer, GID table, MTU, rp_filter, default route, error
//! counters and `ethtool -S` twice an interval apart, the GPU facts) and judging them against the same
//! policy. Both sides are child processes timed the same way: wall from spawn to exit, CPU (user + system)
//! from `getrusage(RUSAGE_CHILDREN)` around each one, so each includes its start-up. The goal is a full
//! check in < 10 s (NHC, DCGM diag level 3 and the Azure HPC checks take minutes on real nodes).
//!
//! `cargo run --release -p lifeline-verify --example bench_check [-- RUNS]` (default 5 runs per case;
//! medians). No GPU or RDMA hardware is needed: `gpus.json` stands where NVML answers on a node.
#![allow(clippy::print_stdout)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lifeline_verify::{GpuSource, Options, Policy, Roots, run};
use nix::sys::resource::{UsageWho, getrusage};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{text}\n")).unwrap();
}

/// Writes the recorded node tree under `root`, with the policy for both sides: `policy.toml` (ours) and
/// `policy.json` (the peer's reading of the same policy).
fn tree(root: &Path) {
    let mut policy = String::from(
        "node = \"bench\"\n[gpus]\ncount = 8\nmodel = \"H100\"\npcie_gen = 5\npcie_width = 16\nnvlinks = 18\n\
         [host]\nfrontend_interface = \"eno1\"\npfc_max_pause_per_sec = 1000\n",
    );
    for i in 0..10u8 {
        let (hca, netdev) = (format!("mlx5_{i}"), format!("rdma{i}"));
        let port = root.join(format!("sysfs/class/infiniband/{hca}/ports/1"));
        write(&port.join("state"), "4: ACTIVE");
        write(&port.join("phys_state"), "5: LinkUp");
        write(&port.join("rate"), "400 Gb/sec (4X NDR)");
        write(&port.join("link_layer"), "Ethernet");
        // A real mlx5 port exposes 255 GID slots, mostly zero.
        for n in 0..255 {
            let gid = match n {
                3 => format!("0000:0000:0000:0000:0000:ffff:0a64:{i:02x}01"),
                _ => "0000:0000:0000:0000:0000:0000:0000:0000".into(),
            };
            write(&port.join(format!("gids/{n}")), &gid);
        }
        write(&port.join("gid_attrs/types/3"), "RoCE v2");
        for c in lifeline_verify::policy::default_counters() {
            write(&port.join(format!("counters/{c}")), "0");
        }
        write(&root.join(format!("sysfs/class/net/{netdev}/mtu")), "9000");
        write(&root.join(format!("proc/sys/net/ipv4/conf/{netdev}/rp_filter")), "2");
        write(&root.join(format!("ethtool/{netdev}")), "     rx_prio3_pause: 5\n     tx_prio3_pause: 1");
        policy.push_str(&format!(
            "[[rails]]\nhca = \"{hca}\"\nnetdev = \"{netdev}\"\nipv4 = \"10.100.{i}.1/24\"\nrate_gbps = 400\nmtu = 9000\nlink_layer = \"ethernet\"\n"
        ));
    }
    write(&root.join("proc/sys/net/ipv4/conf/all/rp_filter"), "0");
    write(
        &root.join("proc/net/route"),
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
         eno1\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0",
    );
    let gpus: Vec<_> = (0..8)
        .map(|i| {
            serde_json::json!({"index": i, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": format!("00000000:{:02X}:00.0", 0x18 + i),
            "ecc_volatile_uncorrected": 0, "retired_pages_pending": false, "remapped_rows_pending": false,
            "remapped_rows_failure": false, "xid_events": [], "nvlinks_up": 18, "nvlinks_down": 0,
            "pcie_gen_current": 5, "pcie_gen_max": 5, "pcie_width_current": 16, "pcie_width_max": 16,
            "temperature_c": 40, "throttle_reasons": []})
        })
        .collect();
    write(
        &root.join("gpus.json"),
        &serde_json::json!({"schema": 1, "host_up": true, "gpus": gpus}).to_string(),
    );
    let rails: Vec<_> = (0..10u8)
        .map(|i| {
            serde_json::json!({"hca": format!("mlx5_{i}"), "netdev": format!("rdma{i}"),
            "ipv4": format!("10.100.{i}.1/24"), "rate_gbps": 400, "mtu": 9000, "link_layer": "ethernet"})
        })
        .collect();
    let parsed = Policy::from_toml_str(&policy, "bench").unwrap();
    let peer_policy = serde_json::json!({
        "rails": rails, "frontend_interface": "eno1", "pfc_max_pause_per_sec": 1000,
        "rp_filter": parsed.host.rp_filter, "counters": parsed.sampling.error_counters,
        "gpus_json": root.join("gpus.json"),
        "gpus": {"count": 8, "model": "H100", "pcie_gen": 5, "pcie_width": 16, "nvlinks": 18,
                 "max_temp_c": parsed.gpus.as_ref().map(|g| g.max_temp_c)},
    });
    write(&root.join("policy.json"), &peer_policy.to_string());
    write(&root.join("policy.toml"), &policy);
}

/// `LIFELINE_BENCH_ROLE=check TREE INTERVAL_MS`: one check, as `lifeline-agent check` runs it on a node.
fn role_check(a: &[String]) -> i32 {
    let tree = PathBuf::from(&a[0]);
    let interval = Duration::from_millis(a[1].parse().expect("INTERVAL_MS"));
    let text = fs::read_to_string(tree.join("policy.toml")).expect("policy.toml");
    let policy = Policy::from_toml_str(&text, "bench").expect("policy");
    let opts = Options {
        roots: Roots::for_tree(&tree),
        gpu: GpuSource::Snapshot(tree.join("gpus.json")),
        interval: Some(interval),
        ..Options::default()
    };
    let r = run(&policy, &opts);
    println!("{{\"checks\": {}, \"verdict\": \"{}\"}}", r.checks.len(), r.verdict.as_str());
    if r.verdict != lifeline_verify::Verdict::Pass {
        eprintln!("{}", r.render_table());
    }
    r.verdict.exit_code()
}

/// One child run to completion (a failing one is an error): wall, CPU (its rusage), its stdout.
struct Measured {
    wall: Duration,
    cpu: Duration,
    out: String,
}

fn children_cpu() -> Duration {
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(u.user_time()) + tv(u.system_time())
}

fn measure(cmd: &mut Command) -> Result<Measured, String> {
    let cpu0 = children_cpu();
    let t = Instant::now();
    let o = cmd.stdin(Stdio::null()).output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let wall = t.elapsed();
    let cpu = children_cpu().saturating_sub(cpu0);
    let out = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    if !o.status.success() {
        return Err(format!("{cmd:?}: {} {out} {}", o.status, String::from_utf8_lossy(&o.stderr)));
    }
    Ok(Measured { wall, cpu, out })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if std::env::var("LIFELINE_BENCH_ROLE").as_deref() == Ok("check") {
        std::process::exit(role_check(&a));
    }
    let runs: usize = a.first().and_then(|v| v.parse().ok()).unwrap_or(5).max(1);
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path());
    let exe = std::env::current_exe().expect("current exe");
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bench_check_peer.py");
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "full check of a 10-rail, 8-GPU node (recorded tree), {runs} runs per case, medians; load {}",
        load.trim()
    );
    // The interpreter itself, not a version-manager shim in front of it (pyenv's costs ~50 ms a start).
    let python = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    // How much of the peer's figure is its interpreter starting (it is how the peer runs, so it counts).
    let starts: Vec<Measured> =
        (0..runs).filter_map(|_| measure(Command::new(&python).args(["-c", "pass"])).ok()).collect();
    let python_start = if starts.is_empty() {
        "python3 did not start".to_owned()
    } else {
        let w = median(starts.iter().map(|m| m.wall).collect());
        let c = median(starts.iter().map(|m| m.cpu).collect());
        format!("{} / {}", ms(w), ms(c))
    };
    println!("peer: {python} {} (the same reads and judgements)", peer.display());
    println!();
    println!("| case | ours wall / CPU | peer wall / CPU | peer ÷ ours (wall, CPU) | checks ours / peer |");
    println!("|---|---|---|---|---|");
    for (label, interval_ms) in
        [("500 ms counter interval (default)", 500u64), ("interval 0 (check cost)", 0)]
    {
        let (mut ow, mut oc, mut pw, mut pc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut ours_out, mut peer_out, mut peer_err) = (String::new(), String::new(), None);
        for i in 0..runs {
            // Alternate who goes first so neither always runs on a warm page cache.
            let mut order = [true, false];
            if i % 2 == 1 {
                order.reverse();
            }
            for is_ours in order {
                let mut cmd = if is_ours {
                    let mut c = Command::new(&exe);
                    c.env("LIFELINE_BENCH_ROLE", "check");
                    c
                } else {
                    let mut c = Command::new(&python);
                    c.arg(&peer);
                    c
                };
                cmd.arg(dir.path()).arg(interval_ms.to_string());
                match (is_ours, measure(&mut cmd)) {
                    (true, Ok(m)) => {
                        ow.push(m.wall);
                        oc.push(m.cpu);
                        ours_out = m.out;
                    }
                    (true, Err(e)) => panic!("our check failed: {e}"),
                    (false, Ok(m)) => {
                        pw.push(m.wall);
                        pc.push(m.cpu);
                        peer_out = m.out;
                    }
                    (false, Err(e)) => peer_err = Some(e),
                }
            }
        }
        let (ow, oc) = (median(ow), median(oc));
        assert!(ow < Duration::from_secs(10), "full check over 10 s");
        let count = |s: &str| {
            serde_json::from_str::<serde_json::Value>(s).ok().and_then(|v| v["checks"].as_u64()).unwrap_or(0)
        };
        if pw.is_empty() {
            println!(
                "| {label} | {} / {} | peer failed: {} | – | {} / – |",
                ms(ow),
                ms(oc),
                peer_err.unwrap_or_default(),
                count(&ours_out)
            );
            continue;
        }
        let (pw, pc) = (median(pw), median(pc));
        println!(
            "| {label} | {} / {} | {} / {} | {:.1}×, {:.1}× | {} / {} |",
            ms(ow),
            ms(oc),
            ms(pw),
            ms(pc),
            pw.as_secs_f64() / ow.as_secs_f64(),
            pc.as_secs_f64() / oc.as_secs_f64().max(1e-6),
            count(&ours_out),
            count(&peer_out)
        );
    }
    println!();
    println!("of which the peer's interpreter start (`python3 -c pass`) alone: {python_start} (wall / CPU)");
}
