//! Runbook runs, their step journal and approvals. The journal is append-only: a row before every step
//! (intent) and after it (outcome), so a run killed at any point can be resumed from what the store knows.

use lifeline_types::RunState;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub id: String,
    pub runbook: String,
    pub target: String,
    pub rack: Option<String>,
    pub role: Option<String>,
    pub actor: String,
    pub vars: serde_json::Value,
    /// The runbook's text when the run started.
    pub definition: String,
    pub digest: String,
    /// Kept as its word; a word this version does not know fails the read.
    pub state: RunState,
    pub next_step: i64,
    pub reason: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub ended_at_ms: Option<i64>,
}

/// One journal row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRow {
    pub id: i64,
    pub run_id: String,
    pub step_index: i64,
    pub step: String,
    pub attempt: i64,
    /// `intent`, `outcome`, `decision`, `run`.
    pub phase: String,
    pub state: String,
    pub at_ms: i64,
    pub request_id: Option<String>,
    pub detail: serde_json::Value,
    pub evidence: serde_json::Value,
}

/// A journal row to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewJournal {
    pub run_id: String,
    pub step_index: i64,
    pub step: String,
    pub attempt: i64,
    pub phase: String,
    pub state: String,
    pub request_id: Option<String>,
    pub detail: serde_json::Value,
    pub evidence: serde_json::Value,
}

/// An operator's approval of one step attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub run_id: String,
    pub step_index: i64,
    pub attempt: i64,
    pub approver: String,
    /// `run` or `skip`.
    pub decision: String,
    pub at_ms: i64,
}

/// Run states that still occupy their target (and count against the blast-radius guard): [`RunState::ACTIVE`].
pub const ACTIVE_RUN_STATES: &[RunState] = RunState::ACTIVE;

const RUN_COLUMNS: &str = "id, runbook, target, rack, role, actor, vars_json, definition, digest, state, \
                           next_step, reason, created_at, updated_at, ended_at";

fn json(s: &str, op: &'static str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(s).map_err(|source| StoreError::Json { op, source })
}

fn run_row(r: &sqlx::any::AnyRow) -> Result<RunRow, StoreError> {
    let vars: String = r.try_get("vars_json").op("run.vars")?;
    Ok(RunRow {
        id: r.try_get("id").op("run.id")?,
        runbook: r.try_get("runbook").op("run.runbook")?,
        target: r.try_get("target").op("run.target")?,
        rack: r.try_get("rack").op("run.rack")?,
        role: r.try_get("role").op("run.role")?,
        actor: r.try_get("actor").op("run.actor")?,
        vars: json(&vars, "run.vars")?,
        definition: r.try_get("definition").op("run.definition")?,
        digest: r.try_get("digest").op("run.digest")?,
        state: r
            .try_get::<String, _>("state")
            .op("run.state")?
            .parse()
            .map_err(|source| StoreError::Word { op: "run.state", source })?,
        next_step: r.try_get("next_step").op("run.next_step")?,
        reason: r.try_get("reason").op("run.reason")?,
        created_at_ms: r.try_get("created_at").op("run.created_at")?,
        updated_at_ms: r.try_get("updated_at").op("run.updated_at")?,
        ended_at_ms: r.try_get("ended_at").op("run.ended_at")?,
    })
}

fn journal_row(r: &sqlx::any::AnyRow) -> Result<JournalRow, StoreError> {
    let detail: String = r.try_get("detail_json").op("journal.detail")?;
    let evidence: String = r.try_get("evidence_json").op("journal.evidence")?;
    Ok(JournalRow {
        id: r.try_get("id").op("journal.id")?,
        run_id: r.try_get("run_id").op("journal.run_id")?,
        step_index: r.try_get("step_index").op("journal.step_index")?,
        step: r.try_get("step").op("journal.step")?,
        attempt: r.try_get("attempt").op("journal.attempt")?,
        phase: r.try_get("phase").op("journal.phase")?,
        state: r.try_get("state").op("journal.state")?,
        at_ms: r.try_get("at").op("journal.at")?,
        request_id: r.try_get("request_id").op("journal.request_id")?,
        detail: json(&detail, "journal.detail")?,
        evidence: json(&evidence, "journal.evidence")?,
    })
}

fn is_terminal(state: RunState) -> bool {
    !state.in_progress()
}

impl Store {
    /// Records a new run (the caller has already decided it may start).
    pub async fn create_run(&self, run: &RunRow) -> Result<(), StoreError> {
        let q = self.sql(&format!(
            "INSERT INTO runbook_runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        ));
        sqlx::query(&q)
            .bind(run.id.clone())
            .bind(run.runbook.clone())
            .bind(run.target.clone())
            .bind(run.rack.clone())
            .bind(run.role.clone())
            .bind(run.actor.clone())
            .bind(run.vars.to_string())
            .bind(run.definition.clone())
            .bind(run.digest.clone())
            .bind(run.state.as_str().to_owned())
            .bind(run.next_step)
            .bind(run.reason.clone())
            .bind(run.created_at_ms)
            .bind(run.updated_at_ms)
            .bind(run.ended_at_ms)
            .execute(&self.pool)
            .await
            .op("run.create")?;
        self.touched();
        Ok(())
    }

    pub async fn run(&self, id: &str) -> Result<Option<RunRow>, StoreError> {
        let q = self.sql(&format!("SELECT {RUN_COLUMNS} FROM runbook_runs WHERE id = ?"));
        let row = sqlx::query(&q).bind(id.to_owned()).fetch_optional(&self.pool).await.op("run.get")?;
        row.as_ref().map(run_row).transpose()
    }

    /// Newest first.
    pub async fn runs(&self, limit: i64) -> Result<Vec<RunRow>, StoreError> {
        let q =
            self.sql(&format!("SELECT {RUN_COLUMNS} FROM runbook_runs ORDER BY created_at DESC, id LIMIT ?"));
        let rows = sqlx::query(&q).bind(limit).fetch_all(&self.pool).await.op("run.list")?;
        rows.iter().map(run_row).collect()
    }

    /// Runs in any of `states`, oldest first.
    pub async fn runs_in(&self, states: &[RunState]) -> Result<Vec<RunRow>, StoreError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; states.len()].join(", ");
        let q = self.sql(&format!(
            "SELECT {RUN_COLUMNS} FROM runbook_runs WHERE state IN ({marks}) ORDER BY created_at"
        ));
        let mut query = sqlx::query(&q);
        for s in states {
            query = query.bind(s.as_str().to_owned());
        }
        let rows = query.fetch_all(&self.pool).await.op("run.list_in")?;
        rows.iter().map(run_row).collect()
    }

    /// Moves a run to `state` (and the step to run next). Terminal states stamp `ended_at`. Returns false
    /// when the run was already in a terminal state (an abort that came first wins).
    pub async fn set_run_state(
        &self,
        id: &str,
        state: RunState,
        next_step: i64,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let moved = self.update_run_state(&self.pool, id, state, next_step, reason).await?;
        self.touched();
        Ok(moved)
    }

    /// Moves a run from exactly `from` to `to` (terminal states stamp `ended_at`); false when the run is no
    /// longer `from` (an approval or an abort that came first wins).
    pub async fn set_run_state_from(
        &self,
        id: &str,
        from: RunState,
        to: RunState,
        next_step: i64,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let ended = if is_terminal(to) { Some(now) } else { None };
        let q = self.sql(
            "UPDATE runbook_runs SET state = ?, next_step = ?, reason = ?, updated_at = ?, ended_at = ? \
             WHERE id = ? AND state = ?",
        );
        let done = sqlx::query(&q)
            .bind(to.as_str().to_owned())
            .bind(next_step)
            .bind(reason.map(str::to_owned))
            .bind(now)
            .bind(ended)
            .bind(id.to_owned())
            .bind(from.as_str().to_owned())
            .execute(&self.pool)
            .await
            .op("run.set_state_from")?;
        self.touched();
        Ok(done.rows_affected() == 1)
    }

    /// Appends a journal row; returns its id.
    pub async fn journal(&self, j: &NewJournal) -> Result<i64, StoreError> {
        let id = self.insert_journal(&self.pool, j).await?;
        self.touched();
        Ok(id)
    }

    /// Appends a step's outcome row and moves the run on (`set_run_state`) in one transaction: a process
    /// killed between two separate writes left an outcome with the run still pointing at its step, and the
    /// resumed run did that step again (a second power cycle). The row is kept even when the run had
    /// already ended (an abort that came first wins); returns whether the run moved.
    pub async fn journal_and_set_state(
        &self,
        j: &NewJournal,
        state: RunState,
        next_step: i64,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await.op("journal.outcome.begin")?;
        self.insert_journal(&mut *tx, j).await?;
        let moved = self.update_run_state(&mut *tx, &j.run_id, state, next_step, reason).await?;
        tx.commit().await.op("journal.outcome.commit")?;
        self.touched();
        Ok(moved)
    }

    async fn update_run_state<'c, E>(
        &self,
        ex: E,
        id: &str,
        state: RunState,
        next_step: i64,
        reason: Option<&str>,
    ) -> Result<bool, StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let now = now_ms();
        let ended = if is_terminal(state) { Some(now) } else { None };
        let marks = vec!["?"; ACTIVE_RUN_STATES.len()].join(", ");
        let q = self.sql(&format!(
            "UPDATE runbook_runs SET state = ?, next_step = ?, reason = ?, updated_at = ?, ended_at = ? \
             WHERE id = ? AND state IN ({marks})"
        ));
        let mut query = sqlx::query(&q)
            .bind(state.as_str().to_owned())
            .bind(next_step)
            .bind(reason.map(str::to_owned))
            .bind(now)
            .bind(ended)
            .bind(id.to_owned());
        for s in ACTIVE_RUN_STATES {
            query = query.bind(s.as_str().to_owned());
        }
        let done = query.execute(ex).await.op("run.set_state")?;
        Ok(done.rows_affected() == 1)
    }

    async fn insert_journal<'c, E>(&self, ex: E, j: &NewJournal) -> Result<i64, StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        let q = self.sql(
            "INSERT INTO runbook_journal (run_id, step_index, step, attempt, phase, state, at, request_id, \
             detail_json, evidence_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(j.run_id.clone())
            .bind(j.step_index)
            .bind(j.step.clone())
            .bind(j.attempt)
            .bind(j.phase.clone())
            .bind(j.state.clone())
            .bind(now_ms())
            .bind(j.request_id.clone())
            .bind(j.detail.to_string())
            .bind(j.evidence.to_string())
            .fetch_one(ex)
            .await
            .op("journal.insert")?;
        row.try_get::<i64, _>("id").op("journal.id")
    }

    /// A run's journal rows with id greater than `after`, in order.
    pub async fn journal_since(&self, run_id: &str, after: i64) -> Result<Vec<JournalRow>, StoreError> {
        let q = self.sql(
            "SELECT id, run_id, step_index, step, attempt, phase, state, at, request_id, detail_json, \
             evidence_json FROM runbook_journal WHERE run_id = ? AND id > ? ORDER BY id",
        );
        let rows = sqlx::query(&q)
            .bind(run_id.to_owned())
            .bind(after)
            .fetch_all(&self.pool)
            .await
            .op("journal.select")?;
        rows.iter().map(journal_row).collect()
    }

    /// Records an approval; a second approval of the same attempt keeps the first (returns false).
    pub async fn approve_step(&self, a: &ApprovalRow) -> Result<bool, StoreError> {
        let q = self.sql(
            "INSERT INTO runbook_approvals (run_id, step_index, attempt, approver, decision, at) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, step_index, attempt) DO NOTHING",
        );
        let done = sqlx::query(&q)
            .bind(a.run_id.clone())
            .bind(a.step_index)
            .bind(a.attempt)
            .bind(a.approver.clone())
            .bind(a.decision.clone())
            .bind(a.at_ms)
            .execute(&self.pool)
            .await
            .op("approval.insert")?;
        self.touched();
        Ok(done.rows_affected() == 1)
    }

    pub async fn approvals(&self, run_id: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        let q = self.sql(
            "SELECT run_id, step_index, attempt, approver, decision, at FROM runbook_approvals \
             WHERE run_id = ? ORDER BY at",
        );
        let rows =
            sqlx::query(&q).bind(run_id.to_owned()).fetch_all(&self.pool).await.op("approval.select")?;
        rows.iter()
            .map(|r| {
                Ok(ApprovalRow {
                    run_id: r.try_get("run_id").op("approval.run_id")?,
                    step_index: r.try_get("step_index").op("approval.step_index")?,
                    attempt: r.try_get("attempt").op("approval.attempt")?,
                    approver: r.try_get("approver").op("approval.approver")?,
                    decision: r.try_get("decision").op("approval.decision")?,
                    at_ms: r.try_get("at").op("approval.at")?,
                })
            })
            .collect()
    }
}
