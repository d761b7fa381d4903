//! What `health` reads below the system over Redfish: parts (storage, drives, controllers, processors,
//! memory), the BMC's own Managers, firmware items that are not OK, the service's conditions, and the GPUs
//! out of band (Processors of `ProcessorType: GPU`, with their metrics where the BMC has them).
//!
//! Why in `health`: a system rollup of `Warning` with no reason is not actionable, and the GPUs' Redfish view
//! is the one still working when the host OS is hung. Everything here is one concurrent round of reads
//! after the system is known; a part that cannot be read is a warning.

use lifeline_redfish::component_model::{Component, ComponentKind, Condition, GpuDetail};
use lifeline_redfish::model::ComputerSystem;
use lifeline_types::Health;
use serde::Serialize;

use crate::verdict::ComponentHealth;

/// One GPU as the BMC sees it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GpuHealth {
    pub resource: String,
    pub id: Option<String>,
    pub name: String,
    /// `gpu`, `nvswitch` or `baseboard`.
    pub role: std::borrow::Cow<'static, str>,
    /// The system (or, for iLO devices, the chassis) it belongs to (`@odata.id`).
    pub system: String,
    /// `unknown` when the BMC gives no health.
    pub health: Health,
    pub state: Option<String>,
    #[serde(flatten)]
    pub detail: GpuDetail,
    /// XID / SXID numbers among its conditions.
    pub driver_events: Vec<String>,
    /// The driver events its GPU baseboard's event log holds for it, by kind and number (history: not
    /// counted in the verdict; see `gpu_logs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logged_events: Vec<lifeline_redfish::gpu_events::GpuEventTally>,
}

impl GpuHealth {
    /// Its logged driver events in a line (`XID 45 ×92, XID 149 ×70 (newest XID 149 at ...)`); empty when
    /// there are none.
    pub fn logged_summary(&self) -> String {
        lifeline_redfish::gpu_events::summary_line(&self.logged_events)
    }
}

/// The GPUs a BMC lists against the inventory's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GpuCount {
    pub expected: u32,
    /// GPUs listed (NVSwitches and baseboards are not GPUs).
    pub listed: u32,
}

impl GpuCount {
    /// The comparison for a target expecting `expected` GPUs, or `None` when there is nothing to compare:
    /// no expectation, or a BMC that lists no GPU at all (most BMCs do not show GPUs out of band, and a
    /// node whose every GPU vanished from a BMC that does is caught by its in-band report instead).
    pub fn compare(expected: Option<u32>, gpus: &[GpuHealth]) -> Option<GpuCount> {
        let listed = gpus.iter().filter(|g| g.role == "gpu").count() as u32;
        (listed > 0).then_some(GpuCount { expected: expected?, listed })
    }

    /// GPUs the BMC does not list.
    pub fn missing(&self) -> u32 {
        self.expected.saturating_sub(self.listed)
    }

    /// The verdict's line for it, when GPUs are missing (a missing GPU is critical by itself).
    pub fn reason(&self) -> Option<String> {
        (self.missing() > 0).then(|| {
            format!(
                "GPUs: {} of {} expected listed by the BMC ({} missing)",
                self.listed,
                self.expected,
                self.missing()
            )
        })
    }

    /// Adds the comparison to what `health` says: the reason, and a critical verdict when GPUs are missing.
    pub fn judge(h: &mut crate::HealthSummary, expected: Option<u32>) {
        let Some(c) = GpuCount::compare(expected, &h.gpus) else { return };
        if let Some(r) = c.reason() {
            h.health = h.health.worst(Health::Critical);
            h.reasons.push(r);
            h.gpus_missing = Some(c);
        }
    }
}

/// Whether `s` is the GPU baseboard of the node rather than a node of its own: NVIDIA's HGX and GB200/GB300
/// BMC firmware lists the baseboard (its GPUs, and on Grace trays its CPUs) as a second ComputerSystem
/// `HGX_Baseboard_N` beside the host's. Its GPUs are the node's GPUs, so `health` and sweeps read them
/// with the target's system instead of calling the node "one of two systems, the other not read".
pub fn is_gpu_baseboard(s: &ComputerSystem) -> bool {
    s.id.as_deref()
        .unwrap_or_else(|| s.odata_id.trim_end_matches('/').rsplit('/').next().unwrap_or(""))
        .starts_with("HGX_Baseboard")
}

/// The systems read for a target whose system is `system`: it, then the GPU baseboards among `listed`.
pub fn node_systems(system: &ComputerSystem, listed: &[ComputerSystem]) -> Vec<ComputerSystem> {
    let same = |o: &ComputerSystem| o.odata_id.trim_end_matches('/') == system.odata_id.trim_end_matches('/');
    std::iter::once(system.clone())
        .chain(listed.iter().filter(|o| !same(o) && is_gpu_baseboard(o)).cloned())
        .collect()
}

/// The GPUs a BMC lists, read on their own (a sweep of a node with an expected GPU count): those of each
/// of `systems` (the target's and its GPU baseboards) and those the chassis list as devices.
pub(crate) async fn gpus_only(
    client: &lifeline_redfish::Client,
    systems: &[ComputerSystem],
    chassis: &[lifeline_redfish::model::Chassis],
) -> Vec<GpuHealth> {
    let reads =
        systems.iter().enumerate().map(|(i, s)| client.gpu_components(s, if i == 0 { chassis } else { &[] }));
    let listings = futures::future::join_all(reads).await;
    let mut out = Vec::new();
    for (system, l) in systems.iter().zip(listings) {
        out.extend(l.items.iter().filter_map(|c| {
            let home = match c.odata_id.split_once("/Devices/") {
                Some((chassis, _)) => chassis,
                None => &system.odata_id,
            };
            gpu_health(c, home)
        }));
    }
    out
}

impl crate::conn::RedfishConn {
    /// The GPUs this BMC lists, for a sweep: the system and its GPU baseboards, the chassis, the
    /// processors and iLO devices.
    pub(crate) async fn gpus(&mut self) -> Result<Vec<GpuHealth>, crate::BmcError> {
        let client = self.client.clone();
        let (system, chassis, listed) = tokio::join!(self.system(), client.chassis(), client.systems());
        let system = system?;
        let chassis = chassis.map_err(crate::conn::rf_err(&self.bmc))?;
        // A listing that fails leaves the target's own system, as before baseboards were read.
        let listed = listed.map(|l| l.items).unwrap_or_default();
        Ok(gpus_only(&client, &node_systems(&system, &listed), &chassis.items).await)
    }
}

/// What was read below the system.
#[derive(Debug, Default)]
pub(crate) struct Below {
    /// Parts that are not OK (in service or not: the verdict decides what counts).
    pub components: Vec<ComponentHealth>,
    pub conditions: Vec<Condition>,
    pub gpus: Vec<GpuHealth>,
    pub service_rollup: Option<Health>,
    pub warnings: Vec<String>,
}

fn component_health(c: &Component) -> ComponentHealth {
    ComponentHealth {
        kind: c.kind.to_string(),
        resource: c.odata_id.clone(),
        name: c.label(),
        health: c.health().unwrap_or(Health::Unknown),
        state: c.status.state.clone(),
    }
}

/// The GPU view of a component of kind GPU.
pub(crate) fn gpu_health(c: &Component, system: &str) -> Option<GpuHealth> {
    let detail = c.gpu.clone()?;
    Some(GpuHealth {
        resource: c.odata_id.clone(),
        id: c.id.clone(),
        name: c.label(),
        role: lifeline_redfish::component_model::gpu_role(&format!(
            "{} {}",
            c.label(),
            c.model.as_deref().unwrap_or("")
        ))
        .into(),
        system: system.to_owned(),
        health: c.health().unwrap_or(Health::Unknown),
        state: c.status.state.clone(),
        driver_events: c
            .conditions
            .iter()
            .filter_map(|x| x.gpu_event.as_ref().map(|e| format!("{} {}", e.kind, e.number)))
            .collect(),
        logged_events: Vec::new(),
        detail,
    })
}

/// Whether a part goes into the verdict's list: not OK, or carrying uncorrectable ECC errors.
fn notable(c: &Component) -> bool {
    let bad_health =
        c.health().is_some_and(|h| matches!(h, Health::Warning | Health::Critical)) && c.in_service();
    let ecc = c.gpu.as_ref().and_then(|g| g.ecc_uncorrectable).is_some_and(|n| n > 0);
    bad_health || ecc
}

/// Parts of `systems`, the Managers, firmware problems and the service's conditions, concurrently.
pub(crate) async fn below(
    client: &lifeline_redfish::Client,
    systems: &[ComputerSystem],
    chassis: &[lifeline_redfish::model::Chassis],
) -> Below {
    let per_system = futures::future::join_all(systems.iter().map(|s| client.components(s)));
    let (per_system, managers, firmware, service, devices, (gpu_logs, gpu_log_warnings)) = tokio::join!(
        per_system,
        client.manager_components(),
        client.firmware_problems(),
        client.service_conditions(),
        client.chassis_gpus(chassis),
        crate::gpu_logs::read(client, systems)
    );
    let mut out = Below::default();
    let warn = |w: &lifeline_redfish::FieldWarning| format!("{}: {}", w.at, w.problem);
    out.warnings.extend(devices.warnings.iter().map(warn));
    for c in &devices.items {
        let home = c.odata_id.split("/Devices/").next().unwrap_or(&c.odata_id);
        out.gpus.extend(gpu_health(c, home));
        if notable(c) {
            out.components.push(component_health(c));
        }
    }
    for (s, l) in systems.iter().zip(per_system) {
        out.warnings.extend(l.warnings.iter().map(warn));
        out.conditions.extend(s.conditions.iter().cloned());
        for c in &l.items {
            out.conditions.extend(c.conditions.iter().cloned());
            if let Some(g) = gpu_health(c, &s.odata_id) {
                out.gpus.push(g);
            }
            if notable(c) {
                let mut h = component_health(c);
                if c.gpu.as_ref().and_then(|g| g.ecc_uncorrectable).is_some_and(|n| n > 0) {
                    h.health = h.health.worst(Health::Critical);
                    h.name = format!("{} (uncorrectable ECC errors)", h.name);
                }
                out.components.push(h);
            }
        }
    }
    for l in [managers, firmware] {
        out.warnings.extend(l.warnings.iter().map(warn));
        for c in &l.items {
            out.conditions.extend(c.conditions.iter().cloned());
            if notable(c) || c.kind == ComponentKind::Firmware {
                out.components.push(component_health(c));
            }
        }
    }
    match service {
        Some(Ok(sc)) => {
            out.service_rollup = sc.rollup;
            out.conditions.extend(sc.conditions);
        }
        Some(Err(e)) => out.warnings.push(format!("ServiceConditions unreadable: {e}")),
        None => {}
    }
    out.warnings.extend(gpu_log_warnings);
    out.warnings.extend(crate::gpu_logs::attach(&gpu_logs, &mut out.gpus));
    // A condition is often listed both on its resource and in ServiceConditions: once each.
    let mut seen = std::collections::HashSet::new();
    out.conditions.retain(|c| {
        seen.insert((c.origin.clone(), c.message_id.clone(), c.message.clone(), c.timestamp.clone()))
    });
    out
}
