//! The reads behind the fleet's views (the device list, the overview, a device's recorded evidence): the
//! newest observations of every device in one query per kind, the open faults counted per device, the
//! drains in force, a BMC's certificate pin, and how many state changes this process has written.
//!
//! Why here: the engine owns the store, and the views' cost must not grow with the fleet (10,000 devices
//! are three queries, not 30,000), which only the store's own queries can promise.

use std::collections::HashMap;

pub use lifeline_store::Observation;
use lifeline_store::PinKind;
use lifeline_types::Fingerprint;

use crate::context::Lifeline;
use crate::error::Result;
use crate::ops::audit_log::AuditRow;

/// As many open faults as any fleet holds: every one is counted.
const ALL_FAULTS: i64 = 1_000_000;

/// What the fleet list shows of each device besides its inventory fields.
#[derive(Debug, Clone, Default)]
pub struct FleetObservations {
    /// The newest `sweep` observation per device (power, health, the sweep's errors).
    pub sweep: HashMap<String, Observation>,
    /// The newest `health` observation per device.
    pub health: HashMap<String, Observation>,
    /// Open faults per device; a device without one is absent.
    pub open_faults: HashMap<String, usize>,
}

impl Lifeline {
    /// The newest observations and the open-fault count of every device, in three queries whatever the
    /// fleet's size.
    pub async fn fleet_observations(&self) -> Result<FleetObservations> {
        let store = self.store().await?;
        let by_device = |v: Vec<Observation>| v.into_iter().map(|o| (o.device.clone(), o)).collect();
        let mut open_faults = HashMap::new();
        for f in store.faults(Some("open"), ALL_FAULTS).await? {
            *open_faults.entry(f.device).or_default() += 1;
        }
        Ok(FleetObservations {
            sweep: by_device(store.latest_observations("sweep").await?),
            health: by_device(store.latest_observations("health").await?),
            open_faults,
        })
    }

    /// The same for one device: its newest observations and its open faults (counted even when none).
    pub async fn device_observations(&self, device: &str) -> Result<FleetObservations> {
        let store = self.store().await?;
        let mut seen = FleetObservations::default();
        for (kind, map) in [("sweep", &mut seen.sweep), ("health", &mut seen.health)] {
            if let Some(o) = store.latest_observation(device, kind).await? {
                map.insert(device.to_owned(), o);
            }
        }
        let open = store.faults(Some("open"), ALL_FAULTS).await?;
        seen.open_faults.insert(device.to_owned(), open.iter().filter(|f| f.device == device).count());
        Ok(seen)
    }

    /// The newest observation of `kind` recorded for `device` (`agent`, `verify`, `sweep`, …).
    pub async fn latest_observation(&self, device: &str, kind: &str) -> Result<Option<Observation>> {
        Ok(self.store().await?.latest_observation(device, kind).await?)
    }

    /// The pinned TLS certificate of `device`'s BMC: pinned under the BMC's name as the engine knows it,
    /// or else under its `address`.
    pub async fn bmc_tls_pin(&self, device: &str, address: Option<&str>) -> Result<Option<Fingerprint>> {
        let store = self.store().await?;
        let pin = store.pin(PinKind::Tls, device).await?;
        match (pin, address) {
            (None, Some(a)) => Ok(store.pin(PinKind::Tls, a).await?),
            (pin, _) => Ok(pin),
        }
    }

    /// The newest audit row per target among `actions` that ended in one of `outcomes`: the state a series
    /// of actions left each target in (whether Lifeline's drain is in force).
    pub async fn latest_audit_per_target(
        &self,
        actions: &[&str],
        outcomes: &[&str],
    ) -> Result<Vec<AuditRow>> {
        Ok(self.store().await?.latest_audit_per_target(actions, outcomes).await?)
    }

    /// How many state-changing writes (a fault, a run, a journal row, a drain) this process has made
    /// through its store: a view built at one count is stale once it moves. Writes by other processes do
    /// not count; their readers look again periodically.
    pub async fn state_generation(&self) -> Result<u64> {
        Ok(self.store().await?.generation())
    }
}
