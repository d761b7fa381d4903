//! Reading the audit log: who did what, when, and how it ended.
//!
//! Two readings. [`Lifeline::audit_log`] gives the rows as stored, for the engine's and the server's own
//! readers that look for a word. [`Lifeline::audit_view`] is what people and scripts see (`audit log`,
//! `GET /api/v1/audit`): the action read as the closed set [`AuditAction`], leniently — a row written by
//! another version of Lifeline sharing the database (an upgrade, a downgrade) may carry a word this
//! version does not write; it is shown as written and marked `action_unknown`, and never fails the page
//! (docs/operations.md, the API's compatibility rule).

pub use lifeline_store::{AuditEntry, AuditRow};
pub use lifeline_types::{AuditAction, LoggedAction};
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;

/// One audit row as shown: the stored row with its action read as a [`LoggedAction`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditView {
    pub id: i64,
    pub at_ms: i64,
    /// Who asked: `cli:<unix user>`, `web:<user>`, `scheduler`, `runbook:<run id>`, `fault-policy`.
    pub actor: String,
    /// What: an [`AuditAction`] word, or another version's word as it was written.
    pub action: LoggedAction,
    /// Present, `true`, only when `action` is a word this version does not know.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub action_unknown: bool,
    pub target: String,
    pub outcome: String,
    pub detail: serde_json::Value,
    pub request_id: Option<String>,
}

impl From<AuditRow> for AuditView {
    fn from(r: AuditRow) -> Self {
        let e = r.entry;
        let action = LoggedAction::read(&e.action);
        AuditView {
            id: r.id,
            at_ms: r.at_ms,
            actor: e.actor,
            action_unknown: action.is_unknown(),
            action,
            target: e.target,
            outcome: e.outcome,
            detail: e.detail,
            request_id: e.request_id,
        }
    }
}

impl Lifeline {
    /// Newest first, as stored; `target` filters to one device.
    pub async fn audit_log(&self, target: Option<&str>, limit: i64) -> Result<Vec<AuditRow>> {
        Ok(self.store().await?.audit_log(target, limit).await?)
    }

    /// [`Lifeline::audit_log`] as people and scripts see it: every row, the action read leniently.
    pub async fn audit_view(&self, target: Option<&str>, limit: i64) -> Result<Vec<AuditView>> {
        Ok(self.audit_log(target, limit).await?.into_iter().map(AuditView::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(action: &str) -> AuditRow {
        AuditRow {
            id: 1,
            at_ms: 0,
            entry: AuditEntry {
                actor: "cli:ann".into(),
                action: action.into(),
                target: "n1".into(),
                outcome: "ok".into(),
                detail: serde_json::json!({}),
                request_id: None,
            },
        }
    }

    /// A known word reads as its action and shows exactly as the store row did (the `--json` contract);
    /// another version's word reads as itself, marked, and the row is still shown.
    #[test]
    fn the_view_reads_every_word() {
        let stored = serde_json::to_value(row("power.cycle")).unwrap();
        let v = AuditView::from(row("power.cycle"));
        assert_eq!(v.action, AuditAction::PowerCycle);
        assert_eq!(serde_json::to_value(&v).unwrap(), stored);

        let v = AuditView::from(row("runbook.reinstall"));
        assert_eq!(v.action, LoggedAction::Unknown("runbook.reinstall".into()));
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["action"], "runbook.reinstall");
        assert_eq!(json["action_unknown"], true);
    }
}
