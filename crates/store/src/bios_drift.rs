//! Each node's BIOS drift as the scheduled read last found it (one row per device, replaced by each read),
//! so the API and the fleet view show drift without asking every BMC on each page load.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One node's last BIOS read against its profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BiosDriftRow {
    pub device: String,
    pub role: Option<String>,
    /// Attributes the profile names for the node.
    pub checked: i64,
    /// The drifted attributes as the engine describes them (a JSON array).
    pub drift: serde_json::Value,
    /// Why the last read failed; `drift` is then the last successful read's.
    pub error: Option<String>,
    pub read_at_ms: i64,
}

impl Store {
    /// Every node's row (`device`: that node's only), by device.
    pub async fn bios_drifts(&self, device: Option<&str>) -> Result<Vec<BiosDriftRow>, StoreError> {
        let q = self.sql(
            "SELECT device, role, checked, drift, error, read_at FROM bios_drift \
             WHERE (? IS NULL OR device = ?) ORDER BY device",
        );
        let rows = sqlx::query(&q)
            .bind(device.map(str::to_owned))
            .bind(device.map(str::to_owned))
            .fetch_all(&self.pool)
            .await
            .op("bios_drift.list")?;
        rows.iter()
            .map(|r| {
                let text: String = r.try_get("drift").op("bios_drift.drift")?;
                Ok(BiosDriftRow {
                    device: r.try_get("device").op("bios_drift.device")?,
                    role: r.try_get("role").op("bios_drift.role")?,
                    checked: r.try_get("checked").op("bios_drift.checked")?,
                    drift: serde_json::from_str(&text).unwrap_or(serde_json::Value::Array(Vec::new())),
                    error: r.try_get("error").op("bios_drift.error")?,
                    read_at_ms: r.try_get("read_at").op("bios_drift.read_at")?,
                })
            })
            .collect()
    }

    /// Records a successful read of `device`: its drift replaces the previous row.
    pub async fn set_bios_drift(
        &self,
        device: &str,
        role: Option<&str>,
        checked: i64,
        drift: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO bios_drift (device, role, checked, drift, error, read_at) VALUES (?, ?, ?, ?, NULL, ?) \
             ON CONFLICT (device) DO UPDATE SET role = excluded.role, checked = excluded.checked, \
             drift = excluded.drift, error = NULL, read_at = excluded.read_at",
        );
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(role.map(str::to_owned))
            .bind(checked)
            .bind(drift.to_string())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("bios_drift.set")?;
        Ok(())
    }

    /// Records a failed read of `device`: the error and the time; the last read drift stays beside it.
    pub async fn set_bios_drift_error(
        &self,
        device: &str,
        role: Option<&str>,
        error: &str,
    ) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO bios_drift (device, role, checked, drift, error, read_at) VALUES (?, ?, 0, '[]', ?, ?) \
             ON CONFLICT (device) DO UPDATE SET role = excluded.role, error = excluded.error, \
             read_at = excluded.read_at",
        );
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(role.map(str::to_owned))
            .bind(error.to_owned())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("bios_drift.error")?;
        Ok(())
    }

    /// Forgets the rows of devices not in `keep` (removed from the inventory, or no longer checked).
    pub async fn retain_bios_drift(&self, keep: &[String]) -> Result<u64, StoreError> {
        let have = self.bios_drifts(None).await?;
        let q = self.sql("DELETE FROM bios_drift WHERE device = ?");
        let mut n = 0;
        for r in have.iter().filter(|r| !keep.contains(&r.device)) {
            n += sqlx::query(&q)
                .bind(r.device.clone())
                .execute(&self.pool)
                .await
                .op("bios_drift.delete")?
                .rows_affected();
        }
        Ok(n)
    }
}
