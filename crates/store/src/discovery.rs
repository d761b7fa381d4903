//! The `bmc_discovery` table: what discovery learnt about each BMC (IPMI cipher suite, Redfish service root
//! and system path), read whole once per process and written only when it changes. The meaning lives in
//! `lifeline-bmc` (`Discovery`); the store keeps plain rows.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One BMC's discovery row. `redfish_root` is the service root document as JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryRow {
    pub device: String,
    pub ipmi_suite: Option<i64>,
    pub redfish_url: Option<String>,
    pub redfish_root: Option<String>,
    pub redfish_system: Option<String>,
}

impl Store {
    /// Every discovery row.
    pub async fn bmc_discoveries(&self) -> Result<Vec<DiscoveryRow>, StoreError> {
        let q = self
            .sql("SELECT device, ipmi_suite, redfish_url, redfish_root, redfish_system FROM bmc_discovery");
        let rows = sqlx::query(&q).fetch_all(&self.pool).await.op("discovery.list")?;
        rows.iter()
            .map(|r| {
                Ok(DiscoveryRow {
                    device: r.try_get("device").op("discovery.device")?,
                    ipmi_suite: r.try_get("ipmi_suite").op("discovery.suite")?,
                    redfish_url: r.try_get("redfish_url").op("discovery.url")?,
                    redfish_root: r.try_get("redfish_root").op("discovery.root")?,
                    redfish_system: r.try_get("redfish_system").op("discovery.system")?,
                })
            })
            .collect()
    }

    /// Replaces a BMC's row; a row with nothing in it is deleted.
    pub async fn set_bmc_discovery(&self, row: &DiscoveryRow) -> Result<(), StoreError> {
        if row.ipmi_suite.is_none() && row.redfish_url.is_none() {
            let q = self.sql("DELETE FROM bmc_discovery WHERE device = ?");
            sqlx::query(&q).bind(row.device.clone()).execute(&self.pool).await.op("discovery.delete")?;
            return Ok(());
        }
        let q = self.sql(
            "INSERT INTO bmc_discovery (device, ipmi_suite, redfish_url, redfish_root, redfish_system, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (device) DO UPDATE SET ipmi_suite = excluded.ipmi_suite, \
             redfish_url = excluded.redfish_url, redfish_root = excluded.redfish_root, \
             redfish_system = excluded.redfish_system, updated_at = excluded.updated_at",
        );
        sqlx::query(&q)
            .bind(row.device.clone())
            .bind(row.ipmi_suite)
            .bind(row.redfish_url.clone())
            .bind(row.redfish_root.clone())
            .bind(row.redfish_system.clone())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("discovery.set")?;
        Ok(())
    }
}

impl Store {
    /// Every BMC's remembered Redfish resource paths: `(device, JSON)` (the meaning is `lifeline-bmc`'s
    /// `RedfishResourcePaths`).
    pub async fn bmc_redfish_paths(&self) -> Result<Vec<(String, String)>, StoreError> {
        let q = self.sql("SELECT device, paths FROM bmc_redfish_paths");
        let rows = sqlx::query(&q).fetch_all(&self.pool).await.op("redfish_paths.list")?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("device").op("redfish_paths.device")?,
                    r.try_get("paths").op("redfish_paths.paths")?,
                ))
            })
            .collect()
    }

    /// Replaces a BMC's remembered paths; `None` forgets them.
    pub async fn set_bmc_redfish_paths(&self, device: &str, paths: Option<&str>) -> Result<(), StoreError> {
        let Some(paths) = paths else {
            let q = self.sql("DELETE FROM bmc_redfish_paths WHERE device = ?");
            sqlx::query(&q).bind(device.to_owned()).execute(&self.pool).await.op("redfish_paths.delete")?;
            return Ok(());
        };
        let q = self.sql(
            "INSERT INTO bmc_redfish_paths (device, paths, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (device) DO UPDATE SET paths = excluded.paths, updated_at = excluded.updated_at",
        );
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(paths.to_owned())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("redfish_paths.set")?;
        Ok(())
    }
}
