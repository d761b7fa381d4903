//! `lifeline sim`: serve a simulated fleet in the foreground; `lifeline sim fault`: inject or clear faults.

use std::path::PathBuf;

use anyhow::Context;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, PortPlan, SimOptions};

use crate::args::{Global, SimAction, SimArgs};
use crate::cmd::{inventory, print_json};
use crate::exit::{CmdResult, Code, Exit};
use crate::fleet::spec_from_inventory;

pub async fn run(g: &Global, args: SimArgs) -> CmdResult {
    match args.action {
        Some(SimAction::Fault { control, endpoints, device, fault }) => {
            let url = control_url(control, endpoints)?;
            // Several devices at once (`node-1,node-2`): injected concurrently, as the loss of a part they
            // share would strike them, not one process start after another.
            let devices: Vec<&str> = device.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
            if devices.is_empty() {
                return Err(Exit::usage(anyhow::anyhow!("sim fault: no device named in `{device}`")));
            }
            let one = |d: &str| {
                let (url, d, fault) = (url.clone(), d.to_owned(), fault.clone());
                async move {
                    if fault == "clear" {
                        lifeline_sim::control::Client::clear(&url, &d).await
                    } else {
                        lifeline_sim::control::Client::inject(&url, &d, &fault).await
                    }
                }
            };
            let tasks: Vec<_> = devices.iter().map(|d| tokio::spawn(one(d))).collect();
            let mut infos = Vec::with_capacity(tasks.len());
            for t in tasks {
                infos.push(
                    t.await
                        .map_err(|e| Exit::failed(anyhow::anyhow!("sim fault: {e}")))?
                        .map_err(Exit::failed)?,
                );
            }
            if g.json {
                match infos.as_slice() {
                    [info] => print_json(info)?,
                    all => print_json(&all)?,
                }
            } else {
                for info in &infos {
                    let faults =
                        if info.faults.is_empty() { "none".to_owned() } else { info.faults.join(", ") };
                    crate::outln!(
                        "{}: power {}, phase {}, faults: {faults}",
                        info.name,
                        info.power,
                        info.phase
                    );
                }
            }
            Ok(Code::Ok)
        }
        None => serve(g, args).await,
    }
}

fn control_url(control: Option<String>, endpoints: Option<PathBuf>) -> Result<String, Exit> {
    if let Some(c) = control {
        return Ok(c);
    }
    let Some(path) = endpoints else {
        return Err(Exit::usage(anyhow::anyhow!(
            "no simulator control URL: pass --control URL, set LIFELINE_SIM_CONTROL, or --endpoints FILE"
        )));
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read endpoints file {}", path.display()))
        .map_err(Exit::usage)?;
    let eps: Vec<lifeline_sim::Endpoint> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a simulator endpoints file", path.display()))
        .map_err(Exit::usage)?;
    eps.iter()
        .find(|e| e.kind == EndpointKind::Control)
        .map(|e| format!("http://{}:{}", e.address, e.port))
        .ok_or_else(|| Exit::usage(anyhow::anyhow!("{} lists no control endpoint", path.display())))
}

pub fn spec(g: &Global, args: &SimArgs) -> Result<FleetSpec, Exit> {
    match (args.nodes, args.switches) {
        (None, None) => {
            let inv = inventory::load(g)?;
            spec_from_inventory(&inv).map_err(Exit::usage)
        }
        (n, s) => Ok(FleetSpec::generate(n.unwrap_or(0), s.unwrap_or(0))),
    }
}

pub fn options(args: &SimArgs) -> SimOptions {
    let ports = match args.port_offset {
        Some(0) => PortPlan::Standard,
        Some(n) => PortPlan::Offset(n),
        None => PortPlan::auto(),
    };
    let mut opts = SimOptions {
        ports,
        time_scale: args.time_scale,
        export_node_state: args.export_node_state.clone(),
        endpoints_json: args.endpoints_json.clone(),
        ..SimOptions::default()
    };
    if let Some(c) = args.control_listen {
        opts.control = c;
    }
    opts
}

async fn serve(g: &Global, args: SimArgs) -> CmdResult {
    let spec = spec(g, &args)?;
    let opts = options(&args);
    let fleet = Fleet::start(spec, opts).await.map_err(crate::cmd::sim::start_error)?;
    if g.json {
        print_json(&fleet.endpoints())?;
    } else {
        // Every endpoint for a small fleet, a summary for a large one (`--list` / `--endpoints-json`).
        for line in
            crate::cmd::sim_summary::render(fleet.endpoints(), args.list, args.endpoints_json.as_deref())
        {
            crate::outln!("{line}");
        }
        crate::outln!(
            "simulated fleet up: {} endpoints; control API {}; Ctrl-C to stop",
            fleet.endpoints().len(),
            fleet.control_url()
        );
    }
    wait_for_shutdown().await;
    eprintln!("stopping simulated fleet");
    fleet.shutdown().await;
    Ok(Code::Ok)
}

/// Ctrl-C or SIGTERM (systemd, `kill`, test harnesses).
pub async fn wait_for_shutdown() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// A fleet that cannot bind usually means another simulator holds the ports: say how to run beside it.
pub fn start_error(e: lifeline_sim::SimError) -> Exit {
    let hint = if matches!(e, lifeline_sim::SimError::Bind { .. }) {
        " (is another `lifeline sim` or `lifeline demo` running? pass --port-offset N to run beside it)"
    } else {
        ""
    };
    Exit::failed(anyhow::anyhow!("{}{hint}", lifeline_verify::error_chain(&e)))
}
