//! The in-band state of a simulated node (GPUs, rails, host settings) and its export as files.
//!
//! The verification agent reads a real node's `/sys/class/infiniband`, `/sys/class/net` and NVML. The sim
//! keeps the same facts in memory and, with `--export-node-state DIR`, mirrors them to disk so the agent
//! (pointed at `DIR/<node>/sysfs` instead of `/sys`) and `lifeline-verify` can be tested without hardware:
//!
//! ```text
//! DIR/<node>/sysfs/class/infiniband/<hca>/ports/1/{state,phys_state,rate,link_layer}
//! DIR/<node>/sysfs/class/infiniband/<hca>/ports/1/gids/{0..3}, gid_attrs/types/{0..3}, gid_attrs/ndevs/{0..3}
//! DIR/<node>/sysfs/class/infiniband/<hca>/ports/1/counters/<name>      (decimal, one line)
//! DIR/<node>/sysfs/class/infiniband/<hca>/device/net/<netdev>/          (directory, as on a real node)
//! DIR/<node>/sysfs/class/net/<netdev>/{mtu,operstate,carrier,speed,address,type}
//! DIR/<node>/sysfs/class/net/<netdev>/device/infiniband/<hca>/          (directory)
//! DIR/<node>/ethtool/<netdev>                                            (`ethtool -S` text: PFC counters)
//! DIR/<node>/gpus.json                                                   ([`GpuSnapshot`])
//! DIR/<node>/host.json                                                   ([`HostSettings`])
//! ```
//!
//! Every file is written atomically (temporary file + rename) so a reader never sees half a file.
//! File contents follow the kernel's formats: `state` is `4: ACTIVE` / `1: DOWN`, `phys_state` is
//! `5: LinkUp` / `3: Disabled`, `rate` is `400 Gb/sec (4X NDR)`, GIDs are eight colon-separated groups of four
//! hex digits (index 0/1 link-local `fe80:...`, index 2/3 the RoCEv2 IPv4-mapped `...:ffff:0a00:0001`).

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::spec::{GpuSpec, LinkLayer, RailSpec};

/// Schema version written in [`GpuSnapshot::schema`]; bump on an incompatible change.
pub const GPU_SNAPSHOT_SCHEMA: u32 = 1;

/// `DIR/<node>/gpus.json`: what `nvidia-smi -q` / NVML would say about every GPU of a node.
///
/// Field names are stable and snake_case; `lifeline-verify` reads this file with this struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSnapshot {
    /// Always [`GPU_SNAPSHOT_SCHEMA`].
    pub schema: u32,
    /// Node name as in the inventory.
    pub node: String,
    /// RFC 3339 time the snapshot was taken.
    pub taken_at: String,
    /// False while the host is off or not booted: NVML would not answer, so no GPU fact is current.
    pub host_up: bool,
    /// NVIDIA driver version (`550.90.07`).
    pub driver_version: String,
    /// CUDA version the driver supports (`12.4`).
    pub cuda_version: String,
    /// One entry per GPU, ordered by `index`.
    pub gpus: Vec<GpuState>,
}

/// One GPU in a [`GpuSnapshot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    /// NVML index (0-based).
    pub index: u8,
    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, stable per node and index.
    pub uuid: String,
    /// Product name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// PCI bus id in NVML's form (`00000000:18:00.0`).
    pub pci_bus_id: String,
    pub serial: String,
    /// Volatile uncorrectable ECC errors since the last driver load (a reboot clears them).
    pub ecc_volatile_uncorrected: u64,
    /// Aggregate (lifetime) uncorrectable ECC errors.
    pub ecc_aggregate_uncorrected: u64,
    /// Pages waiting for retirement (pre-Ampere mechanism; applied at the next reboot).
    pub retired_pages_pending: bool,
    /// Row remaps waiting for a GPU reset (Ampere and later).
    pub remapped_rows_pending: bool,
    /// Rows remapped so far (lifetime).
    pub remapped_rows: u32,
    /// Whether a row remap failed (the GPU must be replaced).
    pub remapped_rows_failure: bool,
    /// XID events since the last driver load, oldest first.
    pub xid_events: Vec<XidEvent>,
    /// NVLink links up / down (18 links on H100 SXM).
    pub nvlinks_up: u8,
    pub nvlinks_down: u8,
    /// PCIe link: current and maximum generation and width.
    pub pcie_gen_current: u8,
    pub pcie_gen_max: u8,
    pub pcie_width_current: u8,
    pub pcie_width_max: u8,
    /// GPU core temperature in degrees Celsius.
    pub temperature_c: u32,
    /// Board power draw in watts.
    pub power_w: u32,
    /// Active clock throttle reasons in NVML's names (`hw_slowdown`, `sw_thermal_slowdown`, ...); empty = none.
    pub throttle_reasons: Vec<String>,
}

/// One XID (`NVRM: Xid (PCI:0000:18:00): 79, ...` in the kernel log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XidEvent {
    pub code: u16,
    /// RFC 3339.
    pub at: String,
    pub message: String,
}

/// `DIR/<node>/host.json`: host settings the agent checks beside GPUs and rails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSettings {
    pub node: String,
    pub host_up: bool,
    pub os: String,
    pub kernel: String,
    /// `scaling_governor` of every CPU (`performance` expected on GPU nodes).
    pub cpu_governor: String,
    /// `/proc/sys/kernel/numa_balancing` (0 expected).
    pub numa_balancing: u8,
    /// IOMMU in passthrough mode (`iommu=pt`).
    pub iommu_passthrough: bool,
    /// PCIe ACS disabled on the switches between GPUs and NICs (needed for GPUDirect RDMA).
    pub acs_disabled: bool,
    /// `nvidia-smi -pm` persistence mode.
    pub gpu_persistence_mode: bool,
    /// `nvidia-peermem` module loaded.
    pub nvidia_peermem_loaded: bool,
    /// Rails as configured on the host (address, prefix, netdev, HCA).
    pub rails: Vec<RailAddress>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RailAddress {
    pub hca: String,
    pub netdev: String,
    pub ipv4: Ipv4Addr,
    pub prefix: u8,
}

/// Live state of one rail.
#[derive(Debug, Clone, PartialEq)]
pub struct RailState {
    pub spec: RailSpec,
    pub link_up: bool,
    pub mtu: u32,
    pub mac: [u8; 6],
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub link_downed: u64,
    pub symbol_errors: u64,
    /// PFC pause frames received on the lossless priority (3); grows during a PFC storm.
    pub rx_pause_prio3: u64,
    pub tx_pause_prio3: u64,
    pub pfc_storm: bool,
}

/// Everything in-band about a node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub name: String,
    pub gpus: Vec<GpuState>,
    pub rails: Vec<RailState>,
    pub settings: HostSettings,
}

/// Deterministic small hash so UUIDs, serials and MACs are stable across runs.
fn mix(name: &str, salt: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

const H100_PCI_BUSES: [u8; 8] = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb];

impl NodeState {
    pub fn new(name: &str, gpus: &GpuSpec, rails: &[RailSpec]) -> NodeState {
        let gpus = (0..gpus.count)
            .map(|i| {
                let h = mix(name, u64::from(i) + 1);
                let bus =
                    H100_PCI_BUSES.get(usize::from(i)).copied().unwrap_or(0x10u8.wrapping_add(i * 0x10));
                GpuState {
                    index: i,
                    uuid: format!(
                        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                        h >> 32,
                        (h >> 16) & 0xffff,
                        h & 0xffff,
                        (h >> 48) ^ 0x8000,
                        mix(name, 1000 + u64::from(i)) & 0xffff_ffff_ffff
                    ),
                    name: gpus.model.clone(),
                    pci_bus_id: format!("00000000:{bus:02X}:00.0"),
                    serial: format!("{:013}", h % 10_000_000_000_000),
                    ecc_volatile_uncorrected: 0,
                    ecc_aggregate_uncorrected: 0,
                    retired_pages_pending: false,
                    remapped_rows_pending: false,
                    remapped_rows: 0,
                    remapped_rows_failure: false,
                    xid_events: Vec::new(),
                    nvlinks_up: 18,
                    nvlinks_down: 0,
                    pcie_gen_current: 5,
                    pcie_gen_max: 5,
                    pcie_width_current: 16,
                    pcie_width_max: 16,
                    temperature_c: 34 + (h % 6) as u32,
                    power_w: 70 + (h % 15) as u32,
                    throttle_reasons: Vec::new(),
                }
            })
            .collect();
        let rails: Vec<RailState> = rails
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let h = mix(name, 0x5151 + i as u64);
                RailState {
                    spec: r.clone(),
                    link_up: true,
                    mtu: r.mtu,
                    // Mellanox OUI b8:ce:f6, locally unique tail.
                    mac: [0xb8, 0xce, 0xf6, (h >> 16) as u8, (h >> 8) as u8, h as u8],
                    rx_bytes: h % 1_000_000_000,
                    tx_bytes: (h >> 7) % 1_000_000_000,
                    link_downed: 0,
                    symbol_errors: 0,
                    rx_pause_prio3: 0,
                    tx_pause_prio3: 0,
                    pfc_storm: false,
                }
            })
            .collect();
        let settings = HostSettings {
            node: name.to_owned(),
            host_up: true,
            os: "Ubuntu 22.04.4 LTS".into(),
            kernel: "5.15.0-105-generic".into(),
            cpu_governor: "performance".into(),
            numa_balancing: 0,
            iommu_passthrough: true,
            acs_disabled: true,
            gpu_persistence_mode: true,
            nvidia_peermem_loaded: true,
            rails: rails
                .iter()
                .map(|r| RailAddress {
                    hca: r.spec.hca.clone(),
                    netdev: r.spec.netdev.clone(),
                    ipv4: r.spec.ipv4,
                    prefix: r.spec.prefix,
                })
                .collect(),
        };
        NodeState { name: name.to_owned(), gpus, rails, settings }
    }

    pub fn rail_mut(&mut self, hca: &str) -> Option<&mut RailState> {
        self.rails.iter_mut().find(|r| r.spec.hca == hca || r.spec.netdev == hca)
    }

    /// A GPU snapshot as the agent would read it now.
    pub fn gpu_snapshot(&self, host_up: bool) -> GpuSnapshot {
        GpuSnapshot {
            schema: GPU_SNAPSHOT_SCHEMA,
            node: self.name.clone(),
            taken_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            host_up,
            driver_version: "550.90.07".into(),
            cuda_version: "12.4".into(),
            gpus: self.gpus.clone(),
        }
    }

    /// What a reboot does in-band: the driver reloads (XIDs and volatile ECC counts gone), pending row
    /// remaps and page retirements are applied, links retrain (a rail that is physically down stays down).
    pub fn reboot(&mut self) {
        for g in &mut self.gpus {
            g.xid_events.clear();
            g.ecc_volatile_uncorrected = 0;
            if g.remapped_rows_pending {
                g.remapped_rows_pending = false;
                g.remapped_rows += 1;
            }
            g.retired_pages_pending = false;
            g.nvlinks_up += g.nvlinks_down;
            g.nvlinks_down = 0;
            g.pcie_width_current = g.pcie_width_max;
            g.pcie_gen_current = g.pcie_gen_max;
            g.throttle_reasons.clear();
        }
    }

    /// Every file of the export, as (path relative to `DIR/<node>`, contents). Pure, for tests and writing.
    pub fn render_files(&self, host_up: bool) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut settings = self.settings.clone();
        settings.host_up = host_up;
        for r in &self.rails {
            let ib = PathBuf::from("sysfs/class/infiniband").join(&r.spec.hca);
            let port = ib.join("ports/1");
            let up = host_up && r.link_up;
            let (state, phys) = if up {
                ("4: ACTIVE", "5: LinkUp")
            } else if host_up {
                ("1: DOWN", "3: Disabled")
            } else {
                ("1: DOWN", "2: Polling")
            };
            out.push((port.join("state"), format!("{state}\n")));
            out.push((port.join("phys_state"), format!("{phys}\n")));
            out.push((port.join("rate"), format!("{}\n", rate_text(if up { r.spec.rate_gbps } else { 0 }))));
            out.push((port.join("link_layer"), format!("{}\n", r.spec.link_layer.sysfs())));
            let ll = link_local_gid(r.mac);
            let v4 = ipv4_mapped_gid(r.spec.ipv4);
            let gids: [(&str, &str); 4] =
                [(&ll, "IB/RoCE v1"), (&ll, "RoCE v2"), (&v4, "IB/RoCE v1"), (&v4, "RoCE v2")];
            let n = if r.spec.link_layer == LinkLayer::Ethernet { 4 } else { 1 };
            for (i, (gid, ty)) in gids.iter().take(n).enumerate() {
                out.push((port.join(format!("gids/{i}")), format!("{gid}\n")));
                if r.spec.link_layer == LinkLayer::Ethernet {
                    out.push((port.join(format!("gid_attrs/types/{i}")), format!("{ty}\n")));
                    out.push((port.join(format!("gid_attrs/ndevs/{i}")), format!("{}\n", r.spec.netdev)));
                }
            }
            let counters: [(&str, u64); 10] = [
                ("port_rcv_data", r.rx_bytes / 4),
                ("port_xmit_data", r.tx_bytes / 4),
                ("port_rcv_packets", r.rx_bytes / 4096),
                ("port_xmit_packets", r.tx_bytes / 4096),
                ("symbol_error", r.symbol_errors),
                ("link_downed", r.link_downed),
                ("link_error_recovery", 0),
                ("port_rcv_errors", 0),
                ("port_xmit_discards", 0),
                ("port_xmit_wait", r.rx_pause_prio3.saturating_mul(16)),
            ];
            for (name, v) in counters {
                out.push((port.join("counters").join(name), format!("{v}\n")));
            }
            out.push((ib.join("device/net").join(&r.spec.netdev).join("ifindex"), format!("{}\n", 4)));
            let net = PathBuf::from("sysfs/class/net").join(&r.spec.netdev);
            out.push((net.join("mtu"), format!("{}\n", r.mtu)));
            out.push((net.join("operstate"), format!("{}\n", if up { "up" } else { "down" })));
            out.push((net.join("carrier"), format!("{}\n", u8::from(up))));
            out.push((
                net.join("speed"),
                format!("{}\n", if up { i64::from(r.spec.rate_gbps) * 1000 } else { -1 }),
            ));
            out.push((net.join("address"), format!("{}\n", mac_text(r.mac))));
            let ty = if r.spec.link_layer == LinkLayer::Ethernet { 1 } else { 32 };
            out.push((net.join("type"), format!("{ty}\n")));
            out.push((
                net.join("device/infiniband").join(&r.spec.hca).join("ibdev"),
                format!("{}\n", r.spec.hca),
            ));
            out.push((PathBuf::from("ethtool").join(&r.spec.netdev), ethtool_stats(r)));
        }
        out.extend(self.proc_files());
        let snap = self.gpu_snapshot(host_up);
        out.push(("gpus.json".into(), serde_json::to_string_pretty(&snap).unwrap_or_default() + "\n"));
        out.push(("host.json".into(), serde_json::to_string_pretty(&settings).unwrap_or_default() + "\n"));
        out
    }
}

/// The frontend interface of every simulated node: the only one allowed a default route.
pub const FRONTEND_INTERFACE: &str = "eno1";

impl NodeState {
    /// `proc/net/route` (default route on the frontend only, one connected route per rail) and the
    /// `rp_filter` knobs multi-rail hosts need loose (2) or off (0): what the agent's host checks read.
    fn proc_files(&self) -> Vec<(PathBuf, String)> {
        // /proc/net/route prints addresses as host-order (little-endian on x86) hex.
        let hex = |ip: Ipv4Addr| format!("{:08X}", u32::from_le_bytes(ip.octets()));
        let mask = |prefix: u8| {
            let m = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
            hex(Ipv4Addr::from(m))
        };
        let mut route = String::from(
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n",
        );
        route.push_str(&format!(
            "{FRONTEND_INTERFACE}\t00000000\t{}\t0003\t0\t0\t100\t00000000\t0\t0\t0\n",
            hex(Ipv4Addr::new(192, 168, 0, 1))
        ));
        let mut out = Vec::new();
        for r in &self.rails {
            let net = Ipv4Addr::from(
                u32::from(r.spec.ipv4)
                    & u32::from_str_radix(&mask(r.spec.prefix), 16).map(u32::swap_bytes).unwrap_or(0),
            );
            route.push_str(&format!(
                "{}\t{}\t00000000\t0001\t0\t0\t0\t{}\t0\t0\t0\n",
                r.spec.netdev,
                hex(net),
                mask(r.spec.prefix)
            ));
            out.push((
                PathBuf::from(format!("proc/sys/net/ipv4/conf/{}/rp_filter", r.spec.netdev)),
                "2\n".into(),
            ));
        }
        out.push((PathBuf::from("proc/net/route"), route));
        out.push((PathBuf::from("proc/sys/net/ipv4/conf/all/rp_filter"), "0\n".into()));
        out.push((
            PathBuf::from(format!("proc/sys/net/ipv4/conf/{FRONTEND_INTERFACE}/rp_filter")),
            "1\n".into(),
        ));
        out
    }
}

/// `rate` text the kernel prints for a port (`400 Gb/sec (4X NDR)`).
pub fn rate_text(gbps: u32) -> String {
    let width = match gbps {
        0 => return "0 Gb/sec".into(),
        g if g >= 800 => "4X XDR",
        g if g >= 400 => "4X NDR",
        g if g >= 200 => "4X HDR",
        g if g >= 100 => "4X EDR",
        g if g >= 56 => "4X FDR",
        _ => "4X QDR",
    };
    format!("{gbps} Gb/sec ({width})")
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(mac: [u8; 6]) -> String {
    mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

fn gid_text(bytes: [u8; 16]) -> String {
    bytes.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

/// The link-local GID: `fe80::` plus the EUI-64 of the port MAC.
pub fn link_local_gid(mac: [u8; 6]) -> String {
    let mut b = [0u8; 16];
    b[0] = 0xfe;
    b[1] = 0x80;
    b[8] = mac[0] ^ 0x02;
    b[9] = mac[1];
    b[10] = mac[2];
    b[11] = 0xff;
    b[12] = 0xfe;
    b[13] = mac[3];
    b[14] = mac[4];
    b[15] = mac[5];
    gid_text(b)
}

/// The RoCEv2 GID of an IPv4 address (`0000:...:ffff:0a00:0001` for 10.0.0.1).
pub fn ipv4_mapped_gid(ip: Ipv4Addr) -> String {
    gid_text(ip.to_ipv6_mapped().octets())
}

fn ethtool_stats(r: &RailState) -> String {
    format!(
        "NIC statistics:\n     rx_packets: {}\n     tx_packets: {}\n     rx_bytes: {}\n     tx_bytes: {}\n     \
         rx_prio3_pause: {}\n     tx_prio3_pause: {}\n     rx_prio3_pause_duration: {}\n     \
         tx_pause_storm_warning_events: {}\n     tx_pause_storm_error_events: {}\n",
        r.rx_bytes / 4096,
        r.tx_bytes / 4096,
        r.rx_bytes,
        r.tx_bytes,
        r.rx_pause_prio3,
        r.tx_pause_prio3,
        r.rx_pause_prio3 * 3,
        u64::from(r.pfc_storm),
        u64::from(r.pfc_storm),
    )
}

/// Writes the files under `dir` (`DIR/<node>`) atomically, one by one. Blocking: call from
/// `spawn_blocking`.
pub fn write_files(dir: &Path, files: &[(PathBuf, String)]) -> std::io::Result<()> {
    for (rel, contents) in files {
        let path = dir.join(rel);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent)?;
        // Skip unchanged files: cheaper, and readers polling mtimes see only real changes.
        if std::fs::read(&path).is_ok_and(|old| old == contents.as_bytes()) {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("f");
        let tmp = parent.join(format!(".{name}.tmp{}", std::process::id()));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(contents.as_bytes())?;
        }
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> NodeState {
        let rails = vec![RailSpec {
            hca: "mlx5_0".into(),
            netdev: "ens1np0".into(),
            ipv4: Ipv4Addr::new(10, 0, 0, 1),
            prefix: 24,
            rate_gbps: 400,
            mtu: 9000,
            link_layer: LinkLayer::Ethernet,
        }];
        NodeState::new("gpu-node-01", &GpuSpec::default(), &rails)
    }

    #[test]
    fn real_sysfs_formats() {
        assert_eq!(ipv4_mapped_gid(Ipv4Addr::new(10, 0, 0, 1)), "0000:0000:0000:0000:0000:ffff:0a00:0001");
        assert_eq!(
            link_local_gid([0xb8, 0xce, 0xf6, 0x01, 0x02, 0x03]),
            "fe80:0000:0000:0000:bace:f6ff:fe01:0203"
        );
        assert_eq!(rate_text(400), "400 Gb/sec (4X NDR)");
        assert_eq!(rate_text(200), "200 Gb/sec (4X HDR)");
        let files = node().render_files(true);
        let get = |p: &str| files.iter().find(|(f, _)| f == Path::new(p)).map(|(_, c)| c.clone()).unwrap();
        assert_eq!(get("sysfs/class/infiniband/mlx5_0/ports/1/state"), "4: ACTIVE\n");
        assert_eq!(get("sysfs/class/infiniband/mlx5_0/ports/1/phys_state"), "5: LinkUp\n");
        assert_eq!(
            get("sysfs/class/infiniband/mlx5_0/ports/1/gids/3"),
            "0000:0000:0000:0000:0000:ffff:0a00:0001\n"
        );
        assert_eq!(get("sysfs/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3"), "RoCE v2\n");
        assert_eq!(get("sysfs/class/net/ens1np0/mtu"), "9000\n");
        assert_eq!(get("sysfs/class/net/ens1np0/operstate"), "up\n");
        let snap: GpuSnapshot = serde_json::from_str(&get("gpus.json")).unwrap();
        assert_eq!(snap.gpus.len(), 8);
        assert!(snap.gpus[0].uuid.starts_with("GPU-"));
        assert_eq!(snap.gpus[0].pci_bus_id, "00000000:18:00.0");
    }

    #[test]
    fn rail_down_and_reboot_semantics() {
        let mut n = node();
        n.rail_mut("mlx5_0").unwrap().link_up = false;
        n.gpus[2].remapped_rows_pending = true;
        n.gpus[2].ecc_volatile_uncorrected = 1;
        n.gpus[2].xid_events.push(XidEvent { code: 48, at: "x".into(), message: "DBE".into() });
        let files = n.render_files(true);
        let state = &files.iter().find(|(f, _)| f.ends_with("ports/1/state")).unwrap().1;
        assert_eq!(state, "1: DOWN\n");
        n.reboot();
        assert!(n.gpus[2].xid_events.is_empty());
        assert_eq!(n.gpus[2].ecc_volatile_uncorrected, 0);
        assert_eq!(n.gpus[2].remapped_rows, 1);
        assert!(!n.rails[0].link_up, "a physical link stays down across a reboot");
    }

    #[test]
    fn export_is_written_atomically_and_idempotently() {
        let dir = tempfile::tempdir().unwrap();
        let n = node();
        write_files(dir.path(), &n.render_files(true)).unwrap();
        write_files(dir.path(), &n.render_files(true)).unwrap();
        let s =
            std::fs::read_to_string(dir.path().join("sysfs/class/infiniband/mlx5_0/ports/1/rate")).unwrap();
        assert_eq!(s, "400 Gb/sec (4X NDR)\n");
        assert!(dir.path().join("sysfs/class/infiniband/mlx5_0/device/net/ens1np0").is_dir());
        let leftovers = std::fs::read_dir(dir.path().join("sysfs/class/net/ens1np0"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp"))
            .count();
        assert_eq!(leftovers, 0);
    }
}
