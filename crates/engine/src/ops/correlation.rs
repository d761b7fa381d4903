//! The records the fault correlation keeps in the store, written and read for the server's schedulers:
//! each replica's sweep batches and the decisions over them ([`crate::correlate::rounds`]), the switch
//! counters' kept reads, the restores already offered.
//!
//! Why here: the engine owns the store, and the replicas share these records through it (a decision
//! is made over every replica's batches; the next counters read compares with the previous read whoever
//! made it). The batches and decisions are observations of one series each (`device` =
//! [`SERIES`]), so reading a window of them is an index range, never a scan of the table.

use crate::context::Lifeline;
use crate::correlate::rounds::{Decision, SweepBatch};
use crate::error::Result;

/// The `device` of the correlation's own series in the observations table.
pub const SERIES: &str = "lifeline:correlation";
/// The observation kind of a replica's sweep batch.
pub const BATCH: &str = "sweep-batch";
/// The observation kind of a decision.
pub const DECISION: &str = "sweep-decision";
/// The observation kind of a switch's kept counters read.
pub const SWITCH_COUNTERS: &str = "switch-counters";

impl Lifeline {
    /// Keeps a replica's sweep batch for the decision over every replica's.
    pub async fn sweep_batch_keep(&self, b: &SweepBatch) -> Result<()> {
        let v = serde_json::to_value(b).map_err(|e| crate::EngineError::internal("sweep batch", e))?;
        Ok(self.store().await?.observe(SERIES, BATCH, &v).await?)
    }

    /// Keeps a decision (the batches it took).
    pub async fn sweep_decision_keep(&self, d: &Decision) -> Result<()> {
        let v = serde_json::to_value(d).map_err(|e| crate::EngineError::internal("sweep decision", e))?;
        Ok(self.store().await?.observe(SERIES, DECISION, &v).await?)
    }

    /// The batches and decisions kept since `since_ms`, oldest first. A record that does not parse (kept
    /// by another version) is left out with a warning.
    pub async fn sweep_rounds_since(&self, since_ms: i64) -> Result<(Vec<SweepBatch>, Vec<Decision>)> {
        let store = self.store().await?;
        let batches = store.observations_since(SERIES, BATCH, since_ms).await?;
        let decisions = store.observations_since(SERIES, DECISION, since_ms).await?;
        fn parse<T: serde::de::DeserializeOwned>(rows: Vec<lifeline_store::Observation>) -> Vec<T> {
            rows.into_iter()
                .filter_map(|o| match serde_json::from_value(o.value) {
                    Ok(x) => Some(x),
                    Err(e) => {
                        tracing::warn!(kind = %o.kind, at = o.observed_at_ms, "correlation record skipped: {e}");
                        None
                    }
                })
                .collect()
        }
        Ok((parse(batches), parse(decisions)))
    }

    /// Deletes the observations of `kind` older than `before_ms` but each device's newest (sweep rows,
    /// counters reads, the correlation's batches and decisions); how many went.
    pub async fn correlation_prune(&self, kind: &str, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.prune_observations(kind, before_ms).await?)
    }

    /// Deletes the finished work claims under `prefix` done before `before_ms` (old slots); how many.
    pub async fn correlation_slots_prune(&self, prefix: &str, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.prune_done_work(prefix, before_ms).await?)
    }

    /// Keeps a switch's counters read (the next reader's baseline, whichever replica it is).
    pub async fn switch_counters_keep(&self, switch: &str, read: &serde_json::Value) -> Result<()> {
        Ok(self.store().await?.observe(switch, SWITCH_COUNTERS, read).await?)
    }

    /// The switch's newest kept counters read, by any replica.
    pub async fn switch_counters_previous(&self, switch: &str) -> Result<Option<serde_json::Value>> {
        Ok(self.store().await?.latest_observation(switch, SWITCH_COUNTERS).await?.map(|o| o.value))
    }
}

impl Lifeline {
    /// The run of `runbook` on `target` that makes a new offer of it needless: one still waiting for
    /// approval or running, or one last moved (created, approved, ended) at or after `since_ms` (approved and done, failed,
    /// rejected: an operator has answered that offer lately). Reads the active runs and the newest 1,000.
    pub async fn offer_answered_since(
        &self,
        target: &str,
        runbook: &str,
        since_ms: i64,
    ) -> Result<Option<lifeline_store::RunRow>> {
        let store = self.store().await?;
        let mine = |r: &lifeline_store::RunRow| r.target == target && r.runbook == runbook;
        if let Some(r) = store.runs_in(lifeline_store::ACTIVE_RUN_STATES).await?.into_iter().find(mine) {
            return Ok(Some(r));
        }
        Ok(store
            .runs(1000)
            .await?
            .into_iter()
            .find(|r| mine(r) && r.updated_at_ms.max(r.ended_at_ms.unwrap_or(0)) >= since_ms))
    }
}
