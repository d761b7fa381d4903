//! GPU checks over one model of GPU facts, filled either by NVML (live) or by a recorded snapshot.
//!
//! Keeping one fact model means the snapshot path (simulator, recorded states) exercises exactly the
//! judgement code a live node runs. The snapshot format is the simulator's `DIR/<node>/gpus.json`
//! (`crates/sim/src/node_state.rs`, schema 1); this crate does not depend on the simulator, it reads the
//! same JSON leniently (a missing field means "not reported", which skips that one check).

pub mod kmsg;
pub mod nvml;

use serde::{Deserialize, Serialize};

use crate::policy::GpuPolicy;
use crate::report::{Check, Evidence, Status};

/// Snapshot schema versions this crate understands.
pub const SNAPSHOT_SCHEMA: u32 = 1;

/// One XID, as the kernel log or NVML reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XidEvent {
    pub code: u64,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub message: String,
}

/// Facts about one GPU. `None` = the source could not report it (the matching check is skipped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuFacts {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: String,
    pub ecc_volatile_uncorrected: Option<u64>,
    pub retired_pages_pending: Option<bool>,
    pub remapped_rows_pending: Option<bool>,
    pub remapped_rows_failure: Option<bool>,
    pub xid_events: Vec<XidEvent>,
    pub nvlinks_up: Option<u32>,
    pub nvlinks_down: Option<u32>,
    pub pcie_gen_current: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_current: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub temperature_c: Option<u32>,
    /// NVML names in snake_case: `gpu_idle`, `sw_power_cap`, `hw_slowdown`, `sw_thermal_slowdown`, ...
    pub throttle_reasons: Vec<String>,
}

/// A recorded GPU state (`gpus.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSnapshot {
    #[serde(default = "one")]
    pub schema: u32,
    #[serde(default)]
    pub node: String,
    #[serde(default)]
    pub taken_at: String,
    /// False: the host was not up, NVML would not have answered.
    #[serde(default = "yes")]
    pub host_up: bool,
    #[serde(default)]
    pub driver_version: String,
    #[serde(default)]
    pub gpus: Vec<GpuFacts>,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// Where GPU facts come from and what went wrong getting them.
#[derive(Debug, thiserror::Error)]
pub enum GpuSourceError {
    #[error(
        "NVML is not available ({detail}): libnvidia-ml.so.1 could not be loaded or initialised; \
         is the NVIDIA driver installed and loaded?"
    )]
    NvmlMissing { detail: String },
    #[error("NVML call {call} failed")]
    Nvml {
        call: String,
        #[source]
        source: ::nvml_wrapper::error::NvmlError,
    },
    #[error("cannot read GPU snapshot {path}")]
    SnapshotRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid GPU snapshot {path}")]
    SnapshotParse {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("GPU snapshot {path} has schema {found}; this agent reads schema {SNAPSHOT_SCHEMA}")]
    SnapshotSchema { path: String, found: u32 },
    #[error("GPU snapshot {path} was taken while the host was down: NVML would not have answered")]
    HostDown { path: String },
}

/// Facts collected from one source, with the name of the source for evidence.
#[derive(Debug, Clone)]
pub struct Collected {
    pub source: String,
    pub driver_version: String,
    pub gpus: Vec<GpuFacts>,
    /// Extra notes about coverage (e.g. kernel log unreadable), shown in the XID check.
    pub xid_coverage: String,
}

impl GpuSnapshot {
    pub fn load(path: &std::path::Path) -> Result<Collected, GpuSourceError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| GpuSourceError::SnapshotRead { path: shown.clone(), source })?;
        let snap: GpuSnapshot = serde_json::from_str(&text)
            .map_err(|source| GpuSourceError::SnapshotParse { path: shown.clone(), source })?;
        if snap.schema != SNAPSHOT_SCHEMA {
            return Err(GpuSourceError::SnapshotSchema { path: shown, found: snap.schema });
        }
        if !snap.host_up {
            return Err(GpuSourceError::HostDown { path: shown });
        }
        Ok(Collected {
            // Evidence names the kind of source only; the report's `sources.gpu` carries the path.
            source: "snapshot".into(),
            driver_version: snap.driver_version,
            gpus: snap.gpus,
            xid_coverage: format!(
                "xid_events since driver load as recorded in the snapshot taken {}",
                snap.taken_at
            ),
        })
    }
}

/// Throttle reasons that mean the GPU is being slowed by hardware or heat, not by policy or idleness.
pub const BAD_THROTTLE: &[&str] =
    &["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown"];

fn gpu_subject(g: &GpuFacts) -> String {
    format!("gpu {}", g.index)
}

fn src(c: &Collected, what: &str) -> String {
    format!("{} {what}", c.source)
}

/// Every GPU check over collected facts.
pub fn checks(policy: &GpuPolicy, c: &Collected) -> Vec<Check> {
    let mut out = Vec::new();
    out.push(count(policy, c));
    out.push(model(policy, c));
    for g in &c.gpus {
        let subj = gpu_subject(g);
        out.push(ecc(c, g, &subj));
        out.push(retired(c, g, &subj));
        out.push(xid(policy, c, g, &subj));
        out.push(nvlink(policy, c, g, &subj));
        out.push(pcie(policy, c, g, &subj));
        out.push(thermal(policy, c, g, &subj));
    }
    out
}

fn count(policy: &GpuPolicy, c: &Collected) -> Check {
    let n = c.gpus.len() as u32;
    let ev = vec![
        Evidence::new("count", n.to_string(), src(c, "device_count")),
        Evidence::new("driver_version", c.driver_version.clone(), src(c, "sys_driver_version")),
    ];
    if n == policy.count {
        Check::new("gpu.count", "gpus", Status::Pass, format!("{n} GPUs")).with_evidence(ev)
    } else {
        Check::new("gpu.count", "gpus", Status::Fail, format!("{n} GPUs visible, expected {}", policy.count))
            .with_evidence(ev)
    }
}

fn model(policy: &GpuPolicy, c: &Collected) -> Check {
    let Some(want) = &policy.model else {
        return Check::new("gpu.model", "gpus", Status::Skip, "no model in the policy");
    };
    let ev: Vec<Evidence> = c
        .gpus
        .iter()
        .map(|g| Evidence::new(format!("name[{}]", g.index), g.name.clone(), src(c, "name")))
        .collect();
    let wrong: Vec<String> = c
        .gpus
        .iter()
        .filter(|g| !g.name.to_lowercase().contains(&want.to_lowercase()))
        .map(|g| format!("gpu {} is {}", g.index, g.name))
        .collect();
    if wrong.is_empty() {
        Check::new("gpu.model", "gpus", Status::Pass, want.clone()).with_evidence(ev)
    } else {
        Check::new("gpu.model", "gpus", Status::Fail, format!("expected {want}: {}", wrong.join(", ")))
            .with_evidence(ev)
    }
}

fn ecc(c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    let Some(n) = g.ecc_volatile_uncorrected else {
        return Check::new("gpu.ecc", subj, Status::Skip, "volatile ECC counters not reported (ECC off?)");
    };
    let ev = vec![Evidence::new("ecc_volatile_uncorrected", n.to_string(), src(c, "total_ecc_errors"))];
    if n == 0 {
        Check::new("gpu.ecc", subj, Status::Pass, "no volatile uncorrectable ECC errors").with_evidence(ev)
    } else {
        Check::new("gpu.ecc", subj, Status::Fail, format!("{n} volatile uncorrectable ECC errors"))
            .with_evidence(ev)
    }
}

fn retired(c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    let mut ev = Vec::new();
    let mut bad = Vec::new();
    for (key, v, call) in [
        ("retired_pages_pending", g.retired_pages_pending, "are_pages_pending_retired"),
        ("remapped_rows_pending", g.remapped_rows_pending, "field NVML_FI_DEV_REMAPPED_PENDING"),
        ("remapped_rows_failure", g.remapped_rows_failure, "field NVML_FI_DEV_REMAPPED_FAILURE"),
    ] {
        if let Some(v) = v {
            ev.push(Evidence::new(key, v.to_string(), src(c, call)));
            if v {
                bad.push(key);
            }
        }
    }
    if ev.is_empty() {
        Check::new("gpu.retired_pages", subj, Status::Skip, "page retirement / row remapping not reported")
    } else if bad.is_empty() {
        Check::new("gpu.retired_pages", subj, Status::Pass, "no pending page retirement or row remap")
            .with_evidence(ev)
    } else {
        Check::new("gpu.retired_pages", subj, Status::Fail, format!("{} (GPU reset needed)", bad.join(", ")))
            .with_evidence(ev)
    }
}

fn xid(policy: &GpuPolicy, c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    let mut ev: Vec<Evidence> = g
        .xid_events
        .iter()
        .map(|x| {
            Evidence::new(
                format!("xid {}", x.code),
                format!("{} {}", x.at, x.message).trim().to_owned(),
                src(c, "xid"),
            )
        })
        .collect();
    ev.push(Evidence::new("coverage", c.xid_coverage.clone(), c.source.clone()));
    let critical: Vec<String> = g
        .xid_events
        .iter()
        .filter(|x| policy.critical_xids.contains(&x.code))
        .map(|x| x.code.to_string())
        .collect();
    if critical.is_empty() {
        let msg = if g.xid_events.is_empty() {
            "no XID".to_owned()
        } else {
            format!("{} non-critical XID(s)", g.xid_events.len())
        };
        Check::new("gpu.xid", subj, Status::Pass, msg).with_evidence(ev)
    } else {
        Check::new("gpu.xid", subj, Status::Fail, format!("critical XID {}", critical.join(", ")))
            .with_evidence(ev)
    }
}

fn nvlink(policy: &GpuPolicy, c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    let Some(want) = policy.nvlinks else {
        return Check::new("gpu.nvlink", subj, Status::Skip, "no nvlinks in the policy");
    };
    let Some(up) = g.nvlinks_up else {
        return Check::new("gpu.nvlink", subj, Status::Error, "NVLink state not reported");
    };
    let mut ev = vec![Evidence::new("nvlinks_up", up.to_string(), src(c, "nvlink is_active"))];
    if let Some(down) = g.nvlinks_down {
        ev.push(Evidence::new("nvlinks_down", down.to_string(), src(c, "nvlink is_active")));
    }
    if up >= want {
        Check::new("gpu.nvlink", subj, Status::Pass, format!("{up} NVLinks up")).with_evidence(ev)
    } else {
        Check::new("gpu.nvlink", subj, Status::Fail, format!("{up} NVLinks up, expected {want}"))
            .with_evidence(ev)
    }
}

fn pcie(policy: &GpuPolicy, c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    if policy.pcie_gen.is_none() && policy.pcie_width.is_none() {
        return Check::new("gpu.pcie", subj, Status::Skip, "no pcie_gen / pcie_width in the policy");
    }
    let mut ev = Vec::new();
    for (k, v, call) in [
        ("pcie_gen_current", g.pcie_gen_current, "current_pcie_link_gen"),
        ("pcie_gen_max", g.pcie_gen_max, "max_pcie_link_gen"),
        ("pcie_width_current", g.pcie_width_current, "current_pcie_link_width"),
        ("pcie_width_max", g.pcie_width_max, "max_pcie_link_width"),
    ] {
        if let Some(v) = v {
            ev.push(Evidence::new(k, v.to_string(), src(c, call)));
        }
    }
    let mut problems = Vec::new();
    // Idle GPUs legitimately drop the CURRENT generation to save power, so the generation is judged on the
    // link's maximum; a narrower width than expected is a mistrained link whatever the load.
    if let Some(want) = policy.pcie_gen {
        match g.pcie_gen_max {
            Some(v) if v < want => problems.push(format!("gen {v} < {want}")),
            Some(_) => {}
            None => {
                return Check::new("gpu.pcie", subj, Status::Error, "PCIe generation not reported")
                    .with_evidence(ev);
            }
        }
    }
    if let Some(want) = policy.pcie_width {
        match g.pcie_width_current {
            Some(v) if v < want => problems.push(format!("width x{v} < x{want}")),
            Some(_) => {}
            None => {
                return Check::new("gpu.pcie", subj, Status::Error, "PCIe width not reported")
                    .with_evidence(ev);
            }
        }
    }
    if problems.is_empty() {
        let shown = format!(
            "gen {} x{}",
            g.pcie_gen_max.map(|v| v.to_string()).unwrap_or("?".into()),
            g.pcie_width_current.map(|v| v.to_string()).unwrap_or("?".into())
        );
        Check::new("gpu.pcie", subj, Status::Pass, shown).with_evidence(ev)
    } else {
        Check::new("gpu.pcie", subj, Status::Fail, format!("PCIe downgraded: {}", problems.join(", ")))
            .with_evidence(ev)
    }
}

fn thermal(policy: &GpuPolicy, c: &Collected, g: &GpuFacts, subj: &str) -> Check {
    let mut ev = Vec::new();
    let mut problems = Vec::new();
    match g.temperature_c {
        Some(t) => {
            ev.push(Evidence::new("temperature_c", t.to_string(), src(c, "temperature(gpu)")));
            if t > policy.max_temp_c {
                problems.push(format!("{t} C > {} C", policy.max_temp_c));
            }
        }
        None => return Check::new("gpu.thermal", subj, Status::Error, "temperature not reported"),
    }
    ev.push(Evidence::new(
        "throttle_reasons",
        g.throttle_reasons.join(","),
        src(c, "current_throttle_reasons"),
    ));
    let bad: Vec<&str> =
        g.throttle_reasons.iter().map(String::as_str).filter(|r| BAD_THROTTLE.contains(r)).collect();
    if !bad.is_empty() {
        problems.push(format!("throttled: {}", bad.join(", ")));
    }
    if problems.is_empty() {
        Check::new(
            "gpu.thermal",
            subj,
            Status::Pass,
            format!("{} C, no hardware/thermal throttling", g.temperature_c.unwrap_or(0)),
        )
        .with_evidence(ev)
    } else {
        Check::new("gpu.thermal", subj, Status::Fail, problems.join("; ")).with_evidence(ev)
    }
}
