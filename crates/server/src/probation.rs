//! Probation in the server (the rules and the recording are `lifeline_engine::probation`): a fault that
//! opens on a node on probation is a recurrence and drains it again before the fault policy decides, and
//! the nodes on probation are checked in band every `[probation] check-interval` (one replica per slot).
//! The schedulers and the report source are the runbooks' (`lifeline serve --slurm-conf … --node-state …`).

use std::time::Duration;

use lifeline_engine::ops::fault_records::FaultRow;
use lifeline_engine::ops::readmit::{ReportSource, schedulers};
use lifeline_engine::{EngineError, Identity};

use crate::state::AppState;

/// The actor of probation's automatic steps (recurrences, checks, their drains).
pub const PROBATION_ACTOR: &str = "probation";

/// How often the check job looks for due checks (each node's check is due every `check-interval`).
const TICK: Duration = Duration::from_secs(30);

/// A newly opened fault on a node on probation: recorded as a recurrence and the node drained again.
pub async fn on_fault(s: &AppState, f: &FaultRow) {
    if let Err(e) = recur(s, f).await {
        tracing::warn!(fault = f.id, device = %f.device, "probation: {}", e.chain());
    }
}

async fn recur(s: &AppState, f: &FaultRow) -> Result<(), EngineError> {
    // Only a node on probation can recur; most faults stop here without the inventory.
    if !s.base.on_probation(&f.device).await? {
        return Ok(());
    }
    let inv = s.base.inventory()?;
    let Some(d) = inv.devices.iter().find(|d| d.name.as_str() == f.device) else { return Ok(()) };
    let env = s.runbooks.env();
    let scheds = match schedulers(&env.schedulers).await {
        Ok(sc) => Some(sc),
        Err(e) => {
            tracing::warn!(device = %f.device, "probation: recurrence recorded, not drained: {}", e.chain());
            None
        }
    };
    let l = s.base.with_identity(Identity::new(PROBATION_ACTOR));
    if let Some(r) = l.recurrence(d, &f.kind, Some(f.id), &f.message, scheds.as_ref()).await? {
        tracing::warn!(device = %f.device, "{}", r.message);
    }
    Ok(())
}

/// Runs the due probation checks until shutdown; does nothing when probation is disabled.
pub async fn run(s: AppState) {
    let settings = match s.base.probation_settings() {
        Ok(st) if st.enabled() => st,
        Ok(_) => return,
        Err(e) => {
            tracing::warn!("probation checks disabled: {}", e.chain());
            return;
        }
    };
    let tick = TICK.min(settings.check_interval);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = s.shutdown.cancelled() => break,
        }
        if let Err(e) = check_once(&s, tick).await {
            tracing::warn!("probation check: {}", e.chain());
        }
    }
}

async fn check_once(s: &AppState, tick: Duration) -> Result<(), EngineError> {
    if !s.base.any_on_probation().await? {
        return Ok(());
    }
    let slot = lifeline_engine::ops::runs::now_ms() / i64::try_from(tick.as_millis()).unwrap_or(1).max(1);
    let Some(lease) = s.replica.claim(&format!("probation-check:{slot}")).await? else { return Ok(()) };
    let env = s.runbooks.env();
    let source = env.reports.clone().unwrap_or(ReportSource::Ssh {
        command: "lifeline-agent check --policy /dev/stdin --json".into(),
        options: Vec::new(),
    });
    let scheds = schedulers(&env.schedulers).await.ok();
    let l = s.base.with_identity(Identity::new(PROBATION_ACTOR));
    let rows = l.probation_check(&source, scheds.as_ref(), false).await;
    lease.finish(if rows.is_ok() { "done" } else { "failed" }).await;
    for r in rows? {
        match r.result {
            Ok(c) => tracing::info!(node = %c.node, "probation check: {}: {}", c.outcome, c.message),
            Err(e) => tracing::warn!(node = %r.target, "probation check: {}", e.chain()),
        }
    }
    Ok(())
}
