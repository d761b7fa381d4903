//! What the fault policy reads of the runbook runs before it answers a fault: whether a run already
//! answers the device (one recovery per device at a time), and the device's earlier attempts by the
//! policy (what an escalation ladder counts).
//!
//! Why in the engine: "a run is still in progress" and "an attempt counts" are rules about stored runs;
//! spelled here once, the server's policy, its responder and its restore offers read them alike.

use crate::budget::Attempt;
use crate::context::Lifeline;
use crate::error::Result;
use crate::ops::runs::{ACTIVE_RUN_STATES, RunRow};

/// Runs read when counting a device's attempts (the newest first).
const RECENT_RUNS: i64 = 100_000;

impl Lifeline {
    /// The runs still in progress (running, or waiting for an approval).
    pub async fn active_runs(&self) -> Result<Vec<RunRow>> {
        self.runs_in(ACTIVE_RUN_STATES).await
    }

    /// A run in progress on `target`, if one is.
    pub async fn active_run_on(&self, target: &str) -> Result<Option<RunRow>> {
        Ok(self.active_runs().await?.into_iter().find(|r| r.target == target))
    }

    /// The runs `actor` started on `device` that the guard admitted (a refused run did nothing), newest
    /// first, as the ladder's attempts.
    pub async fn attempts_by(&self, actor: &str, device: &str) -> Result<Vec<Attempt>> {
        Ok(self
            .runs_recent(RECENT_RUNS)
            .await?
            .into_iter()
            .filter(|r| r.target == device && r.actor == actor && r.state.as_str() != "refused")
            .map(|r| Attempt { run: r.id, runbook: r.runbook, at_ms: r.created_at_ms })
            .collect())
    }
}
