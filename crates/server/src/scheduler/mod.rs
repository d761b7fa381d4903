//! Unattended work: scheduled switch backups, fleet sweeps on an interval (power, health and the newest SEL
//! entries into observations and events, through the fault rules), and the always-on console logger.
//! Every job stops when the server's shutdown token is cancelled; the time source is the state's clock.
//! Several replicas on one database share the work through the store ([`crate::replica`]): the
//! membership heartbeat starts first, so that every job sees this replica in the live set.

pub mod backups;
pub mod consoles;
pub mod event_owner;
pub mod events;
pub mod sweeps;

use std::time::Duration;

use tokio::task::JoinSet;

use crate::state::AppState;

/// How often the backup scheduler looks at the clock.
pub const BACKUP_TICK: Duration = Duration::from_secs(5);

/// Starts every job; they end when `state.shutdown` is cancelled.
pub async fn start(state: &AppState, jobs: &mut JoinSet<()>) {
    heartbeat(state).await;
    let s = state.clone();
    jobs.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(crate::replica::HEARTBEAT) => {}
                _ = s.shutdown.cancelled() => break,
            }
            heartbeat(&s).await;
        }
    });
    let s = state.clone();
    jobs.spawn(async move {
        let mut b = backups::BackupScheduler::default();
        loop {
            if let Err(e) = b.tick(&s).await {
                tracing::warn!("backup scheduler: {}", e.chain());
            }
            tokio::select! {
                _ = tokio::time::sleep(BACKUP_TICK) => {}
                _ = s.shutdown.cancelled() => break,
            }
        }
    });
    if let Some(every) = sweeps::interval(state) {
        let s = state.clone();
        jobs.spawn(async move { sweeps::run_every(&s, every).await });
    }
    if state.base.config.config.server.console_logging.unwrap_or(true) {
        jobs.spawn(consoles::run(state.clone()));
    }
    if let Err(e) = events::start(state, jobs).await {
        tracing::warn!("BMC events: {}; not received", e.chain());
    }
}

async fn heartbeat(s: &AppState) {
    let info = serde_json::json!({ "version": env!("CARGO_PKG_VERSION") });
    match s.replica.heartbeat(&info).await {
        Ok(live) => s.metrics.replicas.store(live.len() as u64, std::sync::atomic::Ordering::Relaxed),
        // Keeps the last live set: a store hiccup does not reshuffle the work.
        Err(e) => tracing::warn!("replica heartbeat: {e}"),
    }
}
