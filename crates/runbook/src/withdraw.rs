//! A run that a fault started and that still waits for approval before its first step is withdrawn
//! when that fault is resolved.
//!
//! Why: the operator who opens the console at 3 a.m. should not be asked to approve a recovery for a
//! fault that is gone (a BMC that answers again, a rail back up). Nothing was done, so nothing is left
//! half-done: the run ends `aborted`, saying which fault cleared, journaled and audited. A run that has
//! acted (any step intent in its journal) is left alone: what it did still has to be finished or
//! proven by a person.

use lifeline_engine::Outcome;
use lifeline_engine::ops::runs::RunState;
use lifeline_types::AuditAction;

use crate::error::Result;
use crate::exec::Executor;
use crate::exec::run_event;

impl Executor {
    /// Withdraws the runs waiting for approval before their first step whose cause was the fault
    /// (`kind` on `device`) just resolved; returns their ids.
    pub async fn withdraw_for_resolved(&self, kind: &str, device: &str) -> Result<Vec<String>> {
        let mut withdrawn = Vec::new();
        for run in self.base.runs_in(&[RunState::WaitingApproval]).await? {
            let cause = run.vars.get("fault-kind").and_then(|v| v.as_str()).unwrap_or_default();
            if run.target != device || cause != kind || run.next_step != 0 {
                continue;
            }
            let journal = self.base.run_journal(&run.id).await?;
            if journal.iter().any(|j| j.phase == "intent") {
                continue;
            }
            let fault = run.vars.get("fault").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let reason = format!(
                "withdrawn: fault {fault} ({kind}) on {device} cleared before approval; nothing was done"
            );
            // Only from `waiting-approval`: an approval that landed meanwhile wins.
            if !self
                .base
                .run_set_state_from(&run.id, RunState::WaitingApproval, RunState::Aborted, 0, Some(&reason))
                .await?
            {
                continue;
            }
            let detail = serde_json::json!({ "by": self.base.actor(), "reason": reason, "fault": fault });
            self.base.run_journal_append(&run_event(&run.id, 0, RunState::Aborted.as_str(), detail)).await?;
            self.base
                .audit()
                .await?
                .record(
                    AuditAction::RunbookWithdraw,
                    &run.target,
                    Outcome::Ok,
                    Some(&run.id),
                    serde_json::json!({ "runbook": run.runbook, "fault": fault, "kind": kind }),
                )
                .await?;
            withdrawn.push(run.id);
        }
        Ok(withdrawn)
    }
}
