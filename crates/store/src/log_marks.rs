//! Per-log high-water marks of BMC event logs: where each log of each device was read up to, so that a
//! sweep's fault rules see every entry since the last read exactly once.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// The newest entry read from one log of one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMarkRow {
    pub device: String,
    pub log: String,
    pub entry_id: String,
    /// The entry's time, ms since the epoch (`None`: the entry has none).
    pub created_ms: Option<i64>,
    pub read_at_ms: i64,
}

impl Store {
    /// Every mark (`device`: of that device only), by device and log.
    pub async fn log_marks(&self, device: Option<&str>) -> Result<Vec<LogMarkRow>, StoreError> {
        let q = self.sql(
            "SELECT device, log, entry_id, created, read_at FROM bmc_log_marks \
             WHERE (? IS NULL OR device = ?) ORDER BY device, log",
        );
        let rows = sqlx::query(&q)
            .bind(device.map(str::to_owned))
            .bind(device.map(str::to_owned))
            .fetch_all(&self.pool)
            .await
            .op("log_marks.list")?;
        rows.iter()
            .map(|r| {
                Ok(LogMarkRow {
                    device: r.try_get("device").op("log_marks.device")?,
                    log: r.try_get("log").op("log_marks.log")?,
                    entry_id: r.try_get("entry_id").op("log_marks.entry_id")?,
                    created_ms: r.try_get("created").op("log_marks.created")?,
                    read_at_ms: r.try_get("read_at").op("log_marks.read_at")?,
                })
            })
            .collect()
    }

    /// Moves the marks of `device`'s logs to the entries given (one row per log; logs not named keep
    /// theirs).
    pub async fn set_log_marks(
        &self,
        device: &str,
        marks: &[(String, String, Option<i64>)],
    ) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO bmc_log_marks (device, log, entry_id, created, read_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (device, log) DO UPDATE SET entry_id = excluded.entry_id, \
             created = excluded.created, read_at = excluded.read_at",
        );
        let mut tx = self.pool.begin().await.op("log_marks.begin")?;
        for (log, id, created) in marks {
            sqlx::query(&q)
                .bind(device.to_owned())
                .bind(log.clone())
                .bind(id.clone())
                .bind(*created)
                .bind(now_ms())
                .execute(&mut *tx)
                .await
                .op("log_marks.set")?;
        }
        tx.commit().await.op("log_marks.commit")?;
        Ok(())
    }
}
