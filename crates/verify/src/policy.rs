//! What a healthy node looks like: expected GPUs, RDMA rails and host settings.
//!
//! The agent runs on nodes that may not carry the fleet inventory, so expectations come either from a
//! small TOML policy file (strict: an unknown key is an error, a typo must never silently disable a check)
//! or are derived from the inventory by the caller.

use std::net::Ipv4Addr;
use std::path::Path;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

/// Everything the checks compare against.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Node name printed in the report (defaults to the host name).
    #[serde(default)]
    pub node: Option<String>,
    /// Absent: the node is not expected to have GPUs and the GPU checks are skipped.
    #[serde(default)]
    pub gpus: Option<GpuPolicy>,
    #[serde(default)]
    pub rails: Vec<RailPolicy>,
    #[serde(default)]
    pub host: HostPolicy,
    #[serde(default)]
    pub sampling: SamplingPolicy,
}

/// Expected GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuPolicy {
    pub count: u32,
    /// Matched case-insensitively as a substring of NVML's name (drivers differ in prefixes).
    #[serde(default)]
    pub model: Option<String>,
    /// Expected PCIe generation (compared with the link's maximum; idle GPUs downshift the current one).
    #[serde(default)]
    pub pcie_gen: Option<u32>,
    /// Expected PCIe width (compared with the current width: a link trained narrower is a fault).
    #[serde(default)]
    pub pcie_width: Option<u32>,
    /// Active NVLinks expected per GPU.
    #[serde(default)]
    pub nvlinks: Option<u32>,
    #[serde(default = "default_max_temp")]
    pub max_temp_c: u32,
    /// How long to wait for NVML critical-XID events (in addition to the kernel log since boot).
    #[serde(default = "default_xid_window")]
    pub xid_window_ms: u64,
    /// XIDs that keep a node out of training.
    #[serde(default = "default_critical_xids")]
    pub critical_xids: Vec<u64>,
}

fn default_max_temp() -> u32 {
    85
}
fn default_xid_window() -> u64 {
    200
}
/// Double-bit ECC, row-remap pending/failure, NVLink, fallen off the bus, contained/uncontained ECC, GSP.
pub fn default_critical_xids() -> Vec<u64> {
    vec![48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140]
}

/// Link layer of an RDMA port, as `/sys/class/infiniband/<hca>/ports/<n>/link_layer` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkLayer {
    /// RoCE (v2).
    Ethernet,
    #[serde(alias = "ib")]
    Infiniband,
}

impl LinkLayer {
    /// The spelling in sysfs.
    pub fn sysfs_name(self) -> &'static str {
        match self {
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Infiniband => "InfiniBand",
        }
    }
}

/// One expected RDMA rail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailPolicy {
    pub hca: String,
    #[serde(default = "default_port")]
    pub port: u32,
    pub netdev: String,
    /// The rail's address; a RoCEv2 GID must carry it (Ethernet rails).
    #[serde(default)]
    pub ipv4: Option<Ipv4Net>,
    /// Minimum port rate in Gb/s.
    pub rate_gbps: u32,
    pub mtu: u32,
    pub link_layer: LinkLayer,
}

impl RailPolicy {
    pub fn address(&self) -> Option<Ipv4Addr> {
        self.ipv4.map(|n| n.addr())
    }
}

fn default_port() -> u32 {
    1
}

/// Host network settings the multi-rail setup depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPolicy {
    /// The only interface allowed to carry a default route (absent: not checked).
    #[serde(default)]
    pub frontend_interface: Option<String>,
    /// Accepted effective `rp_filter` values on rail interfaces (strict mode 1 drops multi-rail replies).
    #[serde(default = "default_rp_filter")]
    pub rp_filter: Vec<u32>,
    /// Maximum PFC pause frames per second (rx or tx, summed over priorities) per rail; absent: not checked.
    #[serde(default)]
    pub pfc_max_pause_per_sec: Option<u64>,
}

impl Default for HostPolicy {
    fn default() -> Self {
        HostPolicy { frontend_interface: None, rp_filter: default_rp_filter(), pfc_max_pause_per_sec: None }
    }
}

fn default_rp_filter() -> Vec<u32> {
    vec![0, 2]
}

/// How long to watch counters that must not rise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingPolicy {
    #[serde(default = "default_interval")]
    pub interval_ms: u64,
    /// Port error counters (under `ports/<n>/counters/`) that must not rise between the two reads.
    #[serde(default = "default_counters")]
    pub error_counters: Vec<String>,
}

impl Default for SamplingPolicy {
    fn default() -> Self {
        SamplingPolicy { interval_ms: default_interval(), error_counters: default_counters() }
    }
}

fn default_interval() -> u64 {
    500
}

pub fn default_counters() -> Vec<String> {
    [
        "symbol_error",
        "link_downed",
        "link_error_recovery",
        "port_rcv_errors",
        "port_rcv_remote_physical_errors",
        "port_xmit_discards",
        "local_link_integrity_errors",
        "excessive_buffer_overrun_errors",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid policy {path}")]
    Parse {
        path: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("invalid policy {path}: {problem}")]
    Invalid { path: String, problem: String },
}

impl Policy {
    pub fn from_toml_str(text: &str, path: &str) -> Result<Policy, PolicyError> {
        let policy: Policy =
            toml::from_str(text).map_err(|source| PolicyError::Parse { path: path.to_owned(), source })?;
        policy.validate().map_err(|problem| PolicyError::Invalid { path: path.to_owned(), problem })?;
        Ok(policy)
    }

    pub fn from_file(path: &Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| PolicyError::Read { path: shown.clone(), source })?;
        Policy::from_toml_str(&text, &shown)
    }

    /// Catches contradictions serde cannot: duplicate rails, zero expectations.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for r in &self.rails {
            if !seen.insert((&r.hca, r.port)) {
                return Err(format!("rail {} port {} listed twice", r.hca, r.port));
            }
            if r.mtu == 0 || r.rate_gbps == 0 {
                return Err(format!("rail {}: mtu and rate_gbps must be > 0", r.hca));
            }
        }
        if self.host.rp_filter.is_empty() {
            return Err("host.rp_filter must list at least one accepted value".into());
        }
        Ok(())
    }
}
