//! The Redfish rows of `bench_sweep`: the health sweep with the CLI's default settings (power + rollup +
//! the 3 newest events, 30 s per BMC, the fan-out `lifeline sweep` computes) at 0 ms and 200 ms injected
//! latency, cold / discovery remembered / warm, each beside the Python peer of the same run and the ratio;
//! and the every-sensor read at 0 ms.
//!
//! Why the pins are kept in a file too: `lifeline` keeps TLS pins in its store, so a new process with
//! remembered discovery sends nothing before its login; with pins forgotten it would read every service
//! root again to pin it (trust on first use), a round trip the CLI never pays.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use lifeline_bmc::{BoxError, MemoryProtocolMemory, ProtocolMemory, RedfishResourcePaths, SweepOptions};
use lifeline_redfish::PinStore;
use lifeline_types::Fingerprint;

use super::{Args, Measured, Table, addr, median, met, ours, ours_warm, ports, send, timed};

/// What `lifeline sweep` reads with its defaults (`crates/cli/src/cmd/bmc.rs`: `--events 3`,
/// `--per-bmc-timeout 30`, everything else `SweepOptions::default()`); `redfish-all`: every sensor instead
/// of the rollup, no events (the every-sensor goal).
pub fn sweep_options(kind: &str) -> Option<SweepOptions> {
    let cli = SweepOptions { events: 3, per_bmc_timeout: Duration::from_secs(30), ..SweepOptions::default() };
    match kind {
        "redfish" => Some(cli),
        "redfish-all" => Some(SweepOptions { all_sensors: true, events: 0, ..cli }),
        _ => None,
    }
}

/// `BENCH_NO_SPECULATIVE_LOGIN=1` (in the sweep child's environment): log in after the root is read, as
/// before the speculative login existed; `BENCH_NO_FIRST_CONTACT_READS=1`: no Basic reads of the
/// collections with the root. To measure what each costs and saves on the same build.
pub fn client_options(mut o: lifeline_bmc::BmcOptions) -> lifeline_bmc::BmcOptions {
    if std::env::var_os("BENCH_NO_SPECULATIVE_LOGIN").is_some() {
        o.redfish.speculative_login = false;
    }
    if std::env::var_os("BENCH_NO_FIRST_CONTACT_READS").is_some() {
        o.redfish.first_contact_reads = &[];
    }
    o
}

fn pins_file(memory: &Path) -> std::path::PathBuf {
    memory.with_extension("pins.json")
}

fn resources_file(memory: &Path) -> std::path::PathBuf {
    memory.with_extension("resources.json")
}

/// TLS pins kept in a file beside the discovery file (the store's pin table in `lifeline`).
#[derive(Debug, Default)]
pub struct FilePins(Mutex<HashMap<String, Fingerprint>>);

impl FilePins {
    pub fn load(memory: Option<&Path>) -> FilePins {
        let text = memory.and_then(|m| std::fs::read_to_string(pins_file(m)).ok()).unwrap_or_default();
        FilePins(Mutex::new(serde_json::from_str(&text).unwrap_or_default()))
    }
    pub fn save(&self, memory: &Path) -> anyhow::Result<()> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        std::fs::write(pins_file(memory), serde_json::to_string(&map)?)?;
        Ok(())
    }
}

#[async_trait]
impl PinStore for FilePins {
    async fn get_pin(&self, bmc: &str) -> Result<Option<Fingerprint>, BoxError> {
        Ok(self.0.lock().unwrap_or_else(|p| p.into_inner()).get(bmc).copied())
    }
    async fn set_pin(&self, bmc: &str, pin: Fingerprint) -> Result<(), BoxError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(bmc.to_owned(), pin);
        Ok(())
    }
}

/// Loads the remembered Redfish resource paths (the store's `bmc_redfish_paths` in `lifeline`).
pub async fn load_resources(memory: &MemoryProtocolMemory, path: &Path) {
    let text = std::fs::read_to_string(resources_file(path)).unwrap_or_default();
    let all: HashMap<String, RedfishResourcePaths> = serde_json::from_str(&text).unwrap_or_default();
    for (bmc, r) in all {
        let _ = memory.remember_redfish_resources(&bmc, &r).await;
    }
}

pub async fn save_resources(memory: &MemoryProtocolMemory, path: &Path) -> anyhow::Result<()> {
    let all = memory.recall_redfish_resources().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::write(resources_file(path), serde_json::to_string(&all)?)?;
    Ok(())
}

/// Removes a discovery file and what is kept beside it (a first run ever).
pub fn forget(memory: &Path) {
    for p in [memory.to_path_buf(), pins_file(memory), resources_file(memory)] {
        let _ = std::fs::remove_file(p);
    }
}

fn python_peer(a: &Args, hosts: &Path, events: usize, label: &str) -> anyhow::Result<Measured> {
    let venv = std::env::var("OOB_PEERS_VENV").unwrap_or_else(|_| "/work/main/.peers-venv".into());
    let python = Path::new(&venv).join("bin/python");
    let python = if python.exists() { python.to_string_lossy().into_owned() } else { "python3".into() };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/bench_sweep_peer.py");
    let argv = vec![
        python,
        script.to_string_lossy().into_owned(),
        "--threads".into(),
        "64".into(),
        "--events".into(),
        events.to_string(),
        hosts.to_string_lossy().into_owned(),
    ];
    let (out, wall, cpu, rss) = timed(&argv)?;
    let ok = out.lines().find_map(|l| l.strip_prefix("ok ")).and_then(|v| v.parse().ok()).unwrap_or(0);
    let note = out.lines().find_map(|l| l.strip_prefix("first failure: ")).unwrap_or("").to_owned();
    Ok(Measured { label: label.into(), ok, of: a.n, wall, cpu, rss, note })
}

/// The Redfish rows, against the simulator child (`child_in` / `child_out` inject and clear latency).
pub fn rows(
    a: &Args,
    child_in: &mut std::process::ChildStdin,
    child_out: &mut impl BufRead,
    table: &Table,
    dir: &Path,
) -> anyhow::Result<()> {
    let runs = a.runs;
    let (rf_port, _) = ports();
    let hosts = dir.join("hosts.txt");
    let list: Vec<String> = (0..a.n).map(|i| format!("https://{}:{rf_port}", addr(a.base, i))).collect();
    std::fs::write(&hosts, list.join("\n"))?;
    let fresh = dir.join("redfish-fresh.json");
    let mem = dir.join("redfish-discovery.json");
    let events = sweep_options("redfish").map_or(3, |o| o.events);
    let latencies: &[u64] = if a.skip_200 { &[0] } else { &[0, 200] };
    for &ms in latencies {
        if ms > 0 {
            send(child_in, child_out, &format!("bmc-slow={ms}"))?;
        }
        let goal = if ms == 0 { 2.0 } else { 1.5 };
        let w = format!("Redfish health + {events} events, {ms} ms");
        let cold = median(runs, || {
            forget(&fresh);
            ours(a, "redfish", Some(&fresh), "Lifeline, cold process, nothing remembered")
        })?;
        forget(&mem);
        ours(a, "redfish", Some(&mem), "prime")?;
        let rem =
            median(runs, || ours(a, "redfish", Some(&mem), "Lifeline, cold process, discovery remembered"))?;
        let warm =
            median(runs, || ours_warm(a, "redfish", &mem, "Lifeline, warm (2nd sweep in one process)"))?;
        // The peer takes about a minute per run at 200 ms (1,000 BMCs): one run there.
        let py = if a.skip_python {
            Err(anyhow::anyhow!("--skip-python"))
        } else {
            median(if ms == 0 { runs } else { 1 }, || {
                python_peer(a, &hosts, events, "Python requests, 64 threads")
            })
        };
        for m in [&cold, &rem, &warm] {
            let vs = match &py {
                Ok(p) => format!(
                    "; Python {:.3} s, ratio {:.1}x (goal >= 10: {})",
                    p.wall,
                    p.wall / m.wall,
                    met(p.wall / m.wall >= 10.0)
                ),
                Err(_) => String::new(),
            };
            table.add(&w, m, format!("goal <= {goal} s: {}{vs}", met(m.wall <= goal)));
        }
        match &py {
            Ok(p) => table.add(&w, p, "the peer (same run)".into()),
            Err(e) => println!("python peer not measured: {e:#}"),
        }
        if ms == 0 {
            let all = median(runs, || {
                ours(a, "redfish-all", Some(&mem), "Lifeline, every sensor, discovery remembered")
            })?;
            table.add("Redfish every sensor, 0 ms", &all, format!("goal <= 2 s: {}", met(all.wall <= 2.0)));
        }
        if ms > 0 {
            send(child_in, child_out, "clear")?;
        }
    }
    Ok(())
}
