//! `lifeline demo`: the example cluster simulated in this process (real Redfish, IPMI and SSH on loopback)
//! and a live fleet view over it — what an operator sees on the jump host, runnable anywhere.

use std::io::IsTerminal;
use std::time::Duration;

use lifeline_bmc::SweepOptions;
use lifeline_engine::ops::sweep::ChangeTracker;
use lifeline_engine::targets::bmc_target;
use lifeline_engine::{BmcSelection, SelectedBmc};
use lifeline_sim::{Fleet, PortPlan, SimOptions};
use serde_json::json;

use crate::args::{DemoArgs, Global};
use crate::cmd::bmc::sweep_table;
use crate::cmd::{inventory, lifeline, sim::wait_for_shutdown};
use crate::exit::{CmdResult, Code, Exit};
use crate::fleet::{sim_password, spec_from_inventory};
use crate::outln;

/// Faults injected during the demo, at the given sweep number, so the view has something to show.
const SCRIPT: &[(u64, &str, &str)] = &[
    (2, "gpu-node-03", "gpu-ecc=2"),
    (3, "gpu-node-05", "gpu-xid=6:79"),
    (4, "gpu-node-07", "rail-down=mlx5_4"),
    (5, "head-node-02", "bmc-unresponsive"),
    (7, "head-node-02", "clear"),
];

pub async fn run(g: &Global, a: DemoArgs) -> CmdResult {
    let mut g = g.clone();
    if g.inventory.is_none() {
        g.inventory = Some(crate::bin_relative_example());
    }
    let inv = inventory::load(&g)?;
    // The demo keeps its own store unless one is named, so it never mixes with a real cluster's state.
    let tmp;
    if g.data_dir.is_none() && g.database_url.is_none() {
        tmp = tempfile_dir()?;
        g.data_dir = Some(tmp.clone());
    }
    let spec = spec_from_inventory(&inv).map_err(Exit::usage)?;
    let ports = match a.port_offset {
        Some(0) => PortPlan::Standard,
        Some(n) => PortPlan::Offset(n),
        None => PortPlan::auto(),
    };
    let opts = SimOptions { ports, time_scale: a.time_scale, ..SimOptions::default() };
    let fleet = Fleet::start(spec, opts).await.map_err(crate::cmd::sim::start_error)?;
    let l = lifeline(&g)?.with_bmc_options(|o| o.fanout = 64);
    l.inventory_sync().await?;

    // Targets use the same passwords the simulator serves (the inventory's references, or its fallback).
    let bmcs: Vec<SelectedBmc> = inv
        .devices
        .iter()
        .filter_map(|d| {
            let pw = sim_password(&d.bmc.as_ref()?.credential);
            let mut t = bmc_target(d, pw)?;
            if let Some(e) = fleet.endpoint(d.name.as_str(), lifeline_sim::EndpointKind::Redfish) {
                t.redfish_port = e.port;
            }
            if let Some(e) = fleet.endpoint(d.name.as_str(), lifeline_sim::EndpointKind::Ipmi) {
                t.ipmi_port = e.port;
            }
            Some(SelectedBmc { target: t, role: Some(d.role), rack: Some(d.rack.clone()) })
        })
        .collect();
    let sel = BmcSelection { bmcs, skipped: Vec::new() };
    let mut tracker = ChangeTracker::default();
    let tty = std::io::stdout().is_terminal() && !g.json;
    let mut recent: Vec<String> = Vec::new();
    let stop = wait_for_shutdown();
    tokio::pin!(stop);
    let sweep_opts =
        SweepOptions { events: 1, per_bmc_timeout: Duration::from_secs(8), ..SweepOptions::default() };
    let mut n = 0u64;
    loop {
        n += 1;
        if !a.no_faults {
            for (at, dev, fault) in SCRIPT {
                if *at == n {
                    let r = if *fault == "clear" {
                        lifeline_sim::control::Client::clear(fleet.control_url(), dev).await
                    } else {
                        lifeline_sim::control::Client::inject(fleet.control_url(), dev, fault).await
                    };
                    let now = chrono::Utc::now().format("%H:%M:%S");
                    let msg = match r {
                        Ok(_) => format!("{now} sim: {fault} on {dev}"),
                        Err(e) => format!("{now} sim: injecting {fault} on {dev} failed: {e}"),
                    };
                    recent.push(msg);
                }
            }
        }
        let started = std::time::Instant::now();
        let rows = tokio::select! {
            r = l.sweep(&sel, &sweep_opts, |_, _| {}) => r?.rows,
            _ = &mut stop => break,
        };
        for (name, change) in tracker.track(&l, &rows).await? {
            recent.push(format!("{} {name}: {}", chrono::Utc::now().format("%H:%M:%S"), change.message));
        }
        let keep = recent.len().saturating_sub(10);
        recent.drain(..keep);
        if g.json {
            outln!("{}", serde_json::to_string(&json!({ "sweep": n, "rows": rows, "events": recent }))?);
        } else {
            if tty {
                crate::out::text("\x1b[2J\x1b[H")?;
            }
            outln!(
                "Lifeline demo — cluster `{}`: {} BMCs simulated on loopback; sweep {n} took {} ms (Ctrl-C to stop)",
                inv.cluster.name,
                rows.len(),
                started.elapsed().as_millis()
            );
            outln!("{}", sweep_table(&rows));
            outln!("events:");
            for e in &recent {
                outln!("  {e}");
            }
        }
        if a.sweeps.is_some_and(|max| n >= max) {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs_f64(a.interval.max(0.1))) => {}
            _ = &mut stop => break,
        }
    }
    l.close().await;
    fleet.shutdown().await;
    Ok(Code::Ok)
}

fn tempfile_dir() -> Result<std::path::PathBuf, Exit> {
    let dir = std::env::temp_dir().join(format!("lifeline-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
