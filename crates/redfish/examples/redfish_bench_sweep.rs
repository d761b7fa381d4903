//! Redfish health sweep over a simulated fleet: connect (TLS pin on first use), list systems, read power
//! state and health of every BMC, all at once. Prints one table row per run.
//!
//! `cargo run --release -p lifeline-redfish --example redfish_bench_sweep -- [N=100] [RUNS=3]`
//! (the lead's fleet benchmark compares this against the targets; here it is a smoke measurement).

use std::sync::Arc;
use std::time::{Duration, Instant};

use lifeline_redfish::*;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, SimOptions};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let fleet = Fleet::start(FleetSpec::generate(n, 0), SimOptions::for_tests()).await.expect("fleet");
    let targets: Vec<_> = fleet
        .endpoints()
        .iter()
        .filter(|e| e.kind == EndpointKind::Redfish)
        .map(|e| {
            (
                BmcTarget::new(&e.name, format!("https://{}:{}", e.address, e.port)),
                Credentials::new(&e.username, &e.password),
            )
        })
        .collect();
    let store: Arc<dyn PinStore> = Arc::new(MemoryPinStore::new());
    println!("{:>6} {:>4} {:>10} {:>6} {:>6}", "BMCs", "run", "wall_ms", "ok", "failed");
    for run in 1..=runs {
        let t0 = Instant::now();
        let sweeps = targets.iter().cloned().map(|(t, c)| {
            let store = store.clone();
            async move {
                let opts =
                    ClientOptions { request_timeout: Duration::from_secs(10), ..ClientOptions::default() };
                let client = Client::connect(t, c, TlsTrust::Pin { store, explicit: None }, opts).await?;
                let systems = client.systems().await?;
                let health: Vec<_> =
                    systems.items.iter().map(|s| (s.power_state, s.status.overall())).collect();
                client.close().await?;
                Ok::<_, RedfishError>(health)
            }
        });
        let results = futures::future::join_all(sweeps).await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        println!(
            "{:>6} {:>4} {:>10.1} {:>6} {:>6}",
            n,
            run,
            t0.elapsed().as_secs_f64() * 1e3,
            ok,
            results.len() - ok
        );
        if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
            eprintln!("first failure: {e}");
        }
    }
    fleet.shutdown().await;
}
