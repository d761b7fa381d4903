//! What a host and its BMC are built from (stage timings, identity, credentials, the flavor), and the
//! BMC's own fault switches that every protocol front end reads lock-free on each request.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::HostKind;
use crate::spec::{GpuSpec, RailSpec, RedfishFlavor};

/// Unscaled durations of each stage (multiplied by `time_scale`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timings {
    pub post: Duration,
    pub bootloader: Duration,
    pub kernel: Duration,
    pub userspace: Duration,
    pub shutdown: Duration,
    /// Time with power removed during a power cycle.
    pub cycle_off: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            post: Duration::from_secs(8),
            bootloader: Duration::from_secs(2),
            kernel: Duration::from_secs(5),
            userspace: Duration::from_secs(3),
            shutdown: Duration::from_secs(3),
            cycle_off: Duration::from_secs(2),
        }
    }
}

/// Who the BMC says it is (Redfish Manufacturer/Model, IPMI Get Device ID).
#[derive(Debug, Clone, PartialEq)]
pub struct BmcIdentity {
    pub manufacturer: String,
    /// IANA enterprise number (Dell 674, HPE 47196, Supermicro 10876, OpenBMC 49622).
    pub iana: u32,
    pub product_id: u16,
    pub model: String,
    pub serial: String,
    /// System UUID (Redfish `UUID`, IPMI Get System GUID).
    pub uuid: String,
    pub bmc_firmware: String,
    /// Major, minor (BCD) as IPMI reports the firmware revision.
    pub firmware_rev: (u8, u8),
    pub bios_version: String,
    /// MAC address of the BMC's LAN port (IPMI LAN parameter 5, Redfish Manager `EthernetInterfaces`).
    pub bmc_mac: String,
}

impl BmcIdentity {
    pub fn for_flavor(flavor: RedfishFlavor, name: &str) -> BmcIdentity {
        let h = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
        let (manufacturer, iana, product_id, model, fw, rev, bios) = match flavor {
            RedfishFlavor::Generic => ("Lifeline Sim", 0, 0x0001, "SIM-8GPU", "1.0.0", (1, 0x00), "1.0.0"),
            RedfishFlavor::PowerSubsystem => {
                ("Lifeline Sim", 0, 0x0002, "SIM-8GPU-PS", "2.0.0", (2, 0x00), "2.0.0")
            }
            RedfishFlavor::IdracLike => {
                ("Dell Inc.", 674, 0x0100, "PowerEdge XE9680", "7.00.60.00", (7, 0x00), "2.2.7")
            }
            RedfishFlavor::IloLike => {
                ("HPE", 47196, 0x2000, "ProLiant XD685 Gen11", "iLO 6 v1.59", (1, 0x59), "U63 v2.20")
            }
            RedfishFlavor::SupermicroLike => {
                ("Supermicro", 10876, 0x1b47, "SYS-821GE-TNHR", "01.03.15", (1, 0x03), "2.1")
            }
            RedfishFlavor::OpenbmcLike => {
                ("OpenBMC", 49622, 0x0501, "GPU Tray", "2.14.0-dev", (2, 0x14), "1.0")
            }
        };
        BmcIdentity {
            manufacturer: manufacturer.into(),
            iana,
            product_id,
            model: model.into(),
            serial: format!("SIM{h:08X}"),
            uuid: format!(
                "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                h,
                h >> 16,
                h & 0xfff,
                (h >> 4) & 0xfff,
                u64::from(h) * 0x1_0001
            ),
            bmc_firmware: fw.into(),
            firmware_rev: rev,
            bios_version: bios.into(),
            // Locally administered, derived from the name so every run gives a device the same MAC.
            bmc_mac: format!(
                "02:1f:{:02x}:{:02x}:{:02x}:{:02x}",
                h >> 24,
                (h >> 16) & 0xff,
                (h >> 8) & 0xff,
                h & 0xff
            ),
        }
    }
}

/// The BMC's configuration: credentials and what it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct BmcConfig {
    pub username: String,
    pub password: String,
    pub flavor: RedfishFlavor,
    /// IPMI cipher suites offered (3 and/or 17).
    pub cipher_suites: Vec<u8>,
    /// Concurrent sessions allowed, per protocol.
    pub session_limit: usize,
    pub identity: BmcIdentity,
}

/// How long a BMC reset requested over IPMI or Redfish keeps the BMC silent on both protocols (real time,
/// not scaled: a client must be able to see it go away and come back).
pub const BMC_RESET_DOWNTIME: Duration = Duration::from_secs(3);

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Fault switches of the BMC itself, read lock-free on every packet / request.
#[derive(Debug, Default)]
pub struct BmcFaults {
    pub(super) unresponsive: AtomicBool,
    pub(super) slow_ms: AtomicU32,
    pub(super) udp_loss_pct: AtomicU8,
    pub(super) sessions_full: AtomicBool,
    pub(super) sol_stuck: AtomicBool,
    pub(super) redfish_down: AtomicBool,
    pub(super) cert_generation: AtomicU32,
    /// Bumped by a BMC reset (Redfish `Manager.Reset`, IPMI Cold Reset): front ends drop their sessions.
    pub(super) reset_generation: AtomicU32,
    /// Until this instant (ms since the Unix epoch) the BMC is restarting after a reset: nothing answers.
    pub(super) down_until_ms: AtomicU64,
    /// How long a protocol-requested BMC reset keeps it silent, in ms (0: [`BMC_RESET_DOWNTIME`]).
    pub(super) reset_downtime_ms: AtomicU32,
    /// IPMI System Boot Options parameter 0 is "set in progress" (a BMC reset clears it).
    pub(crate) boot_set_in_progress: AtomicBool,
    pub(super) changed: Notify,
}

impl BmcFaults {
    /// Nothing answers: the `bmc-unresponsive` fault, or the BMC is restarting after a reset.
    pub fn unresponsive(&self) -> bool {
        self.unresponsive.load(Ordering::Relaxed) || self.restarting()
    }
    /// The BMC is restarting after a reset (see [`BMC_RESET_DOWNTIME`]).
    pub fn restarting(&self) -> bool {
        unix_ms() < self.down_until_ms.load(Ordering::Relaxed)
    }
    /// Starts the silence of a BMC restart.
    pub(super) fn start_restart(&self) {
        let ms = match self.reset_downtime_ms.load(Ordering::Relaxed) {
            0 => BMC_RESET_DOWNTIME.as_millis() as u64,
            ms => u64::from(ms),
        };
        self.down_until_ms.store(unix_ms() + ms, Ordering::Relaxed);
    }
    /// Extra delay before every reply.
    pub fn slow(&self) -> Option<Duration> {
        match self.slow_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(u64::from(ms))),
        }
    }
    pub fn udp_loss_pct(&self) -> u8 {
        self.udp_loss_pct.load(Ordering::Relaxed)
    }
    /// Whether to drop this datagram (draws a random number when loss is configured).
    pub fn drop_datagram(&self) -> bool {
        let pct = self.udp_loss_pct();
        pct > 0 && rand::random_range(0..100u8) < pct
    }
    pub fn sessions_full(&self) -> bool {
        self.sessions_full.load(Ordering::Relaxed)
    }
    pub fn sol_stuck(&self) -> bool {
        self.sol_stuck.load(Ordering::Relaxed)
    }
    /// `redfish-down`: the Redfish service hangs, IPMI does not.
    pub fn redfish_down(&self) -> bool {
        self.redfish_down.load(Ordering::Relaxed)
    }
    /// Changes whenever `tls-cert-change` is injected: the Redfish front end then serves a new certificate.
    pub fn cert_generation(&self) -> u32 {
        self.cert_generation.load(Ordering::Relaxed)
    }
    pub fn reset_generation(&self) -> u32 {
        self.reset_generation.load(Ordering::Relaxed)
    }
    /// Resolves at the next fault change (a hung connection waits on this to resume).
    pub async fn changed(&self) {
        self.changed.notified().await
    }
}

/// Everything needed to build a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub name: String,
    pub kind: HostKind,
    pub gpus: GpuSpec,
    pub rails: Vec<RailSpec>,
    pub powered_on: bool,
    pub timings: Timings,
    /// Multiplies every delay (0.01 makes a boot 100x faster; 0 is instant).
    pub time_scale: f64,
    /// `--export-node-state DIR`: files go to `DIR/<name>/`.
    pub export_dir: Option<PathBuf>,
    pub bmc: BmcConfig,
}

impl HostConfig {
    /// A GPU server with 8 GPUs and 8 RoCE rails, a generic BMC (admin/password), powered on, booting 100x fast.
    pub fn server(name: &str) -> HostConfig {
        let spec = crate::spec::FleetSpec::generate(1, 0).servers.remove(0);
        HostConfig {
            name: name.into(),
            kind: HostKind::Server,
            gpus: spec.gpus,
            rails: spec.rails,
            powered_on: true,
            timings: Timings::default(),
            time_scale: 0.01,
            export_dir: None,
            bmc: BmcConfig {
                username: "admin".into(),
                password: "password".into(),
                flavor: RedfishFlavor::Generic,
                cipher_suites: vec![3, 17],
                session_limit: 16,
                identity: BmcIdentity::for_flavor(RedfishFlavor::Generic, name),
            },
        }
    }
}
