//! An incident: one fault record and everything done about it, read together so that every front end
//! tells the same story. "Done about it" is decided here, once: the runs the fault started (their `fault`
//! variable), each with its step journal and approvals; the audited actions tied to those runs or to the
//! fault, and every other audited action on the device while the incident was open (an operator's power
//! cycle counts as much as a runbook's); and the console log around each power action, where the log has
//! it. Read-only: nothing is audited, nothing leased.

use chrono::{DateTime, Utc};
use lifeline_store::{ApprovalRow, AuditRow, FaultRow, JournalRow, RunRow};
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};

/// How many runs are searched for the fault's own (newest first).
const RUNS_SEARCHED: i64 = 10_000;
/// How many of the device's newest audit rows are searched.
const AUDIT_SEARCHED: i64 = 5_000;
/// The console excerpt around an action: from this long before it…
const CONSOLE_BEFORE_MS: i64 = 10_000;
/// …to this long after it.
const CONSOLE_AFTER_MS: i64 = 30_000;
/// At most this many log records per excerpt (the first ones after the window opens).
const CONSOLE_RECORDS: usize = 200;
/// At most this many bytes of console text per excerpt.
const CONSOLE_BYTES: usize = 8 * 1024;

/// One run the fault started, with what its journal and approvals say.
#[derive(Debug, Clone, Serialize)]
pub struct IncidentRun {
    pub run: RunRow,
    pub journal: Vec<JournalRow>,
    pub approvals: Vec<ApprovalRow>,
}

/// The device's console around one audited action.
#[derive(Debug, Clone, Serialize)]
pub struct ConsoleExcerpt {
    /// The audit row's id the excerpt surrounds.
    pub audit_id: i64,
    pub action: String,
    /// When the action was audited.
    pub at_ms: i64,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// First record's time; `None` when the log holds nothing in the window.
    pub first: Option<DateTime<Utc>>,
    /// What `lifeline console log` prints for the window (cut at [`CONSOLE_BYTES`]).
    pub text: String,
    pub truncated: bool,
}

/// [`Lifeline::incident`]'s answer.
#[derive(Debug, Clone, Serialize)]
pub struct IncidentRecord {
    pub fault: FaultRow,
    /// When the incident ended: the fault's resolution, else `None` (still open).
    pub resolved_at_ms: Option<i64>,
    /// Oldest first.
    pub runs: Vec<IncidentRun>,
    /// Oldest first; approvals of the runs above are in their `approvals`, not here.
    pub actions: Vec<AuditRow>,
    /// One per power action in `actions` whose window the console log covers (possibly empty text).
    pub console: Vec<ConsoleExcerpt>,
}

/// Whether an audit row belongs to the incident: tied to one of its runs or to the fault by name, or
/// done on the device between the fault's opening and the incident's end.
fn belongs(a: &AuditRow, fault: i64, runs: &[String], window: (i64, i64)) -> bool {
    let e = &a.entry;
    let tied_run = runs.iter().any(|r| {
        e.actor.strip_prefix("runbook:").is_some_and(|rest| rest.split(['/', ' ']).next() == Some(r.as_str()))
            || e.request_id.as_deref() == Some(r.as_str())
            || e.detail.get("run").and_then(|v| v.as_str()) == Some(r.as_str())
    });
    let detail_fault = e.detail.get("fault");
    let tied_fault = detail_fault.and_then(serde_json::Value::as_i64) == Some(fault)
        || detail_fault.and_then(|v| v.as_str()).and_then(|v| v.parse::<i64>().ok()) == Some(fault);
    tied_run || tied_fault || (a.at_ms >= window.0 && a.at_ms <= window.1)
}

/// A power action whose effect the console shows (a reset, a cycle, on or off), once it ended.
fn wants_console(a: &AuditRow) -> bool {
    a.entry.action.starts_with("power.") && a.entry.outcome != "started"
}

impl Lifeline {
    /// Fault `id` and everything done about it; not-found when there is no such fault.
    pub async fn incident(&self, id: i64) -> Result<IncidentRecord> {
        let store = self.store().await?;
        let fault = store
            .fault(id)
            .await?
            .ok_or_else(|| EngineError::NotFound { target: id.to_string(), what: "no such fault".into() })?;
        let key = id.to_string();
        let mut runs = Vec::new();
        for run in store.runs(RUNS_SEARCHED).await? {
            if run.target != fault.device || run.vars.get("fault").and_then(|v| v.as_str()) != Some(&key) {
                continue;
            }
            let journal = store.journal_since(&run.id, 0).await?;
            let approvals = store.approvals(&run.id).await?;
            runs.push(IncidentRun { run, journal, approvals });
        }
        runs.sort_by_key(|r| r.run.created_at_ms);
        let resolved_at_ms = (fault.state == "resolved").then_some(fault.updated_at_ms);
        let run_ids: Vec<String> = runs.iter().map(|r| r.run.id.clone()).collect();
        // The incident lasts until the fault is resolved and its runs have ended (open: until now).
        let runs_end = runs.iter().map(|r| r.run.ended_at_ms.unwrap_or(i64::MAX)).max();
        let end = match resolved_at_ms {
            Some(r) => r.max(runs_end.unwrap_or(r)),
            None => i64::MAX,
        };
        let mut actions: Vec<AuditRow> = store
            .audit_log(Some(&fault.device), AUDIT_SEARCHED)
            .await?
            .into_iter()
            .filter(|a| belongs(a, id, &run_ids, (fault.opened_at_ms, end)))
            // An approval is shown from the approvals table, with its step and attempt.
            .filter(|a| {
                !(a.entry.action == "runbook.approve"
                    && a.entry.request_id.as_ref().is_some_and(|r| run_ids.contains(r)))
            })
            .collect();
        actions.sort_by_key(|a| (a.at_ms, a.id));
        let mut console = Vec::new();
        for a in actions.iter().filter(|a| wants_console(a)) {
            if let Some(x) = self.console_excerpt(&fault.device, a).await {
                console.push(x);
            }
        }
        Ok(IncidentRecord { fault, resolved_at_ms, runs, actions, console })
    }

    /// The console log of `device` around audit row `a`; `None` when the window cannot be expressed or
    /// the log cannot be read (no console log kept for the device is the common case).
    async fn console_excerpt(&self, device: &str, a: &AuditRow) -> Option<ConsoleExcerpt> {
        let from = DateTime::from_timestamp_millis(a.at_ms - CONSOLE_BEFORE_MS)?;
        let to = DateTime::from_timestamp_millis(a.at_ms + CONSOLE_AFTER_MS)?;
        let mut reader = self.console_log(device, Some(from), false).await.ok()?;
        let mut text = Vec::new();
        let mut first = None;
        let mut truncated = false;
        let mut n = 0;
        while let Some(r) = reader.next().await {
            let r = r.ok()?;
            if r.ts > to {
                break;
            }
            first.get_or_insert(r.ts);
            n += 1;
            text.extend(r.render());
            if n >= CONSOLE_RECORDS || text.len() > CONSOLE_BYTES {
                truncated = true;
                text.truncate(CONSOLE_BYTES);
                break;
            }
        }
        Some(ConsoleExcerpt {
            audit_id: a.id,
            action: a.entry.action.clone(),
            at_ms: a.at_ms,
            from,
            to,
            first,
            text: String::from_utf8_lossy(&text).into_owned(),
            truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use lifeline_store::AuditEntry;

    use super::*;

    fn row(at_ms: i64, actor: &str, action: &str, detail: serde_json::Value) -> AuditRow {
        AuditRow {
            id: at_ms,
            at_ms,
            entry: AuditEntry {
                actor: actor.into(),
                action: action.into(),
                target: "gpu-node-01".into(),
                outcome: "ok".into(),
                detail,
                request_id: None,
            },
        }
    }

    #[test]
    fn an_action_belongs_by_its_run_its_fault_or_its_time() {
        let runs = vec!["r1".to_owned()];
        let w = (1_000, 2_000);
        let none = serde_json::json!({});
        // A runbook step's action, long after the window, is still the run's.
        assert!(belongs(&row(9_000, "runbook:r1/cycle#1", "power.cycle", none.clone()), 7, &runs, w));
        assert!(belongs(&row(9_000, "runbook:r1", "runbook.end", none.clone()), 7, &runs, w));
        // Another run's is not, outside the window; a run whose id only starts the same is not either.
        assert!(!belongs(&row(9_000, "runbook:r2/cycle#1", "power.cycle", none.clone()), 7, &runs, w));
        assert!(!belongs(&row(9_000, "runbook:r10/cycle#1", "power.cycle", none.clone()), 7, &runs, w));
        // The fault named in the detail, as a number or as text.
        assert!(belongs(&row(9_000, "web:ann", "fault.ack", serde_json::json!({"fault": 7})), 7, &runs, w));
        assert!(belongs(&row(9_000, "x", "fault.resolve", serde_json::json!({"fault": "7"})), 7, &runs, w));
        assert!(!belongs(&row(9_000, "x", "fault.ack", serde_json::json!({"fault": 8})), 7, &runs, w));
        // An operator's action while the incident is open.
        assert!(belongs(&row(1_500, "web:ann", "power.cycle", none.clone()), 7, &runs, w));
        assert!(!belongs(&row(999, "web:ann", "power.cycle", none), 7, &runs, w));
    }

    #[test]
    fn console_excerpts_are_for_ended_power_actions() {
        let mut a = row(1, "web:ann", "power.cycle", serde_json::json!({}));
        assert!(wants_console(&a));
        a.entry.outcome = "started".into();
        assert!(!wants_console(&a), "the intent row: its outcome row gets the excerpt");
        assert!(!wants_console(&row(1, "web:ann", "readmit.drain", serde_json::json!({}))));
    }
}
