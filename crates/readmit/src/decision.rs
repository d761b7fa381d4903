//! What a re-admission adapter did and why: every drain, resume, quarantine or release is one
//! [`Decision`] resting on an agent report's digest.

use serde::{Deserialize, Serialize};

/// The agent report a decision rests on (from `lifeline_verify::Report`: `digest`, `verdict`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Justification {
    /// `sha256:<hex>` of the agent report.
    pub report_digest: String,
    /// True only when the report's verdict is `pass`.
    pub passed: bool,
    /// One line for people: why (e.g. "rail mlx5_3 down" or "all 69 checks passed").
    pub summary: String,
}

/// What was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Slurm drain.
    Drain,
    /// Slurm resume.
    Resume,
    /// Kubernetes cordon + taint.
    Quarantine,
    /// Kubernetes untaint (+ uncordon if Lifeline cordoned).
    Release,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// The action was carried out and confirmed by reading the node back.
    Done,
    /// Already in the requested state under Lifeline's own mark: nothing changed.
    AlreadyDone,
    /// The node is held by someone else (an admin's drain, another reason); it is left exactly as it was.
    RefusedForeignHold { holder: String },
    /// A release was asked but the node carries no Lifeline mark (never ours to release).
    RefusedNotOurs,
    /// A release was asked on a report that did not pass.
    RefusedReportNotPassing,
}

/// The record of one decision, with the report digest that justified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// `slurm` or `kubernetes`.
    pub backend: String,
    pub node: String,
    pub action: Action,
    pub outcome: Outcome,
    pub report_digest: String,
    /// State and reason/marks read before acting.
    pub before: String,
    /// State read after acting (equal to `before` when nothing was done).
    pub after: String,
    /// RFC 3339, UTC.
    pub at: String,
    pub message: String,
}

impl Decision {
    pub(crate) fn new(backend: &str, node: &str, action: Action, just: &str) -> Decision {
        Decision {
            backend: backend.to_owned(),
            node: node.to_owned(),
            action,
            outcome: Outcome::Done,
            report_digest: just.to_owned(),
            before: String::new(),
            after: String::new(),
            at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            message: String::new(),
        }
    }

    /// True when the node changed state.
    pub fn changed(&self) -> bool {
        self.outcome == Outcome::Done
    }
}
