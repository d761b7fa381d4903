//! Benchmark: a full check of an HGX-class node (10 rails, 8 GPUs) against a recorded tree, and the live
//! path on this machine (no RDMA, no NVIDIA driver). The target is < 10 s for a full check; the
//! incumbents (NHC, DCGM diag level 3, Azure HPC health checks) take 5-8 minutes per node.
//!
//! `cargo run --release -p lifeline-verify --example bench_check [-- N]`

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use lifeline_verify::{GpuSource, Options, Policy, Roots, run};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{text}\n")).unwrap();
}

fn tree(root: &Path) -> Policy {
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
    Policy::from_toml_str(&policy, "bench").unwrap()
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], *v.last().unwrap())
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let policy = tree(dir.path());
    let mut rows = Vec::new();
    for (label, interval) in [
        ("recorded tree, default 500 ms counter interval", None),
        ("recorded tree, interval 0 (check cost)", Some(Duration::ZERO)),
    ] {
        let opts = Options {
            roots: Roots::for_tree(dir.path()),
            gpu: GpuSource::Snapshot(dir.path().join("gpus.json")),
            interval,
            ..Options::default()
        };
        let mut times = Vec::new();
        let mut checks = 0;
        for _ in 0..n {
            let t = Instant::now();
            let r = run(&policy, &opts);
            times.push(t.elapsed());
            assert_eq!(r.verdict, lifeline_verify::Verdict::Pass, "{}", r.render_table());
            checks = r.checks.len();
        }
        let (med, max) = stats(times);
        rows.push((label.to_owned(), checks, med, max));
    }
    // Live path on this machine: real /sys and /proc, NVML load attempt (absent here -> gpu.source error).
    let opts = Options { interval: Some(Duration::from_millis(500)), ..Options::default() };
    let mut times = Vec::new();
    let mut checks = 0;
    for _ in 0..n {
        let t = Instant::now();
        let r = run(&policy, &opts);
        times.push(t.elapsed());
        checks = r.checks.len();
    }
    let (med, max) = stats(times);
    rows.push(("live /sys + NVML attempt (no hardware here)".into(), checks, med, max));

    println!(
        "{:<50} {:>7} {:>12} {:>12} {:>14} {:>10}",
        "case (10 rails, 8 GPUs)", "checks", "median", "max", "NHC/DCGM ref", "ratio"
    );
    for (label, checks, med, max) in rows {
        let reference = Duration::from_secs(300);
        println!(
            "{label:<50} {checks:>7} {:>10.1}ms {:>10.1}ms {:>14} {:>9.0}x",
            med.as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
            "5-8 min",
            reference.as_secs_f64() / med.as_secs_f64()
        );
        assert!(max < Duration::from_secs(10), "full check over 10 s");
    }
}
