//! `lifeline demo`: the example cluster simulated in this process (real Redfish, IPMI and SSH on loopback),
//! the jump-host server over it (plain HTTP on loopback, a one-time admin password, the fault policy), and
//! a live fleet view in the terminal — what an operator sees on the jump host, runnable anywhere.
//!
//! The demo drives the sweeps itself (so the terminal view and the server see the same rows) and hands
//! each row to the server's fault rules: the scripted faults become fault records, and the policy's
//! decision for each is recorded and shown; with the demo's own policy the server runs the demo runbooks
//! below on them (a GPU node is cycled and verified from the simulator's exported state; a stuck BMC waits
//! for an operator's approval in the web console), so the loop is visible there. `--no-server` keeps only
//! the terminal view.

use std::io::IsTerminal;
use std::time::Duration;

use lifeline_bmc::SweepOptions;
use lifeline_engine::ops::sweep::ChangeTracker;
use lifeline_engine::targets::bmc_target;
use lifeline_engine::{BmcSelection, EngineError, SelectedBmc};
use lifeline_sim::{Fleet, PortPlan, RunningFleet, SimOptions};
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
    // A technician reseats the cable; the waiting check passes once someone approves it.
    (9, "gpu-node-07", "clear"),
    (5, "head-node-02", "bmc-unresponsive"),
    (7, "head-node-02", "clear"),
];

pub async fn run(g: &Global, a: DemoArgs) -> CmdResult {
    let mut g = g.clone();
    if g.inventory.is_none() {
        g.inventory = Some(crate::bin_relative_example());
    }
    crate::cmd::demo_replicas::check(a.replicas, g.database_url.as_deref())?;
    let inv = inventory::load(&g)?;
    // The demo keeps its own store unless one is named, so it never mixes with a real cluster's state;
    // that temporary one is removed on the way out.
    let scratch = Scratch::new()?;
    if g.data_dir.is_none() && g.database_url.is_none() {
        g.data_dir = Some(scratch.0.join("data"));
    }
    let spec = spec_from_inventory(&inv).map_err(Exit::usage)?;
    let ports = match a.port_offset {
        Some(0) => PortPlan::Standard,
        Some(n) => PortPlan::Offset(n),
        None => PortPlan::auto(),
    };
    let opts = SimOptions {
        ports,
        time_scale: a.time_scale,
        // What the demo runbooks' `verify` step reads (the in-band agent's view of each node).
        export_node_state: Some(scratch.0.join("node-state")),
        ..SimOptions::default()
    };
    let _ = DEMO_NODE_STATE.set(scratch.0.join("node-state"));
    let fleet = Fleet::start(spec, opts).await.map_err(crate::cmd::sim::start_error)?;
    let res = drive(&g, &a, &inv, &fleet, &scratch.0).await;
    fleet.shutdown().await;
    drop(scratch);
    res
}

async fn drive(
    g: &Global,
    a: &DemoArgs,
    inv: &lifeline_inventory::Inventory,
    fleet: &RunningFleet,
    scratch: &std::path::Path,
) -> CmdResult {
    let mut approve = None;
    let (l, server, banner) = if a.no_server {
        let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
        l.inventory_sync().await?;
        (l, None, None)
    } else {
        let (running, password) = start_server(g, a, inv, fleet, scratch).await?;
        let l = running.state.engine_as("demo").with_bmc_options(|o| o.fanout = 64);
        l.inventory_sync().await?;
        let token = second_shell_token(&running, scratch).await?;
        approve = Some(format!(
            "LIFELINE_TOKEN_FILE={} lifeline --server {} runbook approve",
            token.display(),
            running.url
        ));
        if g.json {
            let line = json!({ "server": {
                "url": running.url, "user": "admin", "password": password,
                "data_dir": g.data_dir, "control": fleet.control_url(), "token_file": token,
            } });
            outln!("{}", serde_json::to_string(&line)?);
        }
        let banner = format!(
            "server: {url} — user admin, one-time password {password}\n\
             data directory: {data}\n\
             from a second shell: inject a fault   lifeline sim fault --control {control} gpu-node-06 gpu-ecc=1\n\
             \x20                    approve a run    {approve} RUN",
            approve = approve.as_deref().unwrap_or_default(),
            url = running.url,
            data = g
                .data_dir
                .as_ref()
                .map_or_else(|| "(the configuration's)".into(), |d| d.display().to_string()),
            control = fleet.control_url(),
        );
        (l, Some(running), Some(banner))
    };
    let more = match &server {
        Some(first) if a.replicas > 1 => crate::cmd::demo_replicas::start_more(first, a.replicas).await?,
        _ => Vec::new(),
    };
    let urls: Vec<String> = server.iter().chain(&more).map(|r| r.url.clone()).collect();
    let view = View {
        server: server.as_ref().map(|r| &r.state),
        banner: banner.as_deref(),
        urls: &urls,
        approve: approve.as_deref(),
    };
    let res = sweep_loop(g, a, inv, fleet, &l, view).await;
    for r in more {
        let _ = r.stop().await;
    }
    if let Some(r) = server {
        let _ = r.stop().await;
    }
    // With a server, `l` shares its store and BMC pool: closed only after the server's ordered end (runs
    // stopped at a step boundary, outcomes recorded, the replica set left). Closed first, it pulled the
    // store from under runs still in flight ("recording delayed" at every demo exit).
    l.close().await;
    res
}

async fn sweep_loop(
    g: &Global,
    a: &DemoArgs,
    inv: &lifeline_inventory::Inventory,
    fleet: &RunningFleet,
    l: &lifeline_engine::Lifeline,
    view: View<'_>,
) -> CmdResult {
    let server = view.server;
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
    let mut seen_event = server_events_start(server).await;
    let mut runs_seen = std::collections::HashMap::new();
    let tty = std::io::stdout().is_terminal() && !g.json;
    let mut recent: Vec<String> = Vec::new();
    let stop = wait_for_shutdown();
    tokio::pin!(stop);
    let sweep_opts =
        SweepOptions { events: 1, per_bmc_timeout: Duration::from_secs(8), ..SweepOptions::default() };
    let mut correlator = server.and_then(lifeline_server::scheduler::sweeps::correlator);
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
        for (name, change) in tracker.track(l, &rows).await? {
            recent.push(format!("{} {name}: {}", chrono::Utc::now().format("%H:%M:%S"), change.message));
        }
        let mut faults = Vec::new();
        if let Some(st) = server {
            // The server's fault rules see the demo's rows through the sweep correlation, as `serve`'s
            // sweeps do (one fault on a shared part, not N node faults); the policy's decisions come back
            // as events. The demo sweeps every BMC itself, so its sweep is a whole round.
            if let Some(c) = correlator.as_mut() {
                use lifeline_server::scheduler::sweeps::correlate;
                let known = lifeline_server::faults::unresolved(st).await?;
                correlate::from_sweep(st, &rows, &known, c, correlate::Round::Whole).await;
            }
            for e in st.base.events_after(seen_event, 1000).await? {
                seen_event = e.id;
                if e.event.source == "policy" {
                    let at = chrono::DateTime::from_timestamp_millis(e.at_ms).unwrap_or_default();
                    recent.push(format!("{} {}", at.format("%H:%M:%S"), e.event.message));
                }
            }
            faults = st.base.faults(Some("open"), 1000).await?;
            if let Err(e) = in_band(st, l, inv, scratch_state(l), &rows).await {
                recent.push(format!("in-band checks: {}", e.chain()));
            }
            for line in run_lines(st, &mut runs_seen, view.approve).await {
                recent.push(line);
            }
        }
        let keep = recent.len().saturating_sub(14);
        recent.drain(..keep);
        if g.json {
            let line = json!({ "sweep": n, "rows": rows, "events": recent, "faults": faults });
            outln!("{}", serde_json::to_string(&line)?);
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
            if let Some(b) = view.banner {
                outln!("{b}");
            }
            if let Some(st) = server.filter(|_| view.urls.len() > 1) {
                outln!("{}", crate::cmd::demo_replicas::status_line(st, view.urls).await);
            }
            outln!("{}", sweep_table(&rows));
            if server.is_some() {
                outln!("open faults: {}", faults.len());
                for f in &faults {
                    outln!("  #{} {} {} {}: {}", f.id, f.severity, f.kind, f.device, f.message);
                }
            }
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
    Ok(Code::Ok)
}

/// Where the simulator exports each node's in-band state (what the agent would read on the node).
fn scratch_state(l: &lifeline_engine::Lifeline) -> Option<std::path::PathBuf> {
    let _ = l;
    DEMO_NODE_STATE.get().cloned()
}

static DEMO_NODE_STATE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The in-band agent's view, as the nodes' agents would report it to the server: every powered GPU node
/// that no run is recovering is checked from its exported state, and the server's `agent-report` rule
/// raises (or resolves) its fault. This is what sees a rail that is down, which no BMC reports.
async fn in_band(
    st: &lifeline_server::AppState,
    l: &lifeline_engine::Lifeline,
    inv: &lifeline_inventory::Inventory,
    dir: Option<std::path::PathBuf>,
    rows: &[lifeline_bmc::SweepRow],
) -> Result<(), EngineError> {
    let Some(dir) = dir else { return Ok(()) };
    let busy: std::collections::HashSet<String> = st
        .base
        .runs_in(lifeline_engine::ops::runs::ACTIVE_RUN_STATES)
        .await?
        .into_iter()
        .map(|r| r.target)
        .collect();
    let on: std::collections::HashSet<&str> = rows
        .iter()
        .filter(|r| r.power == Some(lifeline_types::PowerState::On))
        .map(|r| r.name.as_str())
        .collect();
    let source = lifeline_engine::ops::readmit::ReportSource::NodeState {
        dir,
        interval: Some(Duration::from_millis(20)),
    };
    let mut nodes = Vec::new();
    for d in inv.devices.iter().filter(|d| d.role == lifeline_types::Role::GpuNode) {
        // A node still booting is not failing: its agent is not up yet.
        if on.contains(d.name.as_str())
            && !busy.contains(d.name.as_str())
            && lifeline_engine::ops::wait::agent_up(d, &source).await.0
        {
            nodes.push(d.clone());
        }
    }
    for row in l.verify(&nodes, &source, None).await? {
        let Ok(v) = row.result else { continue };
        let report = serde_json::to_value(&v).unwrap_or_default();
        lifeline_server::faults::agent_report(st, &v.node, v.passed(), &report).await?;
    }
    Ok(())
}

/// An API token for the demo's admin in the scratch directory (0600), so a second shell can approve a
/// run through the server (`LIFELINE_TOKEN_FILE=… lifeline --server URL runbook approve RUN`).
async fn second_shell_token(
    running: &lifeline_server::Running,
    scratch: &std::path::Path,
) -> Result<std::path::PathBuf, Exit> {
    use std::os::unix::fs::OpenOptionsExt;
    let st = &running.state;
    let audit = st.base.with_identity(lifeline_engine::Identity::new("demo")).audit().await?;
    let made = lifeline_server::accounts::token_create(&st.base, &audit, "admin", None, None).await?;
    let path = scratch.join("token");
    let mut f =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
    std::io::Write::write_all(&mut f, format!("{}\n", made.token).as_bytes())?;
    Ok(path)
}

/// One line per run whose state changed since the last sweep: how it ended (state, duration, the
/// evidence that proved the recovery) or what it waits for (and the command that approves it).
async fn run_lines(
    st: &lifeline_server::AppState,
    seen: &mut std::collections::HashMap<String, String>,
    approve: Option<&str>,
) -> Vec<String> {
    let Ok(runs) = st.base.runs_recent(50).await else { return Vec::new() };
    let mut out = Vec::new();
    for r in runs.iter().rev() {
        if seen.get(&r.id).map(String::as_str) == Some(r.state.as_str()) {
            continue;
        }
        seen.insert(r.id.clone(), r.state.to_string());
        let at = chrono::Utc::now().format("%H:%M:%S");
        let head = format!("{at} run {} {} on {}", r.id, r.runbook, r.target);
        let line = match r.state.as_str() {
            "running" => format!("{head}: started"),
            "waiting-approval" => match approve {
                Some(cmd) => {
                    format!("{head}: WAITING FOR YOU — approve it from a second shell: {cmd} {}", r.id)
                }
                None => {
                    format!("{head}: WAITING FOR YOU — {}", r.reason.as_deref().unwrap_or("approval needed"))
                }
            },
            state => {
                let took =
                    r.ended_at_ms.unwrap_or(r.updated_at_ms).saturating_sub(r.created_at_ms) as f64 / 1000.0;
                let proof = match st.base.run_journal(&r.id).await {
                    Ok(j) => proof_of(&j),
                    Err(_) => String::new(),
                };
                let why = r.reason.as_deref().unwrap_or_default();
                format!("{head}: {} in {took:.1} s — {why}{proof}", state.to_uppercase())
            }
        };
        out.push(line);
    }
    out
}

/// The signals that proved (or disproved) a recovery: the boot wait's signal and each post-condition's
/// message, from the run's journal.
fn proof_of(journal: &[lifeline_engine::ops::runs::JournalRow]) -> String {
    let mut parts = Vec::new();
    for j in journal.iter().filter(|j| j.phase == "outcome") {
        let msg = j.detail.get("message").and_then(|m| m.as_str()).unwrap_or_default();
        if j.step == "os-up" || j.step == "fault-gone" || j.state != "ok" {
            parts.push(format!("{} {}: {msg}", j.step, j.state));
        }
    }
    if parts.is_empty() { String::new() } else { format!(" [{}]", parts.join("; ")) }
}

/// What the terminal view shows besides the sweep: the server's faults and its address.
#[derive(Clone, Copy)]
struct View<'a> {
    server: Option<&'a lifeline_server::AppState>,
    /// URL and the one-time admin password, repeated on every refresh (the screen is cleared).
    banner: Option<&'a str>,
    /// Every replica's URL (`--replicas`).
    urls: &'a [String],
    /// The command that approves a run from a second shell (without its run id).
    approve: Option<&'a str>,
}

/// The demo's scratch directory (store, credential files), removed when the demo ends however it ends.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, Exit> {
        let dir = std::env::temp_dir().join(format!(
            "lifeline-demo-{}-{}",
            std::process::id(),
            lifeline_server::auth::random_secret(6)
        ));
        std::fs::create_dir_all(&dir)?;
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The newest event id now: the view shows the policy decisions made from here on.
async fn server_events_start(server: Option<&lifeline_server::AppState>) -> i64 {
    let Some(st) = server else { return 0 };
    let mut after = 0;
    while let Ok(page) = st.base.events_after(after, 10_000).await {
        match page.last() {
            Some(e) => after = e.id,
            None => break,
        }
    }
    after
}

/// The demo's runbooks (the simulated fleet has no Slurm, so no drain or readmit steps): a GPU node with a
/// fault is cycled, then verified from the simulator's exported state; a node whose BMC stopped answering
/// is watched until it answers again, once an operator approves.
const DEMO_RUNBOOKS: &[(&str, &str)] = &[
    (
        "demo-gpu-node-recover",
        r#"# demo-gpu-node-recover
#
# Fault:       a GPU fault on a simulated node (the demo fleet has no scheduler to drain or readmit in).
# Touches:     the node's power (one cycle), verification.
# Never:       other nodes.
# Worst case:  the node is marked needs-human with the failing report.

name = "demo-gpu-node-recover"
description = "Demo: cycle a GPU node, wait for it, verify every rail and GPU (no scheduler in the demo)"
targets = ["gpu-node"]
fault = "GPU ECC / XID fault on a simulated node"
touches = "the node's power (one cycle), verification"
never-touches = "other nodes"
worst-case = "the node is marked needs-human with the failing report"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"
timeout = "5m"
on-failure = "escalate"

[[step]]
name = "power-on"
kind = "wait-for"
power = "on"
timeout = "5m"
on-failure = "escalate"

# The OS is up when the node says so (its agent, or a login prompt on its console), not when the BMC
# reports power on: verifying before the boot ends reads every rail down.
[[step]]
name = "os-up"
kind = "wait-for"
boot = "os-running"
timeout = "5m"
interval = "250ms"
on-failure = "escalate"

[[step]]
name = "verify"
kind = "verify"
on-failure = "escalate"

# Recovered only when the fault's own rule, evaluated again on a fresh read of the BMC, finds it gone.
[[verify]]
name = "fault-gone"
kind = "fault-cleared"
"#,
    ),
    (
        "demo-rail-check",
        r#"# demo-rail-check
#
# Fault:       the in-band agent reports a failing check (e.g. a backend rail down) on a simulated node.
# Touches:     nothing: a rail down is physical; after an operator approves (the hardware was seen to), the
#              node is verified again.
# Never:       power, the switches.
# Worst case:  the node is marked needs-human with the failing report.

name = "demo-rail-check"
description = "Demo: after an operator approves (cable or optic seen to), verify the node again in band"
targets = ["gpu-node"]
fault = "in-band check failing (rail down)"
touches = "nothing"
never-touches = "power, switches"
worst-case = "the node is marked needs-human with the failing report"

[[step]]
name = "hardware-seen-to"
kind = "wait-for"
boot = "os-running"
approve = "required"
timeout = "1m"
on-failure = "escalate"

[[step]]
name = "verify"
kind = "verify"
on-failure = "escalate"

[[verify]]
name = "fault-gone"
kind = "fault-cleared"
"#,
    ),
    (
        "demo-bmc-answers",
        r#"# demo-bmc-answers
#
# Fault:       a BMC that stopped answering (the demo clears it a few sweeps later).
# Touches:     nothing: it waits until the BMC answers again.
# Never:       the host's power.
# Worst case:  the run fails after its timeout.

name = "demo-bmc-answers"
description = "Demo: after an operator approves, wait until a BMC that stopped answering answers again"
targets = ["head-node", "gpu-node", "storage-server", "switch"]
fault = "BMC unreachable"
touches = "nothing"
never-touches = "the host's power"
worst-case = "the run fails after its timeout"

[[step]]
name = "bmc-answers"
kind = "wait-for"
bmc = "reachable"
timeout = "10m"

[[verify]]
name = "fault-gone"
kind = "fault-cleared"
fault = "bmc-unreachable"
"#,
    ),
];

/// What the demo's policy does when the configuration has no `[[fault-policy]]`: the recovery loop the
/// runbooks close (recover a node, watch a stuck BMC with approval, tell people about the rest).
fn demo_policy() -> Vec<lifeline_engine::FaultPolicy> {
    use lifeline_engine::{FaultPolicy, PolicyMode};
    let p = |kind: &str, runbook: Option<&str>, mode| FaultPolicy {
        kind: kind.into(),
        targets: Vec::new(),
        runbook: runbook.map(Into::into),
        mode,
        ladder: Vec::new(),
        attempt_window: None,
    };
    vec![
        p("health-critical", Some("demo-gpu-node-recover"), PolicyMode::Auto),
        p("sel-critical", Some("demo-gpu-node-recover"), PolicyMode::Auto),
        p("bmc-unreachable", Some("demo-bmc-answers"), PolicyMode::Approve),
        // A rail down is physical (a cable, an optic, a port): no OOB action fixes it, so a human approves
        // the check once the hardware is seen to.
        p("agent-report", Some("demo-rail-check"), PolicyMode::Approve),
        p("*", None, PolicyMode::Notify),
    ]
}

/// The inventory as the server must see it: each BMC and switch at the simulator's address and port, with
/// a credential file holding the password the simulator serves (kept in the demo's scratch directory).
fn simulated_inventory(
    inv: &lifeline_inventory::Inventory,
    fleet: &RunningFleet,
    scratch: &std::path::Path,
) -> Result<lifeline_inventory::Inventory, Exit> {
    use lifeline_sim::EndpointKind;
    use std::os::unix::fs::OpenOptionsExt;
    let creds = scratch.join("credentials");
    std::fs::create_dir_all(&creds)?;
    let secret = |name: &str, password: &str| -> Result<lifeline_types::CredentialRef, Exit> {
        let path = creds.join(name);
        let mut f =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
        std::io::Write::write_all(&mut f, format!("{password}\n").as_bytes())?;
        Ok(lifeline_types::CredentialRef::File(path))
    };
    let mut out = inv.clone();
    for d in &mut out.devices {
        let name = d.name.to_string();
        if let Some(b) = &mut d.bmc {
            let kind = match b.protocol {
                lifeline_types::BmcProtocol::Ipmi => EndpointKind::Ipmi,
                _ => EndpointKind::Redfish,
            };
            if let Some(e) = fleet.endpoint(&name, kind) {
                b.address = lifeline_inventory::Host::Ip(e.address);
                b.port = Some(e.port);
                b.credential = secret(&format!("{name}-bmc"), &e.password)?;
            }
        }
        if let Some(m) = &mut d.management
            && let Some(e) = fleet.endpoint(&name, EndpointKind::Ssh)
        {
            m.address = lifeline_inventory::Host::Ip(e.address);
            m.port = Some(e.port);
            m.credential = secret(&format!("{name}-ssh"), &e.password)?;
        }
    }
    Ok(out)
}

/// Starts the server over the simulated fleet (plain HTTP on loopback) and makes a one-time admin.
async fn start_server(
    g: &Global,
    a: &DemoArgs,
    inv: &lifeline_inventory::Inventory,
    fleet: &RunningFleet,
    scratch: &std::path::Path,
) -> Result<(lifeline_server::Running, String), Exit> {
    let settings = crate::cmd::settings(g);
    let mut cfg = lifeline_engine::config::load(&settings)?;
    if cfg.config.fault_policy.is_empty() {
        cfg.config.fault_policy = demo_policy();
        let dir = scratch.join("runbooks");
        std::fs::create_dir_all(&dir)?;
        for (name, text) in DEMO_RUNBOOKS {
            std::fs::write(dir.join(format!("{name}.toml")), text)?;
        }
        cfg.config.runbooks.dir = Some(dir);
    }
    // The demo drives the sweeps (its terminal view shows them); the server's own would double them.
    cfg.config.server.sweep_interval = Some("0s".into());
    let paths = lifeline_engine::Paths::resolve(&settings, &cfg);
    let base = lifeline_engine::Lifeline::from_parts(cfg, paths, lifeline_engine::Identity::new("server"))
        .with_inventory(simulated_inventory(inv, fleet, scratch)?)
        .with_bmc_options(|o| o.fanout = 64);
    base.open_store().await?;
    let audit = base.with_identity(lifeline_engine::Identity::new("demo")).audit().await?;
    let password = lifeline_server::auth::random_secret(12);
    let role = lifeline_server::Role::Admin;
    let made = match lifeline_server::accounts::user_add(&base, &audit, "admin", role, &password).await {
        Ok(_) => Ok(()),
        // A kept data dir (`--data-dir`) already has the admin: a new one-time password replaces the old.
        Err(_) => lifeline_server::accounts::user_passwd(&base, &audit, "admin", &password).await,
    };
    made?;
    let mut opts = lifeline_server::ServeOptions {
        settings,
        plain_http: true,
        listen: a.listen.clone(),
        runbook_env: lifeline_runbook::Env {
            reports: Some(lifeline_engine::ops::readmit::ReportSource::NodeState {
                dir: scratch.join("node-state"),
                interval: Some(Duration::from_millis(20)),
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let fixed = a.listen.is_some();
    if !fixed {
        opts.listen = Some(lifeline_server::serve::DEFAULT_LISTEN.into());
    }
    let running =
        match lifeline_server::start(base.with_identity(lifeline_engine::Identity::new("server")), &opts)
            .await
        {
            Err(lifeline_server::ServeError::Bind { .. }) if !fixed => {
                opts.listen = Some("127.0.0.1:0".into());
                lifeline_server::start(base, &opts).await
            }
            r => r,
        }
        .map_err(|e| match e {
            lifeline_server::ServeError::Engine(e) => Exit::from(e),
            e => Exit::usage(anyhow::anyhow!("{}", lifeline_engine::error_chain(&e))),
        })?;
    Ok((running, password))
}
