//! Probation and lemons in the store: the newest probation of each node Lifeline re-admitted, every
//! recurrence as the node's history, and a human's one-time word that a lemon may be re-admitted. The rules
//! (window, score, threshold) are the engine's; the store keeps only what happened.

use serde::Serialize;
use sqlx::Row;

use crate::error::QueryContext;
use crate::{Store, StoreError, now_ms};

/// A node's newest probation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbationRow {
    pub device: String,
    pub readmitted_at_ms: i64,
    pub until_ms: i64,
    pub report_digest: Option<String>,
    /// `on`, `passed` (the window ended without a recurrence) or `recurred`.
    pub state: String,
    pub checks: i64,
    pub last_check_ms: Option<i64>,
}

/// One recurrence: a fault or a failing check within a node's probation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecurrenceRow {
    pub id: i64,
    pub device: String,
    pub at_ms: i64,
    /// A fault kind, or `probation-check`.
    pub cause: String,
    pub fault: Option<i64>,
    /// The re-admission it followed.
    pub readmitted_at_ms: i64,
    pub detail: serde_json::Value,
}

/// A human's word that a lemon may be re-admitted once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LemonReleaseRow {
    pub id: i64,
    pub device: String,
    pub by: String,
    pub reason: String,
    pub at_ms: i64,
    pub used_at_ms: Option<i64>,
}

const PROBATION_COLUMNS: &str =
    "device, readmitted_at, until_at, report_digest, state, checks, last_check_at";
const RECURRENCE_COLUMNS: &str = "id, device, at, cause, fault_id, readmitted_at, detail_json";
const RELEASE_COLUMNS: &str = "id, device, released_by, reason, at, used_at";

fn probation_row(r: &sqlx::any::AnyRow) -> Result<ProbationRow, StoreError> {
    Ok(ProbationRow {
        device: r.try_get("device").op("probation.device")?,
        readmitted_at_ms: r.try_get("readmitted_at").op("probation.readmitted_at")?,
        until_ms: r.try_get("until_at").op("probation.until_at")?,
        report_digest: r.try_get("report_digest").op("probation.report_digest")?,
        state: r.try_get("state").op("probation.state")?,
        checks: r.try_get("checks").op("probation.checks")?,
        last_check_ms: r.try_get("last_check_at").op("probation.last_check_at")?,
    })
}

fn recurrence_row(r: &sqlx::any::AnyRow) -> Result<RecurrenceRow, StoreError> {
    let detail: String = r.try_get("detail_json").op("recurrence.detail")?;
    Ok(RecurrenceRow {
        id: r.try_get("id").op("recurrence.id")?,
        device: r.try_get("device").op("recurrence.device")?,
        at_ms: r.try_get("at").op("recurrence.at")?,
        cause: r.try_get("cause").op("recurrence.cause")?,
        fault: r.try_get("fault_id").op("recurrence.fault_id")?,
        readmitted_at_ms: r.try_get("readmitted_at").op("recurrence.readmitted_at")?,
        detail: serde_json::from_str(&detail)
            .map_err(|source| StoreError::Json { op: "recurrence.detail", source })?,
    })
}

fn release_row(r: &sqlx::any::AnyRow) -> Result<LemonReleaseRow, StoreError> {
    Ok(LemonReleaseRow {
        id: r.try_get("id").op("lemon_release.id")?,
        device: r.try_get("device").op("lemon_release.device")?,
        by: r.try_get("released_by").op("lemon_release.by")?,
        reason: r.try_get("reason").op("lemon_release.reason")?,
        at_ms: r.try_get("at").op("lemon_release.at")?,
        used_at_ms: r.try_get("used_at").op("lemon_release.used_at")?,
    })
}

impl Store {
    /// Starts (or restarts) a node's probation: `on` until `until_ms`, no checks yet.
    pub async fn probation_start(
        &self,
        device: &str,
        readmitted_at_ms: i64,
        until_ms: i64,
        report_digest: Option<&str>,
    ) -> Result<ProbationRow, StoreError> {
        let q = self.sql(
            "INSERT INTO probation (device, readmitted_at, until_at, report_digest, state, checks, last_check_at) \
             VALUES (?, ?, ?, ?, 'on', 0, NULL) ON CONFLICT (device) DO UPDATE SET \
             readmitted_at = excluded.readmitted_at, until_at = excluded.until_at, \
             report_digest = excluded.report_digest, state = 'on', checks = 0, last_check_at = NULL",
        );
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(readmitted_at_ms)
            .bind(until_ms)
            .bind(report_digest.map(str::to_owned))
            .execute(&self.pool)
            .await
            .op("probation.start")?;
        self.probation(device)
            .await?
            .ok_or(StoreError::Query { op: "probation.reread", source: sqlx::Error::RowNotFound })
    }

    pub async fn probation(&self, device: &str) -> Result<Option<ProbationRow>, StoreError> {
        let q = self.sql(&format!("SELECT {PROBATION_COLUMNS} FROM probation WHERE device = ?"));
        let row =
            sqlx::query(&q).bind(device.to_owned()).fetch_optional(&self.pool).await.op("probation.get")?;
        row.as_ref().map(probation_row).transpose()
    }

    /// Every node's newest probation, by name; `state` filters.
    pub async fn probations(&self, state: Option<&str>) -> Result<Vec<ProbationRow>, StoreError> {
        let rows = match state {
            Some(s) => {
                let q = self.sql(&format!(
                    "SELECT {PROBATION_COLUMNS} FROM probation WHERE state = ? ORDER BY device"
                ));
                sqlx::query(&q).bind(s.to_owned()).fetch_all(&self.pool).await
            }
            None => {
                let q = format!("SELECT {PROBATION_COLUMNS} FROM probation ORDER BY device");
                sqlx::query(&q).fetch_all(&self.pool).await
            }
        }
        .op("probation.list")?;
        rows.iter().map(probation_row).collect()
    }

    /// Counts a probation check; a probation no longer `on` is left as it is (returns false).
    pub async fn probation_checked(&self, device: &str, at_ms: i64) -> Result<bool, StoreError> {
        let q = self.sql(
            "UPDATE probation SET checks = checks + 1, last_check_at = ? WHERE device = ? AND state = 'on'",
        );
        let done = sqlx::query(&q)
            .bind(at_ms)
            .bind(device.to_owned())
            .execute(&self.pool)
            .await
            .op("probation.check")?;
        Ok(done.rows_affected() > 0)
    }

    /// Ends an `on` probation as `passed` or `recurred`; false when none was on.
    pub async fn probation_end(&self, device: &str, state: &str) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE probation SET state = ? WHERE device = ? AND state = 'on'");
        let done = sqlx::query(&q)
            .bind(state.to_owned())
            .bind(device.to_owned())
            .execute(&self.pool)
            .await
            .op("probation.end")?;
        Ok(done.rows_affected() > 0)
    }

    /// Records a recurrence and ends the node's probation as `recurred`, in one transaction so a
    /// recurrence is counted once even when two replicas see the same fault.
    pub async fn recurrence_record(
        &self,
        device: &str,
        cause: &str,
        fault: Option<i64>,
        detail: &serde_json::Value,
    ) -> Result<Option<RecurrenceRow>, StoreError> {
        let mut tx = self.begin_write().await.op("recurrence.begin")?;
        let q = self.sql("UPDATE probation SET state = 'recurred' WHERE device = ? AND state = 'on'");
        let ended = sqlx::query(&q).bind(device.to_owned()).execute(&mut *tx).await.op("recurrence.end")?;
        if ended.rows_affected() == 0 {
            tx.rollback().await.op("recurrence.rollback")?;
            return Ok(None);
        }
        let q = self.sql("SELECT readmitted_at FROM probation WHERE device = ?");
        let row =
            sqlx::query(&q).bind(device.to_owned()).fetch_one(&mut *tx).await.op("recurrence.probation")?;
        let readmitted_at: i64 = row.try_get("readmitted_at").op("recurrence.readmitted_at")?;
        let q = self.sql(
            "INSERT INTO recurrences (device, at, cause, fault_id, readmitted_at, detail_json) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(device.to_owned())
            .bind(now_ms())
            .bind(cause.to_owned())
            .bind(fault)
            .bind(readmitted_at)
            .bind(detail.to_string())
            .fetch_one(&mut *tx)
            .await
            .op("recurrence.insert")?;
        let id: i64 = row.try_get("id").op("recurrence.id")?;
        let q = self.sql(&format!("SELECT {RECURRENCE_COLUMNS} FROM recurrences WHERE id = ?"));
        let row = sqlx::query(&q).bind(id).fetch_one(&mut *tx).await.op("recurrence.reread")?;
        let r = recurrence_row(&row)?;
        tx.commit().await.op("recurrence.commit")?;
        Ok(Some(r))
    }

    /// Recurrences at or after `since_ms`, oldest first; `device` filters.
    pub async fn recurrences(
        &self,
        device: Option<&str>,
        since_ms: i64,
    ) -> Result<Vec<RecurrenceRow>, StoreError> {
        let rows = match device {
            Some(d) => {
                let q = self.sql(&format!(
                    "SELECT {RECURRENCE_COLUMNS} FROM recurrences WHERE device = ? AND at >= ? ORDER BY at, id"
                ));
                sqlx::query(&q).bind(d.to_owned()).bind(since_ms).fetch_all(&self.pool).await
            }
            None => {
                let q = self
                    .sql(&format!("SELECT {RECURRENCE_COLUMNS} FROM recurrences WHERE at >= ? ORDER BY at, id"));
                sqlx::query(&q).bind(since_ms).fetch_all(&self.pool).await
            }
        }
        .op("recurrence.list")?;
        rows.iter().map(recurrence_row).collect()
    }

    /// Records a human's word that `device` may be re-admitted once.
    pub async fn lemon_release(
        &self,
        device: &str,
        by: &str,
        reason: &str,
    ) -> Result<LemonReleaseRow, StoreError> {
        let q = self.sql(&format!(
            "INSERT INTO lemon_releases (device, released_by, reason, at, used_at) VALUES (?, ?, ?, ?, NULL) \
             RETURNING {RELEASE_COLUMNS}"
        ));
        let row = sqlx::query(&q)
            .bind(device.to_owned())
            .bind(by.to_owned())
            .bind(reason.to_owned())
            .bind(now_ms())
            .fetch_one(&self.pool)
            .await
            .op("lemon_release.insert")?;
        release_row(&row)
    }

    /// The oldest unused release of `device`, without using it.
    pub async fn lemon_release_pending(&self, device: &str) -> Result<Option<LemonReleaseRow>, StoreError> {
        let q = self.sql(&format!(
            "SELECT {RELEASE_COLUMNS} FROM lemon_releases WHERE device = ? AND used_at IS NULL ORDER BY id LIMIT 1"
        ));
        let row = sqlx::query(&q)
            .bind(device.to_owned())
            .fetch_optional(&self.pool)
            .await
            .op("lemon_release.get")?;
        row.as_ref().map(release_row).transpose()
    }

    /// Marks a release used; false when another process used it first.
    pub async fn lemon_release_use(&self, id: i64) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE lemon_releases SET used_at = ? WHERE id = ? AND used_at IS NULL");
        let done =
            sqlx::query(&q).bind(now_ms()).bind(id).execute(&self.pool).await.op("lemon_release.use")?;
        Ok(done.rows_affected() > 0)
    }

    /// Every release of `device`, oldest first (its history).
    pub async fn lemon_releases(&self, device: &str) -> Result<Vec<LemonReleaseRow>, StoreError> {
        let q =
            self.sql(&format!("SELECT {RELEASE_COLUMNS} FROM lemon_releases WHERE device = ? ORDER BY id"));
        let rows =
            sqlx::query(&q).bind(device.to_owned()).fetch_all(&self.pool).await.op("lemon_release.list")?;
        rows.iter().map(release_row).collect()
    }
}
