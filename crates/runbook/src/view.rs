//! What `run`, `status` and the server show of a run: the run row, and each step's state folded from the
//! journal (the journal is the truth; this is a reading of it).

use chrono::{DateTime, TimeZone, Utc};
use lifeline_engine::ops::runs::{JournalRow, RunRow};
use serde::Serialize;

use crate::model::Runbook;

/// A run as shown (`--json`: `run`, `state`, `steps[].{name,state,started,ended}` are the contract).
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub run: String,
    pub runbook: String,
    pub target: String,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub actor: String,
    pub digest: String,
    pub vars: serde_json::Value,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub ended: Option<DateTime<Utc>>,
    pub steps: Vec<StepView>,
    /// Set for a `running` run that no live process drives (its process was killed; no one holds its
    /// target's lease): what to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<String>,
}

/// One step's state.
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    pub name: String,
    pub kind: String,
    /// `pending`, `running`, `ok`, `failed`, `timeout`, `skipped`, `unknown`, `waiting-approval`.
    pub state: String,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    pub attempts: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub outputs: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_digest: Option<String>,
    /// A `[[verify]]` check, run after the last step on fresh observations.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub post_condition: bool,
}

pub(crate) fn ts(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

impl RunView {
    pub fn build(run: &RunRow, rb: Option<&Runbook>, journal: &[JournalRow]) -> RunView {
        let names: Vec<(String, String, bool)> = match rb {
            Some(rb) => rb
                .all_steps()
                .enumerate()
                .map(|(i, s)| (s.name.clone(), s.kind.as_str().to_owned(), rb.is_post(i)))
                .collect(),
            None => Vec::new(),
        };
        let mut steps: Vec<StepView> = names
            .into_iter()
            .map(|(name, kind, post)| StepView {
                name,
                kind,
                post_condition: post,
                state: "pending".into(),
                started: None,
                ended: None,
                attempts: 0,
                message: None,
                outputs: serde_json::Value::Null,
                evidence_digest: None,
            })
            .collect();
        for j in journal {
            let Some(s) = usize::try_from(j.step_index).ok().and_then(|i| steps.get_mut(i)) else { continue };
            match j.phase.as_str() {
                "intent" => {
                    s.state = if run.state == "running" { "running".into() } else { "unknown".into() };
                    s.started = Some(ts(j.at_ms));
                    s.ended = None;
                    s.attempts = s.attempts.max(j.attempt);
                }
                "outcome" => {
                    s.state = j.state.clone();
                    if s.started.is_none() {
                        s.started = Some(ts(j.at_ms));
                    }
                    s.ended = Some(ts(j.at_ms));
                    s.message = j.detail.get("message").and_then(|m| m.as_str()).map(str::to_owned);
                    s.outputs = j.detail.get("outputs").cloned().unwrap_or_default();
                    s.evidence_digest = j.evidence.get("digest").and_then(|d| d.as_str()).map(str::to_owned);
                }
                "decision" if j.state == "waiting-approval" && run.state == "waiting-approval" => {
                    s.state = "waiting-approval".into();
                    s.message = j.detail.get("message").and_then(|m| m.as_str()).map(str::to_owned);
                }
                _ => {}
            }
        }
        RunView {
            run: run.id.clone(),
            runbook: run.runbook.clone(),
            target: run.target.clone(),
            state: run.state.clone(),
            reason: run.reason.clone(),
            actor: run.actor.clone(),
            digest: run.digest.clone(),
            vars: run.vars.clone(),
            created: ts(run.created_at_ms),
            updated: ts(run.updated_at_ms),
            ended: run.ended_at_ms.map(ts),
            steps,
            stalled: None,
        }
    }
}
