//! Fleet-wide figures read at scrape time for `/metrics`: what operators alert on (a switch whose newest
//! backup is old, runs stuck in a state, console logs filling the disk). Read from the store rather than
//! counted in memory so every replica reports the same fleet, and a restart does not zero them.

use sqlx::Row;

use crate::error::QueryContext;
use crate::{Store, StoreError};

/// The store's side of the operator's gauges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetGauges {
    /// Runbook runs by state, every state that has at least one run.
    pub runs_by_state: Vec<(String, i64)>,
    /// Each switch with a stored configuration, and when its newest version was fetched (Unix ms).
    pub newest_backup_ms: Vec<(String, i64)>,
    /// Bytes of console log files still on disk (not removed by retention).
    pub console_log_bytes: i64,
}

impl Store {
    pub async fn fleet_gauges(&self) -> Result<FleetGauges, StoreError> {
        let q = "SELECT state, COUNT(*) AS n FROM runbook_runs GROUP BY state ORDER BY state";
        let rows = sqlx::query(q).fetch_all(&self.pool).await.op("gauges.runs")?;
        let runs_by_state = rows
            .iter()
            .map(|r| Ok((r.try_get("state").op("gauges.state")?, r.try_get("n").op("gauges.n")?)))
            .collect::<Result<_, StoreError>>()?;
        let q =
            "SELECT device, MAX(fetched_at) AS newest FROM config_versions GROUP BY device ORDER BY device";
        let rows = sqlx::query(q).fetch_all(&self.pool).await.op("gauges.backups")?;
        let newest_backup_ms = rows
            .iter()
            .map(|r| Ok((r.try_get("device").op("gauges.device")?, r.try_get("newest").op("gauges.newest")?)))
            .collect::<Result<_, StoreError>>()?;
        // COALESCE: SUM over no rows is NULL. CAST: PostgreSQL's SUM of BIGINT is NUMERIC, which the Any
        // driver does not decode.
        let q = "SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) AS b FROM console_logs WHERE removed = 0";
        let row = sqlx::query(q).fetch_one(&self.pool).await.op("gauges.console")?;
        let console_log_bytes = row.try_get("b").op("gauges.console_bytes")?;
        Ok(FleetGauges { runs_by_state, newest_backup_ms, console_log_bytes })
    }

    /// The devices with a sweep observation at or after `since_ms` (the sweep's coverage: which BMCs some
    /// replica read recently).
    pub async fn swept_since(&self, since_ms: i64) -> Result<Vec<String>, StoreError> {
        let q = self.sql(
            "SELECT DISTINCT device FROM observations WHERE kind = 'sweep' AND observed_at >= ? ORDER BY device",
        );
        let rows = sqlx::query(&q).bind(since_ms).fetch_all(&self.pool).await.op("gauges.swept")?;
        rows.iter().map(|r| r.try_get("device").op("gauges.swept_device")).collect()
    }
}
