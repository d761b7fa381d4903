//! The validated cluster model that the rest of Lifeline works with. Every value here has been checked.

use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;
use lifeline_types::{
    BmcProtocol, ConfigSource, CredentialRef, DeviceName, Fabric, Fingerprint, Platform, Role, Tier,
};
use serde::Serialize;

pub use crate::timeouts::{DurationError, SshTimeouts, format_duration, parse_duration};

#[derive(Debug, Clone, Serialize)]
pub struct Inventory {
    /// The file this was loaded from.
    pub source: PathBuf,
    pub cluster: Cluster,
    pub sites: Vec<Site>,
    pub racks: Vec<Rack>,
    pub devices: Vec<Device>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cluster {
    pub name: String,
    pub description: Option<String>,
    pub oob_subnets: Vec<IpNet>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Site {
    pub name: String,
    pub description: Option<String>,
    pub location: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rack {
    pub name: String,
    pub site: String,
    pub row: Option<String>,
    pub description: Option<String>,
}

/// A host name or an IP literal. Hostnames are allowed because real OOB networks name their BMCs, but only
/// IP literals can be checked against the OOB subnets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Serialize for Host {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Ip(ip) => write!(f, "{ip}"),
            Host::Name(n) => f.write_str(n),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Device {
    pub name: DeviceName,
    pub role: Role,
    pub rack: String,
    pub site: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub groups: Vec<String>,
    pub switch: Option<SwitchInfo>,
    pub bmc: Option<Bmc>,
    pub management: Option<Management>,
    pub frontend: Option<Frontend>,
    pub gpus: Option<Gpus>,
    pub rails: Vec<Rail>,
    /// The PDUs (power feeds) this device draws from; empty: not declared.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pdus: Vec<String>,
    /// The NVLink domain (e.g. one NVL72 rack) this GPU node's GPUs belong to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_domain: Option<String>,
    /// The OOB switch (a device of the file) the BMC or management port is cabled to, and its port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oob_switch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oob_port: Option<String>,
    /// 1-based line of the device's table in the source file, for messages that point back at it (not
    /// part of the device's JSON: its place in one file, not a fact about the device).
    #[serde(skip)]
    pub line: usize,
}

impl Device {
    /// Every fabric this device is attached to, for `inventory show`.
    pub fn fabrics(&self) -> Vec<Fabric> {
        let mut f: Vec<Fabric> = Vec::new();
        if let Some(s) = &self.switch {
            f.push(s.fabric);
        }
        f.extend(self.rails.iter().map(|r| r.fabric));
        if self.frontend.is_some() {
            f.push(Fabric::Frontend);
        }
        if self.bmc.is_some() || self.management.is_some() {
            f.push(Fabric::Oob);
        }
        f.sort();
        f.dedup();
        f
    }

    pub fn backend_rails(&self) -> impl Iterator<Item = &Rail> {
        self.rails.iter().filter(|r| r.fabric == Fabric::Backend)
    }

    pub fn storage_rails(&self) -> impl Iterator<Item = &Rail> {
        self.rails.iter().filter(|r| r.fabric == Fabric::Storage)
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SwitchInfo {
    pub fabric: Fabric,
    pub tier: Option<Tier>,
    pub platform: Platform,
    /// Which text is backed up and restored (inventory `config-source`; the platform's running
    /// configuration when not given).
    pub config_source: ConfigSource,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Bmc {
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub address: Host,
    /// `None`: the protocol's standard port (623/udp, 443/tcp).
    pub port: Option<u16>,
    pub protocol: BmcProtocol,
    pub username: String,
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub credential: CredentialRef,
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub tls_fingerprint: Option<Fingerprint>,
    /// `false` (`tls = false`): Redfish over plain HTTP, allowed explicitly and audited as insecure.
    pub tls: bool,
    /// Simulator flavor (`generic`, `idrac-like`, …); real BMCs ignore it.
    pub flavor: Option<String>,
    /// Simulator only: the captured Redfish tree (Redfish Mockup Creator output) a `flavor = "replay"` BMC
    /// serves, as written (relative paths are from the inventory file's folder).
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub tree: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Management {
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub address: Host,
    /// `None`: 22.
    pub port: Option<u16>,
    pub username: String,
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub credential: CredentialRef,
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub ssh_host_key: Option<Fingerprint>,
    /// Old SSH algorithms explicitly allowed for this switch.
    pub legacy_ssh: bool,
    /// Per-step SSH limits (`None` fields: the backup driver's defaults).
    pub timeouts: SshTimeouts,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Frontend {
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub address: Option<Host>,
    pub interface: Option<String>,
    pub ssh_user: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Gpus {
    pub count: u32,
    pub model: Option<String>,
}

lifeline_types::kebab_enum! {
    /// What a rail runs over: RoCEv2 on Ethernet or native InfiniBand.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum LinkLayer {
        Ethernet => "ethernet",
        Infiniband => "infiniband",
    }
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Rail {
    /// RDMA device name as in `/sys/class/infiniband`, e.g. `mlx5_0`.
    pub hca: String,
    /// Kernel network interface, e.g. `ens1f0np0`.
    pub netdev: Option<String>,
    pub fabric: Fabric,
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub subnet: Option<IpNet>,
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub address: Option<IpAddr>,
    pub rate_gbps: Option<u32>,
    pub mtu: Option<u32>,
    pub link_layer: LinkLayer,
    /// The leaf switch this rail is cabled to (a switch of the same fabric in the file), and its port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
}
