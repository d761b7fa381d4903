//! Walking the parts below a system (storage with its controllers and drives, processors and GPUs with
//! their metrics, memory), the Managers' own status, firmware items that are not OK, and the service's
//! conditions. Every collection is read concurrently and every failure is a warning: a BMC that lacks one
//! of them (sushy-emulator's 501 on Storage) still reports the rest.

use futures::future::join_all;
use serde_json::Value;

use super::{Client, Listing};
use crate::component_model::{self as cm, Component, ComponentKind, Condition};
use crate::doc::FieldWarning;
use crate::model::ComputerSystem;

/// What [`Client::service_conditions`] read.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ServiceConditions {
    /// `HealthRollup` of `/redfish/v1/ServiceConditions`.
    pub rollup: Option<lifeline_types::Health>,
    pub conditions: Vec<Condition>,
}

impl Client {
    /// Storage (each storage, its controllers and drives), processors (GPUs with their metrics) and memory
    /// of `system`.
    pub async fn components(&self, system: &ComputerSystem) -> Listing<Component> {
        let (storage, processors, memory) = tokio::join!(
            self.storage_components(system.storage.as_deref()),
            self.collection_components(system.processors.as_deref(), ComponentKind::Processor),
            self.collection_components(system.memory.as_deref(), ComponentKind::Memory),
        );
        let mut out = empty();
        for l in [storage, processors, memory] {
            out.items.extend(l.items);
            out.warnings.extend(l.warnings);
        }
        let metrics = out.items.iter().map(|c| async move {
            let link = c.gpu.as_ref()?.metrics.clone()?;
            Some((link.clone(), self.get_json(&link).await))
        });
        let metrics = join_all(metrics).await;
        for (c, m) in out.items.iter_mut().zip(metrics) {
            match (m, c.gpu.as_mut()) {
                (Some((_, Ok((v, notes)))), Some(g)) => {
                    out.warnings.extend(notes);
                    cm::apply_gpu_metrics(g, &v);
                }
                (Some((at, Err(e))), _) => {
                    out.warnings.push(FieldWarning { at, problem: format!("GPU metrics unreadable: {e}") })
                }
                _ => {}
            }
        }
        out
    }

    /// GPUs, NVSwitches and GPU baseboards an iLO lists among its chassis' devices
    /// ([`cm::hpe_gpu_device`]).
    pub async fn chassis_gpus(&self, chassis: &[crate::model::Chassis]) -> Listing<Component> {
        let reads = chassis.iter().filter_map(|c| c.oem_devices.as_deref()).map(|l| self.members_expanded(l));
        let mut out = empty();
        for (r, link) in
            join_all(reads).await.into_iter().zip(chassis.iter().filter_map(|c| c.oem_devices.clone()))
        {
            match r {
                Ok(l) => {
                    out.warnings.extend(l.warnings);
                    for (id, v) in l.items {
                        out.items.extend(cm::hpe_gpu_device(&v, &id, &mut out.warnings));
                    }
                }
                Err(e) => out.warnings.push(FieldWarning { at: link, problem: format!("unreadable: {e}") }),
            }
        }
        out
    }

    /// The GPUs of `system` (Processors of `ProcessorType: GPU`, without their metrics) and those the
    /// chassis list as devices (iLO): what a sweep compares with the inventory's GPU count, in a few
    /// requests instead of the whole walk below the system.
    pub async fn gpu_components(
        &self,
        system: &ComputerSystem,
        chassis: &[crate::model::Chassis],
    ) -> Listing<Component> {
        let (processors, devices) = futures::join!(
            self.collection_components(system.processors.as_deref(), ComponentKind::Processor),
            self.chassis_gpus(chassis)
        );
        let mut out = empty();
        for l in [processors, devices] {
            out.items.extend(l.items.into_iter().filter(|c| c.gpu.is_some()));
            out.warnings.extend(l.warnings);
        }
        out
    }

    /// Every Manager's own status, as components.
    pub async fn manager_components(&self) -> Listing<Component> {
        match &self.inner.root.managers {
            Some(l) => self.collection_components(Some(l), ComponentKind::Manager).await,
            None => empty(),
        }
    }

    /// Items of `UpdateService/FirmwareInventory` whose status is not OK (or that carry conditions).
    pub async fn firmware_problems(&self) -> Listing<Component> {
        let mut out = empty();
        let Some(us) = self.inner.root.update_service.clone() else { return out };
        let inventory = match self.get_json(&us).await {
            Ok((v, _)) => {
                v.pointer("/FirmwareInventory/@odata.id").and_then(Value::as_str).map(str::to_owned)
            }
            Err(e) => {
                out.warnings.push(FieldWarning { at: us, problem: format!("unreadable: {e}") });
                return out;
            }
        };
        let Some(inventory) = inventory else { return out };
        match self.members_expanded(&inventory).await {
            Ok(l) => {
                out.warnings.extend(l.warnings);
                for (id, v) in l.items {
                    out.items.extend(cm::firmware_problem(&v, &id, &mut out.warnings));
                }
            }
            Err(e) => out.warnings.push(FieldWarning { at: inventory, problem: format!("unreadable: {e}") }),
        }
        out
    }

    /// `/redfish/v1/ServiceConditions` where the service has it (`None`: it does not).
    pub async fn service_conditions(&self) -> Option<Result<ServiceConditions, crate::RedfishError>> {
        let link = self.inner.root.service_conditions.clone()?;
        Some(self.get_json(&link).await.map(|(v, _)| {
            let (rollup, conditions) = cm::service_conditions(&v);
            ServiceConditions { rollup, conditions }
        }))
    }

    async fn collection_components(&self, link: Option<&str>, kind: ComponentKind) -> Listing<Component> {
        let mut out = empty();
        let Some(link) = link else { return out };
        match self.members_expanded(link).await {
            Ok(l) => {
                out.warnings.extend(l.warnings);
                for (id, v) in l.items {
                    out.items.push(cm::component_from_value(kind, &v, &id, &mut out.warnings));
                }
            }
            Err(e) => {
                out.warnings.push(FieldWarning { at: link.to_owned(), problem: format!("unreadable: {e}") })
            }
        }
        out
    }

    /// Each storage resource, its controllers (embedded `StorageControllers` or the `Controllers`
    /// collection) and its drives.
    async fn storage_components(&self, link: Option<&str>) -> Listing<Component> {
        let mut out = empty();
        let Some(link) = link else { return out };
        let storages = match self.members_expanded(link).await {
            Ok(l) => l,
            Err(e) => {
                out.warnings.push(FieldWarning { at: link.to_owned(), problem: format!("unreadable: {e}") });
                return out;
            }
        };
        out.warnings.extend(storages.warnings);
        let per_storage = storages.items.iter().map(|(id, v)| async move {
            let mut l = empty();
            l.items.push(cm::component_from_value(ComponentKind::Storage, v, id, &mut l.warnings));
            if let Some(Value::Array(ctrls)) = v.get("StorageControllers") {
                for (i, c) in ctrls.iter().enumerate() {
                    let at = format!("{id}#/StorageControllers/{i}");
                    l.items.push(cm::component_from_value(
                        ComponentKind::StorageController,
                        c,
                        &at,
                        &mut l.warnings,
                    ));
                }
            } else if let Some(ctrl) = v.pointer("/Controllers/@odata.id").and_then(Value::as_str) {
                let c = self.collection_components(Some(ctrl), ComponentKind::StorageController).await;
                l.items.extend(c.items);
                l.warnings.extend(c.warnings);
            }
            let drives: Vec<String> = match v.get("Drives") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|d| d.get("@odata.id").and_then(Value::as_str).map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            let reads = join_all(drives.iter().map(|d| self.get_json(d))).await;
            for (d, r) in drives.iter().zip(reads) {
                match r {
                    Ok((v, notes)) => {
                        l.warnings.extend(notes);
                        l.items.push(cm::component_from_value(ComponentKind::Drive, &v, d, &mut l.warnings));
                    }
                    Err(e) => {
                        l.warnings.push(FieldWarning { at: d.clone(), problem: format!("unreadable: {e}") })
                    }
                }
            }
            l
        });
        for l in join_all(per_storage).await {
            out.items.extend(l.items);
            out.warnings.extend(l.warnings);
        }
        out
    }
}

fn empty() -> Listing<Component> {
    Listing { items: Vec::new(), warnings: Vec::new() }
}
