//! Runbook runs and their journal: the records the runbook executor keeps (a run row, a journal row before
//! and after every step, approvals) and the reads the front ends make of them.
//!
//! Why here and not in the executor: the engine owns the store, so every front end (the executor, the CLI,
//! the server) reads and writes runs through the same operations. The executor decides *what* to write and
//! *when* (intent before a step, outcome and the run's move in one transaction, nothing once its lease is
//! lost); these operations only carry each write to the store unchanged, so the executor's ordering is the
//! ordering the store sees.
//!
//! A run's state is a [`RunState`] on the way in: no caller can move a run to a word the API, the web
//! console and the guard would not know; the store writes its word (the one conversion, at its edge).

pub use lifeline_store::{
    ACTIVE_RUN_STATES, ApprovalRow, JournalRow, LeaseRow, NewJournal, RequestRow, RunRow,
};
pub use lifeline_types::{RunState, StepState};

use crate::context::Lifeline;
use crate::error::Result;

/// Milliseconds since the epoch, the clock every stored row carries (the store's own clock).
pub fn now_ms() -> i64 {
    lifeline_store::now_ms()
}

impl Lifeline {
    /// Records a new run (admitted, waiting for approval, or refused by the guard).
    pub async fn run_create(&self, run: &RunRow) -> Result<()> {
        Ok(self.store().await?.create_run(run).await?)
    }

    /// One run, if it exists.
    pub async fn run_record(&self, id: &str) -> Result<Option<RunRow>> {
        Ok(self.store().await?.run(id).await?)
    }

    /// The runs in any of `states` (e.g. [`RunState::ACTIVE`]).
    pub async fn runs_in(&self, states: &[RunState]) -> Result<Vec<RunRow>> {
        Ok(self.store().await?.runs_in(states).await?)
    }

    /// A run's journal rows after row `after` (0: all of it), oldest first.
    pub async fn run_journal_since(&self, id: &str, after: i64) -> Result<Vec<JournalRow>> {
        Ok(self.store().await?.journal_since(id, after).await?)
    }

    /// The newest `limit` runs, newest first.
    pub async fn runs_recent(&self, limit: i64) -> Result<Vec<RunRow>> {
        Ok(self.store().await?.runs(limit).await?)
    }

    /// A run's whole journal, oldest first.
    pub async fn run_journal(&self, id: &str) -> Result<Vec<JournalRow>> {
        self.run_journal_since(id, 0).await
    }

    /// Appends one journal row; returns its id.
    pub async fn run_journal_append(&self, row: &NewJournal) -> Result<i64> {
        Ok(self.store().await?.journal(row).await?)
    }

    /// Appends `row` and moves its run to `state` at step `next` in one transaction: a step's outcome and
    /// the run's move past it are never apart. `false`: the run had already ended (nothing written).
    pub async fn run_journal_and_move(
        &self,
        row: &NewJournal,
        state: RunState,
        next: i64,
        reason: Option<&str>,
    ) -> Result<bool> {
        Ok(self.store().await?.journal_and_set_state(row, state, next, reason).await?)
    }

    /// Moves a run to `state` at step `next`. `false`: the run had already ended.
    pub async fn run_set_state(
        &self,
        id: &str,
        state: RunState,
        next: i64,
        reason: Option<&str>,
    ) -> Result<bool> {
        Ok(self.store().await?.set_run_state(id, state, next, reason).await?)
    }

    /// Moves a run to `to` only while it is in `from` (a concurrent change wins). `false`: it was not.
    pub async fn run_set_state_from(
        &self,
        id: &str,
        from: RunState,
        to: RunState,
        next: i64,
        reason: Option<&str>,
    ) -> Result<bool> {
        Ok(self.store().await?.set_run_state_from(id, from, to, next, reason).await?)
    }

    /// Records an operator's decision on a step attempt. `false`: that attempt had a decision already.
    pub async fn run_approve_step(&self, a: &ApprovalRow) -> Result<bool> {
        Ok(self.store().await?.approve_step(a).await?)
    }

    /// The decisions recorded for a run's step attempts, oldest first.
    pub async fn run_approvals(&self, id: &str) -> Result<Vec<ApprovalRow>> {
        Ok(self.store().await?.approvals(id).await?)
    }

    /// The lease on `target` as the store has it now (expired or not): who drives a run, whether a
    /// driver still holds its fence.
    pub async fn target_lease(&self, target: &str) -> Result<Option<LeaseRow>> {
        Ok(self.store().await?.lease(target).await?)
    }

    /// The idempotency record of a request id (a step attempt's action), if the engine registered it.
    pub async fn request_record(&self, request_id: &str) -> Result<Option<RequestRow>> {
        Ok(self.store().await?.request(request_id).await?)
    }

    /// Stores an observation of `device` (`kind`: what was observed, e.g. a `needs-human` mark).
    pub async fn record_observation(
        &self,
        device: &str,
        kind: &str,
        value: &serde_json::Value,
    ) -> Result<()> {
        self.store().await?.observe(device, kind, value).await?;
        Ok(())
    }
}
