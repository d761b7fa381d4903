//! GPU facts from NVML (`libnvidia-ml.so.1`, loaded at run time by `nvml-wrapper`).
//!
//! The library is loaded at run time, so the agent builds and runs on machines without NVIDIA software; a
//! node that expects GPUs but cannot load NVML gets an ERROR (never a pass). Per-field NVML failures (a
//! query a GPU generation does not support) degrade that one fact to "not reported", never the node.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;

use super::kmsg;
use super::{Collected, GpuFacts, GpuSourceError, XidEvent};

const FI_REMAPPED_PENDING: u32 = 144;
const FI_REMAPPED_FAILURE: u32 = 145;
const NVLINK_MAX_LINKS: u32 = 18;

/// Loads NVML and collects every GPU's facts; watches critical-XID events for `xid_window`, and reads
/// XIDs since boot from `kmsg_path` (normally `/dev/kmsg`).
pub fn collect(xid_window: Duration, kmsg_path: &Path) -> Result<Collected, GpuSourceError> {
    let nvml = Nvml::init().map_err(|e| GpuSourceError::NvmlMissing { detail: e.to_string() })?;
    let driver_version = nvml.sys_driver_version().unwrap_or_default();
    let count = nvml
        .device_count()
        .map_err(|source| GpuSourceError::Nvml { call: "nvmlDeviceGetCount".into(), source })?;
    let mut gpus = Vec::new();
    for index in 0..count {
        let dev = nvml.device_by_index(index).map_err(|source| GpuSourceError::Nvml {
            call: format!("nvmlDeviceGetHandleByIndex({index})"),
            source,
        })?;
        gpus.push(facts(index, &dev));
    }

    let mut coverage = Vec::new();
    match kmsg::read_kmsg(kmsg_path) {
        Ok(records) => {
            let mut n = 0;
            for rec in &records {
                let Some(x) = kmsg::parse_xid(rec) else { continue };
                n += 1;
                if let Some(g) = gpus.iter_mut().find(|g| kmsg::parse_pci(&g.pci_bus_id) == Some(x.pci)) {
                    g.xid_events.push(XidEvent { code: x.code, at: "since boot".into(), message: x.message });
                }
            }
            coverage.push(format!("{} read ({} records, {n} XID lines)", kmsg_path.display(), records.len()));
        }
        Err(e) => {
            coverage.push(format!("{} unreadable ({e}): XIDs before this run not seen", kmsg_path.display()))
        }
    }
    watch_xids(&nvml, &mut gpus, xid_window, &mut coverage);

    Ok(Collected { source: "nvml".into(), driver_version, gpus, xid_coverage: coverage.join("; ") })
}

fn facts(index: u32, dev: &nvml_wrapper::Device<'_>) -> GpuFacts {
    let mut g = GpuFacts {
        index,
        uuid: dev.uuid().unwrap_or_default(),
        name: dev.name().unwrap_or_default(),
        pci_bus_id: dev.pci_info().map(|p| p.bus_id).unwrap_or_default(),
        ..GpuFacts::default()
    };
    let ecc_on = dev.is_ecc_enabled().map(|m| m.currently_enabled).unwrap_or(false);
    if ecc_on {
        g.ecc_volatile_uncorrected =
            dev.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile).ok();
    }
    g.retired_pages_pending = dev.are_pages_pending_retired().ok();
    if let Ok(values) = dev.field_values_for(&[FieldId(FI_REMAPPED_PENDING), FieldId(FI_REMAPPED_FAILURE)]) {
        for v in values.into_iter().flatten() {
            let Ok(value) = v.value else { continue };
            let n = match value {
                SampleValue::U32(n) => u64::from(n),
                SampleValue::U64(n) => n,
                SampleValue::I64(n) => n.max(0) as u64,
                SampleValue::F64(f) => f.max(0.0) as u64,
            };
            match v.field.0 {
                FI_REMAPPED_PENDING => g.remapped_rows_pending = Some(n != 0),
                FI_REMAPPED_FAILURE => g.remapped_rows_failure = Some(n != 0),
                _ => {}
            }
        }
    }
    let (mut up, mut down, mut any) = (0, 0, false);
    for link in 0..NVLINK_MAX_LINKS {
        match dev.link_wrapper_for(link).is_active() {
            Ok(true) => (up, any) = (up + 1, true),
            Ok(false) => (down, any) = (down + 1, true),
            Err(_) => {}
        }
    }
    if any {
        g.nvlinks_up = Some(up);
        g.nvlinks_down = Some(down);
    } else {
        // No NVLink on this board (PCIe card): report zero so a policy expecting links fails loudly.
        g.nvlinks_up = Some(0);
    }
    g.pcie_gen_current = dev.current_pcie_link_gen().ok();
    g.pcie_gen_max = dev.max_pcie_link_gen().ok();
    g.pcie_width_current = dev.current_pcie_link_width().ok();
    g.pcie_width_max = dev.max_pcie_link_width().ok();
    g.temperature_c = dev.temperature(TemperatureSensor::Gpu).ok();
    if let Ok(r) = dev.current_throttle_reasons() {
        g.throttle_reasons = throttle_names(r);
    }
    g
}

/// NVML's throttle reason bits in the snapshot's snake_case names.
pub fn throttle_names(r: ThrottleReasons) -> Vec<String> {
    let table = [
        (ThrottleReasons::GPU_IDLE, "gpu_idle"),
        (ThrottleReasons::APPLICATIONS_CLOCKS_SETTING, "applications_clocks_setting"),
        (ThrottleReasons::SW_POWER_CAP, "sw_power_cap"),
        (ThrottleReasons::HW_SLOWDOWN, "hw_slowdown"),
        (ThrottleReasons::SYNC_BOOST, "sync_boost"),
        (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown"),
        (ThrottleReasons::DISPLAY_CLOCK_SETTING, "display_clock_setting"),
    ];
    table.iter().filter(|(bit, _)| r.contains(*bit)).map(|(_, n)| (*n).to_owned()).collect()
}

fn watch_xids(nvml: &Nvml, gpus: &mut [GpuFacts], window: Duration, coverage: &mut Vec<String>) {
    if window.is_zero() {
        return;
    }
    let mut registered: Vec<u32> = Vec::new();
    let mut unsupported = Vec::new();
    let Ok(mut set) = nvml.create_event_set() else {
        coverage.push("NVML event set unavailable: no live XID watch".into());
        return;
    };
    for g in gpus.iter() {
        let Ok(dev) = nvml.device_by_index(g.index) else { continue };
        match dev.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(s) => {
                set = s;
                registered.push(g.index);
            }
            Err(_) => {
                // A failed registration consumes the set: rebuild it with the devices that worked.
                unsupported.push(g.index);
                let Ok(mut fresh) = nvml.create_event_set() else { return };
                for i in &registered {
                    if let Ok(d) = nvml.device_by_index(*i) {
                        match d.register_events(EventTypes::CRITICAL_XID_ERROR, fresh) {
                            Ok(s) => fresh = s,
                            Err(_) => return,
                        }
                    }
                }
                set = fresh;
            }
        }
    }
    let by_uuid: BTreeMap<String, usize> =
        gpus.iter().enumerate().map(|(i, g)| (g.uuid.clone(), i)).collect();
    let deadline = Instant::now() + window;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let ms = u32::try_from(left.as_millis()).unwrap_or(u32::MAX).max(1);
        match set.wait(ms) {
            Ok(ev) => {
                let code = match ev.event_data {
                    Some(XidError::Value(v)) => v,
                    Some(XidError::Unknown) | None => 999,
                };
                if let Some(&i) = ev.device.uuid().ok().and_then(|u| by_uuid.get(&u)) {
                    gpus[i].xid_events.push(XidEvent {
                        code,
                        at: "during check".into(),
                        message: String::new(),
                    });
                }
            }
            Err(NvmlError::Timeout) => break,
            Err(_) => break,
        }
    }
    coverage.push(format!(
        "NVML critical-XID events watched for {} ms on {} GPU(s){}",
        window.as_millis(),
        registered.len(),
        if unsupported.is_empty() { String::new() } else { format!(", unsupported on {unsupported:?}") }
    ));
}
