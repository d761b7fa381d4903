//! The devices table: a shadow of the inventory, synced on load.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One device as the store keeps it. Built by the caller from the inventory model (the store does not
/// depend on the inventory crate); `spec_json` holds the full inventory entry for later readers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub name: String,
    pub role: String,
    pub site: String,
    pub rack: String,
    pub fabric: Option<String>,
    pub platform: Option<String>,
    pub bmc_address: Option<String>,
    pub bmc_protocol: Option<String>,
    pub mgmt_address: Option<String>,
    pub spec_json: serde_json::Value,
}

/// What a sync changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncSummary {
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub removed: usize,
}

impl Store {
    /// Makes the devices table match `devices`: inserts new ones, updates changed ones and marks the ones no
    /// longer in the inventory as removed (kept, so their history stays readable). One transaction.
    pub async fn sync_devices(&self, devices: &[DeviceRecord]) -> Result<SyncSummary, StoreError> {
        let now = now_ms();
        let mut tx = self.begin_write().await.op("sync_devices.begin")?;
        let existing = sqlx::query("SELECT name, spec_json, removed_at FROM devices")
            .fetch_all(&mut *tx)
            .await
            .op("sync_devices.select")?;
        let mut known = std::collections::HashMap::new();
        for row in existing {
            let name: String = row.try_get("name").op("sync_devices.name")?;
            let spec: String = row.try_get("spec_json").op("sync_devices.spec")?;
            let removed: Option<i64> = row.try_get("removed_at").op("sync_devices.removed")?;
            known.insert(name, (spec, removed));
        }
        let mut summary = SyncSummary::default();
        for d in devices {
            let spec = d.spec_json.to_string();
            match known.remove(&d.name) {
                Some((old, None)) if old == spec => summary.unchanged += 1,
                previous => {
                    // One upsert for new, changed and returning devices; un-removes a device that came back.
                    let q = self.sql(
                        "INSERT INTO devices (name, role, site, rack, fabric, platform, bmc_address, bmc_protocol, \
                         mgmt_address, spec_json, synced_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                         ON CONFLICT (name) DO UPDATE SET role = excluded.role, site = excluded.site, \
                         rack = excluded.rack, fabric = excluded.fabric, platform = excluded.platform, \
                         bmc_address = excluded.bmc_address, bmc_protocol = excluded.bmc_protocol, \
                         mgmt_address = excluded.mgmt_address, spec_json = excluded.spec_json, \
                         synced_at = excluded.synced_at, removed_at = NULL",
                    );
                    sqlx::query(&q)
                        .bind(&d.name)
                        .bind(&d.role)
                        .bind(&d.site)
                        .bind(&d.rack)
                        .bind(&d.fabric)
                        .bind(&d.platform)
                        .bind(&d.bmc_address)
                        .bind(&d.bmc_protocol)
                        .bind(&d.mgmt_address)
                        .bind(&spec)
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .op("sync_devices.upsert")?;
                    if previous.is_some() {
                        summary.updated += 1;
                    } else {
                        summary.added += 1;
                    }
                }
            }
        }
        for (name, (_, removed)) in known {
            if removed.is_none() {
                let q = self.sql("UPDATE devices SET removed_at = ? WHERE name = ?");
                sqlx::query(&q).bind(now).bind(&name).execute(&mut *tx).await.op("sync_devices.remove")?;
                summary.removed += 1;
            }
        }
        tx.commit().await.op("sync_devices.commit")?;
        Ok(summary)
    }

    /// Devices currently in the inventory, by name.
    pub async fn devices(&self) -> Result<Vec<DeviceRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, role, site, rack, fabric, platform, bmc_address, bmc_protocol, mgmt_address, spec_json \
             FROM devices WHERE removed_at IS NULL ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await
        .op("devices")?;
        rows.into_iter()
            .map(|r| {
                let spec: String = r.try_get("spec_json").op("devices.spec")?;
                Ok(DeviceRecord {
                    name: r.try_get("name").op("devices.name")?,
                    role: r.try_get("role").op("devices.role")?,
                    site: r.try_get("site").op("devices.site")?,
                    rack: r.try_get("rack").op("devices.rack")?,
                    fabric: r.try_get("fabric").op("devices.fabric")?,
                    platform: r.try_get("platform").op("devices.platform")?,
                    bmc_address: r.try_get("bmc_address").op("devices.bmc_address")?,
                    bmc_protocol: r.try_get("bmc_protocol").op("devices.bmc_protocol")?,
                    mgmt_address: r.try_get("mgmt_address").op("devices.mgmt_address")?,
                    spec_json: serde_json::from_str(&spec)
                        .map_err(|source| StoreError::Json { op: "devices.spec_json", source })?,
                })
            })
            .collect()
    }
}
