//! What to simulate: a plain-data description of a fleet (servers with BMCs, GPUs and rails; switches).
//!
//! It exists so that the simulator can be driven from anywhere (the CLI converts an inventory into it, tests
//! build it by hand, `FleetSpec::generate` invents one) without the sim depending on the inventory crate.

use std::net::{IpAddr, Ipv4Addr};

use lifeline_types::{ConfigSource, Platform};
use serde::{Deserialize, Serialize};

/// A whole simulated fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct FleetSpec {
    #[serde(default)]
    pub servers: Vec<ServerSpec>,
    #[serde(default)]
    pub switches: Vec<SwitchSpec>,
}

/// One server and its BMC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSpec {
    pub name: String,
    /// Free text role (`gpu-node`, `head-node`, ...); only GPU nodes get GPUs by default.
    #[serde(default = "default_role")]
    pub role: String,
    pub bmc: BmcSpec,
    #[serde(default)]
    pub gpus: GpuSpec,
    #[serde(default)]
    pub rails: Vec<RailSpec>,
    /// Whether the host starts powered on with its OS up (the usual state of a fleet), or off.
    #[serde(default = "yes")]
    pub powered_on: bool,
}

impl ServerSpec {
    /// A powered-on server with no GPUs and no rails behind a BMC at `address` (standard ports plus the
    /// fleet's offset, the generic flavor): what benchmarks that only need many BMCs start.
    pub fn bare(name: impl Into<String>, address: IpAddr, username: &str, password: &str) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            role: "head-node".into(),
            bmc: BmcSpec {
                address,
                redfish_port: None,
                ipmi_port: None,
                username: username.into(),
                password: password.into(),
                flavor: RedfishFlavor::default(),
                cipher_suites: Vec::new(),
                session_limit: None,
                replay: None,
            },
            gpus: GpuSpec { count: 0, ..GpuSpec::default() },
            rails: Vec::new(),
            powered_on: true,
        }
    }
}

/// A server's (or a switch's) baseboard management controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BmcSpec {
    pub address: IpAddr,
    /// `None`: the standard port (443) plus the fleet's port offset.
    #[serde(default)]
    pub redfish_port: Option<u16>,
    /// `None`: the standard port (623) plus the fleet's port offset.
    #[serde(default)]
    pub ipmi_port: Option<u16>,
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub flavor: RedfishFlavor,
    /// IPMI cipher suites offered (3 and/or 17). Empty: the flavor's default.
    #[serde(default)]
    pub cipher_suites: Vec<u8>,
    /// Concurrent sessions per protocol. `None`: the flavor's default.
    #[serde(default)]
    pub session_limit: Option<usize>,
    /// A captured Redfish tree (a folder) this BMC serves instead of the flavor's own documents: the
    /// replay flavour. `None`: the flavor's own.
    #[serde(default)]
    pub replay: Option<std::path::PathBuf>,
}

/// Which vendor's Redfish (and IPMI identity) a BMC imitates; each flavor reproduces documented quirks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RedfishFlavor {
    #[default]
    Generic,
    IdracLike,
    IloLike,
    SupermicroLike,
    OpenbmcLike,
    /// A current (2020.4+) service that has dropped the legacy `Power` resource: PSUs only under
    /// `Chassis/{id}/PowerSubsystem`. Not in the [`RedfishFlavor::ALL`] rotation (so generated fleets keep
    /// their flavors); name it in a spec or pick it from [`RedfishFlavor::EVERY`].
    #[serde(rename = "powersubsystem")]
    PowerSubsystem,
}

impl RedfishFlavor {
    pub const ALL: [RedfishFlavor; 5] = [
        RedfishFlavor::Generic,
        RedfishFlavor::IdracLike,
        RedfishFlavor::IloLike,
        RedfishFlavor::SupermicroLike,
        RedfishFlavor::OpenbmcLike,
    ];

    /// Every flavor, the rotation first.
    pub const EVERY: [RedfishFlavor; 6] = [
        RedfishFlavor::Generic,
        RedfishFlavor::IdracLike,
        RedfishFlavor::IloLike,
        RedfishFlavor::SupermicroLike,
        RedfishFlavor::OpenbmcLike,
        RedfishFlavor::PowerSubsystem,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RedfishFlavor::Generic => "generic",
            RedfishFlavor::IdracLike => "idrac-like",
            RedfishFlavor::IloLike => "ilo-like",
            RedfishFlavor::SupermicroLike => "supermicro-like",
            RedfishFlavor::OpenbmcLike => "openbmc-like",
            RedfishFlavor::PowerSubsystem => "powersubsystem",
        }
    }

    /// Default concurrent session limit (Redfish and IPMI each).
    pub fn default_session_limit(self) -> usize {
        match self {
            RedfishFlavor::Generic => 16,
            RedfishFlavor::IdracLike => 8,
            RedfishFlavor::IloLike => 4,
            RedfishFlavor::SupermicroLike => 8,
            RedfishFlavor::OpenbmcLike | RedfishFlavor::PowerSubsystem => 16,
        }
    }

    /// Default IPMI cipher suites: iLO 5 only speaks suite 3 over lanplus by default in this sim.
    pub fn default_cipher_suites(self) -> Vec<u8> {
        match self {
            RedfishFlavor::IloLike => vec![3],
            _ => vec![3, 17],
        }
    }
}

impl std::fmt::Display for RedfishFlavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RedfishFlavor {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RedfishFlavor::EVERY.into_iter().find(|f| f.as_str() == s).ok_or_else(|| {
            format!(
                "unknown redfish flavor `{s}` (expected one of: {})",
                RedfishFlavor::EVERY.map(|f| f.as_str()).join(", ")
            )
        })
    }
}

/// GPUs a node is expected to have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub count: u8,
    pub model: String,
}

impl Default for GpuSpec {
    fn default() -> Self {
        GpuSpec { count: 8, model: "NVIDIA H100 80GB HBM3".into() }
    }
}

/// One backend rail: an RDMA HCA port and its netdev.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RailSpec {
    /// RDMA device name (`mlx5_0`).
    pub hca: String,
    /// Linux netdev name (`ens1f0np0`, `ib0`).
    pub netdev: String,
    pub ipv4: Ipv4Addr,
    pub prefix: u8,
    /// Link rate in Gb/s (400 for NDR / 400GbE).
    #[serde(default = "default_rate")]
    pub rate_gbps: u32,
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    #[serde(default)]
    pub link_layer: LinkLayer,
}

/// RoCE rails report `Ethernet`, InfiniBand rails `InfiniBand` (the exact sysfs spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LinkLayer {
    #[default]
    Ethernet,
    Infiniband,
}

impl LinkLayer {
    /// The text of `/sys/class/infiniband/<hca>/ports/1/link_layer`.
    pub fn sysfs(self) -> &'static str {
        match self {
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Infiniband => "InfiniBand",
        }
    }
}

/// One switch: SSH management plus an optional BMC (console into its bootloader).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchSpec {
    pub name: String,
    pub platform: Platform,
    pub address: IpAddr,
    /// `None`: 22 plus the fleet's port offset.
    #[serde(default)]
    pub ssh_port: Option<u16>,
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub bmc: Option<BmcSpec>,
    /// `leaf` or `spine`; used to shape a realistic config.
    #[serde(default = "default_tier")]
    pub tier: String,
    /// Who is cabled to which port, as the switch's LLDP show commands list it.
    #[serde(default)]
    pub lldp: Vec<LldpPeer>,
    /// Which text is the configuration (inventory `config-source`); `None`: the platform's running one.
    #[serde(default)]
    pub config_source: Option<ConfigSource>,
}

/// One neighbour on one switch port: a host running lldpd on a NIC (its system name, the NIC's name as
/// port description; its MAC addresses are derived from the names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpPeer {
    pub port: String,
    pub system_name: String,
    pub port_descr: String,
}

fn default_role() -> String {
    "gpu-node".into()
}
fn default_tier() -> String {
    "leaf".into()
}
fn default_rate() -> u32 {
    400
}
fn default_mtu() -> u32 {
    9000
}
fn yes() -> bool {
    true
}

impl FleetSpec {
    /// A synthetic fleet on loopback: `gpu-node-NN` servers with 8 GPUs and 8 RoCE rails each (flavors
    /// rotate so every quirk is exercised), then `leafN`/`spineN` switches cycling through the platforms.
    ///
    /// Every device gets its own address: servers' BMCs on 127.10.x.y, switches on 127.11.x.y, switch BMCs
    /// on 127.12.x.y, so standard ports can be used when running as root.
    pub fn generate(nodes: usize, switches: usize) -> FleetSpec {
        let width = nodes.max(switches).to_string().len().max(2);
        let servers = (0..nodes)
            .map(|i| {
                let name = format!("gpu-node-{:0width$}", i + 1);
                let flavor = RedfishFlavor::ALL[i % RedfishFlavor::ALL.len()];
                ServerSpec {
                    name,
                    role: default_role(),
                    bmc: BmcSpec {
                        address: loopback(10, i),
                        redfish_port: None,
                        ipmi_port: None,
                        username: "admin".into(),
                        password: "password".into(),
                        flavor,
                        cipher_suites: Vec::new(),
                        session_limit: None,
                        replay: None,
                    },
                    gpus: GpuSpec::default(),
                    rails: (0..8u8)
                        .map(|r| RailSpec {
                            hca: format!("mlx5_{r}"),
                            netdev: format!("ens{}np0", r + 1),
                            // One /31-ish subnet per rail per node: 10.<rail>.<i/256>.<i%256>.
                            ipv4: Ipv4Addr::new(10, 100 + r, (i / 250) as u8, (i % 250 + 1) as u8),
                            prefix: 16,
                            rate_gbps: 400,
                            mtu: 9000,
                            link_layer: LinkLayer::Ethernet,
                        })
                        .collect(),
                    powered_on: true,
                }
            })
            .collect();
        let platforms = [Platform::Sonic, Platform::Eos, Platform::Cumulus, Platform::Ios];
        let spines = switches / 4;
        let switches = (0..switches)
            .map(|i| {
                let (tier, n) = if i < switches - spines {
                    ("leaf", i + 1)
                } else {
                    ("spine", i - (switches - spines) + 1)
                };
                SwitchSpec {
                    name: format!("{tier}{n}"),
                    platform: platforms[i % platforms.len()],
                    address: loopback(11, i),
                    ssh_port: None,
                    username: "admin".into(),
                    password: "admin".into(),
                    bmc: Some(BmcSpec {
                        address: loopback(12, i),
                        redfish_port: None,
                        ipmi_port: None,
                        username: "admin".into(),
                        password: "password".into(),
                        flavor: RedfishFlavor::OpenbmcLike,
                        cipher_suites: Vec::new(),
                        session_limit: None,
                        replay: None,
                    }),
                    tier: tier.into(),
                    lldp: Vec::new(),
                    config_source: None,
                }
            })
            .collect();
        FleetSpec { servers, switches }
    }

    /// Every device name, for duplicate checks and `GET /devices`.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|s| s.name.as_str()).chain(self.switches.iter().map(|s| s.name.as_str()))
    }
}

/// Addresses in one 127.B.0.0/16 block: 256 × 250 (the last octet stays in 1..=250).
const PER_BLOCK: usize = 256 * 250;

/// Device `i` of a kind whose addresses start in block `block` (10 servers, 11 switches, 12 switch BMCs).
/// Past 64,000 devices a kind goes on three blocks further (13, 16, … for servers), so a fleet of
/// 100,000 nodes never gives two BMCs one address (which fails to bind with fixed ports).
fn loopback(block: u8, i: usize) -> IpAddr {
    let (spill, j) = (i / PER_BLOCK, i % PER_BLOCK);
    let block = usize::from(block) + 3 * spill;
    IpAddr::V4(Ipv4Addr::new(127, block.min(255) as u8, (j / 250) as u8, (j % 250 + 1) as u8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every BMC and switch address of the fleet, asserting that no two devices share one.
    fn unique_addresses(f: &FleetSpec) -> Vec<IpAddr> {
        let mut addrs: Vec<IpAddr> = f.servers.iter().map(|s| s.bmc.address).collect();
        addrs.extend(f.switches.iter().map(|s| s.address));
        addrs.extend(f.switches.iter().filter_map(|s| s.bmc.as_ref().map(|b| b.address)));
        let n = addrs.len();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), n, "every device has its own address");
        addrs
    }

    #[test]
    fn generated_fleet_has_unique_names_and_addresses() {
        let f = FleetSpec::generate(600, 9);
        assert_eq!(f.servers.len(), 600);
        assert_eq!(f.switches.len(), 9);
        let names: HashSet<_> = f.names().collect();
        assert_eq!(names.len(), 609);
        let addrs = unique_addresses(&f);
        assert!(addrs.iter().all(|a| a.is_loopback()));
        assert_eq!(f.switches.iter().filter(|s| s.tier == "spine").count(), 2);
        assert_eq!(f.servers[0].name, "gpu-node-001");
        assert_eq!(f.servers[1].bmc.flavor, RedfishFlavor::IdracLike);
    }

    #[test]
    fn a_fleet_past_64000_nodes_still_has_one_address_per_bmc() {
        let f = FleetSpec::generate(100_000, 3);
        assert_eq!(unique_addresses(&f).len(), 100_006);
        assert_eq!(f.servers[64_000].bmc.address, IpAddr::V4(Ipv4Addr::new(127, 13, 0, 1)));
        assert_eq!(f.servers[99_999].bmc.address, IpAddr::V4(Ipv4Addr::new(127, 13, 143, 250)));
    }

    #[test]
    fn spec_round_trips_through_json() {
        let f = FleetSpec::generate(3, 2);
        let s = serde_json::to_string(&f).unwrap();
        assert!(s.contains("\"idrac-like\""), "{s}");
        let back: FleetSpec = serde_json::from_str(&s).unwrap();
        assert_eq!(back, f);
        assert_eq!("ilo-like".parse::<RedfishFlavor>().unwrap(), RedfishFlavor::IloLike);
        assert!("dell".parse::<RedfishFlavor>().is_err());
    }
}
