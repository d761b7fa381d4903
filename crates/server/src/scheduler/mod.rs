//! Unattended work: scheduled switch backups, fleet sweeps on an interval (power, health and the newest SEL
//! entries into observations and events, through the fault rules), and the always-on console logger.
//! Every job stops when the server's shutdown token is cancelled; the time source is the state's clock.
//! Several replicas on one database share the work through the store ([`crate::replica`]): the
//! membership heartbeat starts first, so that every job sees this replica in the live set.

pub mod backups;
pub mod bios_drift;
pub mod cabling;
pub mod consoles;
pub mod event_keep;
pub mod event_owner;
pub mod events;
pub mod sweeps;
pub mod switch_counters;

use std::time::Duration;

use tokio::task::JoinSet;

use crate::state::AppState;

/// How often the backup scheduler looks at the clock.
pub const BACKUP_TICK: Duration = Duration::from_secs(5);

/// Starts every job; they end when `state.shutdown` is cancelled.
pub async fn start(state: &AppState, jobs: &mut JoinSet<()>) {
    heartbeat(state).await;
    // Switch-side evidence (counters, config changes) to the fault correlation of the console intake.
    let (evidence_tx, evidence_rx) = tokio::sync::mpsc::channel(1024);
    let backup_evidence = evidence_tx.clone();
    let s = state.clone();
    jobs.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(crate::replica::HEARTBEAT) => {}
                _ = s.shutdown.cancelled() => break,
            }
            heartbeat(&s).await;
            // Refused logins folded in windows that ended since.
            crate::api::session::audit_refused(&s, s.refused_logins.due(false)).await;
        }
    });
    let s = state.clone();
    jobs.spawn(async move {
        // A backup whose diff touches a port's MTU, PFC, QoS or LAG is evidence for the correlation.
        let mut b = backups::BackupScheduler::with_evidence(backup_evidence);
        loop {
            if let Err(e) = b.tick(&s).await {
                tracing::warn!("backup scheduler: {}", e.chain());
            }
            tokio::select! {
                _ = s.replica.nap(BACKUP_TICK) => {}
                _ = s.shutdown.cancelled() => break,
            }
        }
    });
    jobs.spawn(crate::probation::run(state.clone()));
    if let Some(every) = cabling::interval(state) {
        let s = state.clone();
        jobs.spawn(async move { cabling::run_every(&s, every).await });
    }
    if let Some(every) = sweeps::interval(state) {
        let s = state.clone();
        jobs.spawn(async move { sweeps::run_every(&s, every).await });
    }
    if let Some(every) = bios_drift::interval(state) {
        jobs.spawn(bios_drift::run_every(state.clone(), every));
    }
    if let Some(every) = switch_counters::interval(state) {
        jobs.spawn(switch_counters::run_every(state.clone(), every, evidence_tx));
    }
    if state.base.config.config.server.console_logging.unwrap_or(true) {
        // What the logged consoles print becomes faults, correlated across devices (subscribed before the
        // first console opens, so nothing printed is missed).
        jobs.spawn(crate::faults::console_intake(state.clone(), state.consoles.findings(), evidence_rx));
        jobs.spawn(consoles::run(state.clone()));
    }
    if let Err(e) = events::start(state, jobs).await {
        state.problem("BMC events", &format!("{}; not received", e.chain()));
    }
}

/// Every BMC of the inventory whose device `keep` accepts, credentials resolved. A BMC whose credential
/// does not resolve is left out and described in the returned problems: one bad reference must not stop
/// the sweeps or the event intake of the whole fleet (it did, silently).
pub fn each_bmc(
    s: &AppState,
    keep: impl Fn(&lifeline_inventory::Device) -> bool,
) -> Result<(lifeline_engine::BmcSelection, Vec<String>), lifeline_engine::EngineError> {
    let inv = s.base.inventory()?;
    let names: Vec<String> =
        inv.devices.iter().filter(|d| d.bmc.is_some() && keep(d)).map(|d| d.name.to_string()).collect();
    if names.is_empty() {
        return Ok((Default::default(), Vec::new()));
    }
    match s.base.select_bmcs(&names, &[], false) {
        Ok(sel) => Ok((sel, Vec::new())),
        Err(lifeline_engine::EngineError::Credentials { .. }) => {
            // Only now one by one (a linear look-up each): the common case stays one pass.
            let mut sel = lifeline_engine::BmcSelection::default();
            let mut problems = Vec::new();
            for n in names {
                match s.base.select_bmcs(std::slice::from_ref(&n), &[], false) {
                    Ok(one) => sel.bmcs.extend(one.bmcs),
                    Err(e) => problems.push(e.chain()),
                }
            }
            Ok((sel, problems))
        }
        Err(e) => Err(e),
    }
}

async fn heartbeat(s: &AppState) {
    let info = serde_json::json!({ "version": env!("CARGO_PKG_VERSION") });
    match s.replica.heartbeat(&info).await {
        Ok(live) => s.metrics.replicas.store(live.len() as u64, std::sync::atomic::Ordering::Relaxed),
        // Keeps the last live set: a store hiccup does not reshuffle the work.
        Err(e) => tracing::warn!("replica heartbeat: {}", e.chain()),
    }
}
