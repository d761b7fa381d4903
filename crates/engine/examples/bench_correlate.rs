//! Correlation cost: 10,000 GPU nodes (8 rails each, 32 nodes per leaf, 16 per rack, 2 PDUs per rack),
//! 1,000 observations a second for a simulated minute (rail-down on random rails, with one leaf's rail-3
//! port group failing together every 10 s, and node-level console faults), decided every 250 ms as the
//! server's intake does. Prints CPU time per observation and the verdicts.
//!
//! `cargo run --release -p lifeline-engine --example bench_correlate [-- --smoke]`

use std::path::Path;
use std::time::Instant;

use lifeline_engine::correlate::{Correlator, Observation, Settings, Topology, Unit, Verdict};

fn inventory(nodes: usize) -> String {
    let leaves = nodes.div_ceil(32);
    let racks = nodes.div_ceil(16);
    let mut t = String::with_capacity(nodes * 1200);
    t.push_str(
        "[cluster]\nname = \"b\"\noob-subnets = [\"10.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\ncredential = \"env:X\"\n\
         [defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n[[site]]\nname = \"s\"\n",
    );
    for r in 0..racks {
        t.push_str(&format!("[[rack]]\nname = \"r{r}\"\nsite = \"s\"\n"));
    }
    for l in 0..leaves {
        t.push_str(&format!(
            "[[device]]\nname = \"leaf-{l}\"\nrole = \"switch\"\nrack = \"r{}\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
             management = {{ address = \"10.200.{}.{}\" }}\n",
            (l * 2) % racks,
            l / 250,
            l % 250 + 1
        ));
    }
    for n in 0..nodes {
        let (rack, leaf) = (n / 16, n / 32);
        t.push_str(&format!(
            "[[device]]\nname = \"n{n}\"\nrole = \"gpu-node\"\nrack = \"r{rack}\"\npdus = [\"pdu-{rack}-a\", \"pdu-{rack}-b\"]\n\
             bmc = {{ address = \"10.{}.{}.{}\" }}\nrail = [\n",
            1 + n / 62_500,
            (n / 250) % 250,
            n % 250 + 1
        ));
        for h in 0..8 {
            t.push_str(&format!(
                "{{ hca = \"mlx5_{h}\", netdev = \"rdma{h}\", leaf = \"leaf-{leaf}\", port = \"Ethernet{}\" }},\n",
                (n % 32) * 8 + h
            ));
        }
        t.push_str("]\n");
    }
    t
}

/// A small deterministic generator (no dependency for a benchmark's noise).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--smoke");
    let (nodes, seconds, rate) = if smoke { (1_000, 5, 200) } else { (10_000, 60, 1_000) };
    let t0 = Instant::now();
    let text = inventory(nodes);
    let report = lifeline_inventory::check_str(Path::new("bench.toml"), &text);
    let inv = report.inventory.expect("valid inventory");
    let topology = Topology::from_inventory(&inv);
    println!("inventory: {nodes} nodes checked and topology built in {:.2?}", t0.elapsed());

    let mut c = Correlator::new(topology, Settings::default());
    let mut rng = Lcg(7);
    let (mut own, mut shared, mut observed) = (0usize, 0usize, 0usize);
    let cpu0 = cpu_time();
    let wall = Instant::now();
    let tick_ms = 250;
    for tick in 0..(seconds * 1000 / tick_ms) {
        let now = tick as i64 * tick_ms as i64;
        let per_tick = rate * tick_ms / 1000;
        for i in 0..per_tick {
            let n = rng.next() as usize % nodes;
            let o = if i % 4 == 0 {
                Observation {
                    kind: "console-hung-task".into(),
                    unit: Unit { device: format!("n{n}"), rail: None },
                    severity: "warning".into(),
                    message: String::new(),
                    at_ms: now,
                    detail: serde_json::Value::Null,
                }
            } else {
                Observation {
                    kind: "rail-down".into(),
                    unit: Unit { device: format!("n{n}"), rail: Some(format!("mlx5_{}", rng.next() % 8)) },
                    severity: "warning".into(),
                    message: String::new(),
                    at_ms: now,
                    detail: serde_json::Value::Null,
                }
            };
            c.observe(o);
            observed += 1;
        }
        if tick % 40 == 0 {
            // A leaf's rail-3 port group fails: 32 nodes at once.
            let leaf = rng.next() as usize % nodes.div_ceil(32);
            for n in leaf * 32..((leaf + 1) * 32).min(nodes) {
                c.observe(Observation {
                    kind: "rail-down".into(),
                    unit: Unit { device: format!("n{n}"), rail: Some("mlx5_3".into()) },
                    severity: "warning".into(),
                    message: String::new(),
                    at_ms: now,
                    detail: serde_json::Value::Null,
                });
                observed += 1;
            }
        }
        for v in c.decide(now) {
            match v {
                Verdict::Own(_) => own += 1,
                Verdict::Shared(_) => shared += 1,
            }
        }
    }
    // Past the last hold: everything is decided.
    for v in c.decide((seconds * 1000) as i64 + 10_000) {
        match v {
            Verdict::Own(_) => own += 1,
            Verdict::Shared(_) => shared += 1,
        }
    }
    assert_eq!(c.pending(), 0);
    let cpu = cpu_time() - cpu0;
    println!(
        "{observed} observations over {seconds} simulated s ({rate}/s + a 32-node port group every 10 s): \
         {own} decided alone, {shared} shared verdicts"
    );
    println!(
        "CPU {:.3} s ({:.1} µs per observation), wall {:.2?}",
        cpu,
        cpu * 1e6 / observed as f64,
        wall.elapsed()
    );
}

/// This process's user + system CPU seconds.
fn cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}
