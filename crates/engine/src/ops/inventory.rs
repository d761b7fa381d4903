//! The inventory in the store: devices are synced from the file (the source of truth) so that observations,
//! events and audit rows can refer to them and survive a device's removal.

use lifeline_inventory::Device;
use lifeline_store::{DeviceRecord, SyncSummary};
use lifeline_types::AuditAction;
use serde::Serialize;
use serde_json::{Value, json};

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::Result;

/// `inventory sync`.
#[derive(Debug, Clone, Serialize)]
pub struct Synced {
    pub store: String,
    pub devices: usize,
    pub summary: SyncSummary,
}

/// A device as people and scripts read it (`inventory show --json`, the API): every field of its file
/// (site, rack, fabrics, rails, BMC and management access), and every fabric it is attached to.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = InventoryDevice))]
pub struct DeviceView {
    #[serde(flatten)]
    pub device: Device,
    /// Every fabric the device is attached to.
    pub fabrics: Vec<lifeline_types::Fabric>,
}

impl DeviceView {
    pub fn of(d: &Device) -> DeviceView {
        DeviceView { device: d.clone(), fabrics: d.fabrics() }
    }
}

/// [`DeviceView`] as JSON.
pub fn device_json(d: &Device) -> Value {
    serde_json::to_value(DeviceView::of(d)).unwrap_or(Value::Null)
}

pub fn record(d: &Device) -> DeviceRecord {
    DeviceRecord {
        name: d.name.to_string(),
        role: d.role.to_string(),
        site: d.site.clone(),
        rack: d.rack.clone(),
        fabric: d.switch.as_ref().map(|s| s.fabric.to_string()),
        platform: d.switch.as_ref().map(|s| s.platform.to_string()),
        bmc_address: d.bmc.as_ref().map(|b| b.address.to_string()),
        bmc_protocol: d.bmc.as_ref().map(|b| b.protocol.to_string()),
        mgmt_address: d.management.as_ref().map(|m| m.address.to_string()),
        spec_json: device_json(d),
    }
}

impl Lifeline {
    /// Copies the inventory's devices into the store (audited).
    pub async fn inventory_sync(&self) -> Result<Synced> {
        let inv = self.inventory()?;
        let store = self.store().await?;
        let records: Vec<DeviceRecord> = inv.devices.iter().map(record).collect();
        let summary = store.sync_devices(&records).await?;
        self.audit()
            .await?
            .record(
                AuditAction::InventorySync,
                "fleet",
                Outcome::Ok,
                None,
                json!({ "source": inv.source, "summary": summary }),
            )
            .await?;
        Ok(Synced { store: store.location().to_owned(), devices: records.len(), summary })
    }
}
