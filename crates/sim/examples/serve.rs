//! Runs a generated fleet in the foreground (a stand-in for `lifeline sim` while developing the sim).
//!
//! `cargo run -p lifeline-sim --example serve -- NODES SWITCHES [ENDPOINTS_JSON] [EXPORT_DIR]`
#![allow(clippy::print_stdout)]

use lifeline_sim::{Fleet, FleetSpec, PortPlan, SimOptions};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nodes = args.first().and_then(|a| a.parse().ok()).unwrap_or(2);
    let switches = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(0);
    let opts = SimOptions {
        ports: PortPlan::Offset(10000),
        time_scale: std::env::var("TIME_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(0.1),
        endpoints_json: args.get(2).map(Into::into),
        export_node_state: args.get(3).map(Into::into),
        ..SimOptions::default()
    };
    let fleet = match Fleet::start(FleetSpec::generate(nodes, switches), opts).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("sim failed to start: {e}");
            std::process::exit(1);
        }
    };
    for e in fleet.endpoints() {
        println!(
            "{:<14} {:<8} {}:{} {} {}",
            e.name,
            format!("{:?}", e.kind),
            e.address,
            e.port,
            e.username,
            e.password
        );
    }
    let _ = tokio::signal::ctrl_c().await;
    fleet.shutdown().await;
}
