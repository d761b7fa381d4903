//! The audit log: every action Lifeline takes or refuses. Insert-only; callers write the row *before*
//! reporting success, so an action that happened always has its row.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Who asked: `cli:<unix user>`, `web:<user>`, `scheduler`, `runbook:<run id>`.
    pub actor: String,
    /// What: `power.cycle`, `backup.restore`, `readmit.resume`, …
    pub action: String,
    /// Which device (or `fleet`).
    pub target: String,
    /// `started`, `ok`, `failed`, `refused`, `timeout`.
    pub outcome: String,
    pub detail: serde_json::Value,
    pub request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub id: i64,
    pub at_ms: i64,
    #[serde(flatten)]
    pub entry: AuditEntry,
}

impl Store {
    pub async fn audit(&self, e: &AuditEntry) -> Result<i64, StoreError> {
        self.insert_audit(e, None).await
    }

    /// [`Store::audit`] for the row that authorizes an external action (a BMC command's intent), under a
    /// lease: inserted only if the lease on `fence.0` is still held by `fence.1` with token `fence.2` and
    /// has at least `margin_ms` left, in the same statement. A holder paused past its expiry (another
    /// replica took the target) writes nothing, gets [`StoreError::Fenced`], and must not act.
    pub async fn audit_fenced(
        &self,
        e: &AuditEntry,
        fence: (&str, &str, i64),
        margin_ms: i64,
    ) -> Result<i64, StoreError> {
        self.insert_audit(e, Some((fence, margin_ms))).await
    }

    async fn insert_audit(
        &self,
        e: &AuditEntry,
        fence: Option<((&str, &str, i64), i64)>,
    ) -> Result<i64, StoreError> {
        let insert = "INSERT INTO audit_log (at, actor, action, target, outcome, detail_json, request_id)";
        let q = match fence {
            None => self.sql(&format!("{insert} VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id")),
            Some(_) => self.sql(&format!(
                "{insert} SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM leases \
                 WHERE target = ? AND holder = ? AND fence = ? AND expires_at >= ?) RETURNING id"
            )),
        };
        let now = now_ms();
        let mut query = sqlx::query(&q)
            .bind(now)
            .bind(&e.actor)
            .bind(&e.action)
            .bind(&e.target)
            .bind(&e.outcome)
            .bind(e.detail.to_string())
            .bind(&e.request_id);
        if let Some(((target, holder, token), margin_ms)) = fence {
            query = query
                .bind(target.to_owned())
                .bind(holder.to_owned())
                .bind(token)
                .bind(now.saturating_add(margin_ms));
        }
        match query.fetch_optional(&self.pool).await.op("audit.insert")? {
            Some(r) => {
                // A drain or re-admission is read from the audit log.
                self.touched();
                r.try_get::<i64, _>("id").op("audit.id")
            }
            None => {
                let ((target, _, token), _) = fence.unwrap_or_default();
                Err(StoreError::Fenced { target: target.to_owned(), fence: token })
            }
        }
    }

    /// Newest first; `target` filters to one device.
    pub async fn audit_log(&self, target: Option<&str>, limit: i64) -> Result<Vec<AuditRow>, StoreError> {
        let base = "SELECT id, at, actor, action, target, outcome, detail_json, request_id FROM audit_log";
        let rows = match target {
            Some(t) => {
                let q = self.sql(&format!("{base} WHERE target = ? ORDER BY id DESC LIMIT ?"));
                sqlx::query(&q).bind(t.to_owned()).bind(limit).fetch_all(&self.pool).await
            }
            None => {
                let q = self.sql(&format!("{base} ORDER BY id DESC LIMIT ?"));
                sqlx::query(&q).bind(limit).fetch_all(&self.pool).await
            }
        }
        .op("audit.select")?;
        rows.iter().map(audit_row).collect()
    }

    /// The newest row per target among `actions` that ended in one of `outcomes`: the state a series of
    /// actions left each target in (the readmit decisions: whether Lifeline's drain is in force).
    pub async fn latest_audit_per_target(
        &self,
        actions: &[&str],
        outcomes: &[&str],
    ) -> Result<Vec<AuditRow>, StoreError> {
        if actions.is_empty() || outcomes.is_empty() {
            return Ok(Vec::new());
        }
        let marks = |n: usize| vec!["?"; n].join(", ");
        let filter =
            format!("action IN ({}) AND outcome IN ({})", marks(actions.len()), marks(outcomes.len()));
        let q = self.sql(&format!(
            "SELECT id, at, actor, action, target, outcome, detail_json, request_id FROM audit_log \
             WHERE id IN (SELECT MAX(id) FROM audit_log WHERE {filter} GROUP BY target) ORDER BY id"
        ));
        let mut query = sqlx::query(&q);
        for v in actions.iter().chain(outcomes) {
            query = query.bind((*v).to_owned());
        }
        let rows = query.fetch_all(&self.pool).await.op("audit.latest_per_target")?;
        rows.iter().map(audit_row).collect()
    }
}

fn audit_row(r: &sqlx::any::AnyRow) -> Result<AuditRow, StoreError> {
    let detail: String = r.try_get("detail_json").op("audit.detail")?;
    Ok(AuditRow {
        id: r.try_get("id").op("audit.id")?,
        at_ms: r.try_get("at").op("audit.at")?,
        entry: AuditEntry {
            actor: r.try_get("actor").op("audit.actor")?,
            action: r.try_get("action").op("audit.action")?,
            target: r.try_get("target").op("audit.target")?,
            outcome: r.try_get("outcome").op("audit.outcome")?,
            detail: serde_json::from_str(&detail)
                .map_err(|source| StoreError::Json { op: "audit.detail", source })?,
            request_id: r.try_get("request_id").op("audit.request_id")?,
        },
    })
}
