//! What `run`, `status` and the server show of a run: the run row, and each step's state folded from the
//! journal (the journal is the truth; this is a reading of it). These types are the API's answer too
//! (`utoipa::ToSchema` behind the `schema` feature): one definition, no mirror in the server.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use lifeline_engine::ops::runs::{JournalRow, RunRow, RunState, StepState};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Runbook;

/// A runbook run: its state and each step's (`--json` and the API: `run`, `state`,
/// `steps[].{name,state,started,ended}` are the contract).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RunView {
    pub run: String,
    pub runbook: String,
    pub target: String,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub actor: String,
    /// `sha256:` of the runbook text the run follows.
    pub digest: String,
    /// The run's parameters as it was started with them.
    pub vars: BTreeMap<String, String>,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub ended: Option<DateTime<Utc>>,
    pub steps: Vec<StepView>,
    /// Set for a `running` run that no live process drives (its process was killed; no one holds its
    /// target's lease): what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<String>,
}

/// One step of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct StepView {
    pub name: String,
    pub kind: String,
    /// Folded from the run's journal; an outcome recorded in a word this version does not know reads
    /// `unknown` (it may or may not have acted).
    pub state: StepState,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    pub attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What the step produced (`ok`, `failed`, `skipped`, `state` and the named outputs later steps may
    /// use); `null` before its outcome.
    pub outputs: Option<BTreeMap<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_digest: Option<String>,
    /// A `[[verify]]` check, run after the last step on fresh observations.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub post_condition: bool,
}

pub(crate) fn ts(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

/// A run's parameters as stored (an object of strings, written from the checked `--var`s); a value that
/// is not a string is kept as its JSON text rather than dropped.
fn vars_of(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                .collect()
        })
        .unwrap_or_default()
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
                state: StepState::Pending,
                started: None,
                ended: None,
                attempts: 0,
                message: None,
                outputs: None,
                evidence_digest: None,
            })
            .collect();
        for j in journal {
            let Some(s) = usize::try_from(j.step_index).ok().and_then(|i| steps.get_mut(i)) else { continue };
            match j.phase.as_str() {
                "intent" => {
                    s.state =
                        if run.state == RunState::Running { StepState::Running } else { StepState::Unknown };
                    s.started = Some(ts(j.at_ms));
                    s.ended = None;
                    s.attempts = s.attempts.max(j.attempt);
                }
                "outcome" => {
                    s.state = j.state.parse().unwrap_or(StepState::Unknown);
                    if s.started.is_none() {
                        s.started = Some(ts(j.at_ms));
                    }
                    s.ended = Some(ts(j.at_ms));
                    s.message = j.detail.get("message").and_then(|m| m.as_str()).map(str::to_owned);
                    s.outputs = j
                        .detail
                        .get("outputs")
                        .and_then(Value::as_object)
                        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
                    s.evidence_digest = j.evidence.get("digest").and_then(|d| d.as_str()).map(str::to_owned);
                }
                "decision"
                    if j.state == StepState::WaitingApproval.as_str()
                        && run.state == RunState::WaitingApproval =>
                {
                    s.state = StepState::WaitingApproval;
                    s.message = j.detail.get("message").and_then(|m| m.as_str()).map(str::to_owned);
                }
                _ => {}
            }
        }
        RunView {
            run: run.id.clone(),
            runbook: run.runbook.clone(),
            target: run.target.clone(),
            state: run.state,
            reason: run.reason.clone(),
            actor: run.actor.clone(),
            digest: run.digest.clone(),
            vars: vars_of(&run.vars),
            created: ts(run.created_at_ms),
            updated: ts(run.updated_at_ms),
            ended: run.ended_at_ms.map(ts),
            steps,
            stalled: None,
        }
    }
}
