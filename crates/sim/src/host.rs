//! The simulated machine behind a BMC: power state machine, serial console, in-band state, SEL and the
//! BMC's own fault switches.
//!
//! Every protocol front end (Redfish, IPMI + SOL, the control API) drives the same `Arc<Host>`, so a power
//! cycle through IPMI is seen by Redfish, and a fault shows up in every protocol at once.
//!
//! Power: `Off -> Post -> Bootloader -> Kernel -> OsUp` with delays scaled by `time_scale`; a sequencing
//! task exists only while a transition is in progress (idle hosts cost no task), and it is aborted by the
//! next power command or when the host is dropped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use lifeline_types::{Health, PowerState};
use serde::Serialize;
use tokio::sync::{Notify, broadcast};
use tokio::task::AbortHandle;

use crate::actions::{ActionKind, ActionLog, Origin};
pub use crate::console::{Console, HostKind};
use crate::console::{boot_loop_lines, bootloader_lines, kernel_lines, login_banner, post_lines};
use crate::fault::Fault;
use crate::node_state::{NodeState, XidEvent, write_files};
use crate::sel::{NewSel, SelEntry, SelLog, sensor_type};
use crate::sensors::{Sensor, readings};
use crate::spec::{GpuSpec, RailSpec, RedfishFlavor};

/// Where the machine is in its power/boot cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Off,
    Post,
    Bootloader,
    Kernel,
    OsUp,
    /// ACPI shutdown in progress (power still on).
    ShuttingDown,
    /// Powered, but the OS has crashed (NMI, SysRq-c) and waits for a reset.
    Halted,
}

impl Phase {
    pub fn power_state(self) -> PowerState {
        match self {
            Phase::Off => PowerState::Off,
            Phase::ShuttingDown => PowerState::PoweringOff,
            _ => PowerState::On,
        }
    }
}

/// Power commands, the union of IPMI chassis control and Redfish `ResetType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerCommand {
    On,
    ForceOn,
    ForceOff,
    GracefulShutdown,
    /// Hard reset: power stays on, the machine restarts POST.
    ForceRestart,
    GracefulRestart,
    /// Off, a pause, then on.
    PowerCycle,
    /// Diagnostic interrupt: a running Linux panics.
    Nmi,
    /// A short press of the power button: ACPI shutdown when on, power on when off.
    PushPowerButton,
}

/// What a power command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerOutcome {
    Started,
    /// The host already was where the command leads (On while on, Off while off).
    NoChange,
}

/// Why a command or fault was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("{host}: {command:?} needs the host powered on")]
    NotPoweredOn { host: String, command: PowerCommand },
    #[error("{host}: fault `{fault}` does not apply to this device")]
    FaultNotApplicable { host: String, fault: String },
    #[error("{host}: no GPU {gpu} (the node has {count})")]
    NoSuchGpu { host: String, gpu: u8, count: usize },
    #[error("{host}: no rail `{hca}`")]
    NoSuchRail { host: String, hca: String },
}

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
}

impl BmcIdentity {
    pub fn for_flavor(flavor: RedfishFlavor, name: &str) -> BmcIdentity {
        let h = name.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
        let (manufacturer, iana, product_id, model, fw, rev, bios) = match flavor {
            RedfishFlavor::Generic => ("Lifeline Sim", 0, 0x0001, "SIM-8GPU", "1.0.0", (1, 0x00), "1.0.0"),
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

/// Fault switches of the BMC itself, read lock-free on every packet / request.
#[derive(Debug, Default)]
pub struct BmcFaults {
    unresponsive: AtomicBool,
    slow_ms: AtomicU32,
    udp_loss_pct: AtomicU8,
    sessions_full: AtomicBool,
    sol_stuck: AtomicBool,
    cert_generation: AtomicU32,
    /// Bumped by a BMC reset (Redfish `Manager.Reset`, IPMI Cold Reset): front ends drop their sessions.
    reset_generation: AtomicU32,
    changed: Notify,
}

impl BmcFaults {
    pub fn unresponsive(&self) -> bool {
        self.unresponsive.load(Ordering::Relaxed)
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

/// Something front ends push to their subscribers (Redfish SSE / event subscriptions).
#[derive(Debug, Clone, PartialEq)]
pub enum HostEvent {
    Power(PowerState),
    Sel(SelEntry),
    /// A free-form message (Redfish `SubmitTestEvent`).
    Message {
        message_id: String,
        message: String,
    },
}

/// A boot device override, as both IPMI boot options and Redfish `Boot` express it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootOverride {
    /// Redfish `BootSourceOverrideTarget` spelling (`None`, `Pxe`, `Hdd`, `Cd`, `BiosSetup`, `UefiHttp`).
    pub target: &'static str,
    /// `Disabled`, `Once`, `Continuous`.
    pub enabled: &'static str,
    /// `UEFI` or `Legacy`.
    pub mode: &'static str,
}

impl Default for BootOverride {
    fn default() -> Self {
        BootOverride { target: "None", enabled: "Disabled", mode: "UEFI" }
    }
}

pub const BOOT_TARGETS: [&str; 7] = ["None", "Pxe", "Hdd", "Cd", "BiosSetup", "Diags", "UefiHttp"];

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

#[derive(Debug)]
enum Tty {
    /// Nothing reads the line (firmware, kernel, halted).
    Closed,
    Login(String),
    Password {
        user: String,
        typed: String,
    },
    Shell(String),
}

struct HostState {
    phase: Phase,
    /// Bumped by every power command; a sequencing task stops when it no longer matches.
    generation: u64,
    sequencer: Option<AbortHandle>,
    boot_override: BootOverride,
    node: NodeState,
    faults: Vec<Fault>,
    sel: SelLog,
    tty: Tty,
    sysrq_armed: bool,
    boots: u32,
    /// A switch's bootloader console (ONIE/GRUB, U-Boot, Aboot) while it boots; `None` once idle or off.
    boot_console: Option<crate::bootloader::BootConsole>,
}

/// One simulated machine (server or switch) and its BMC.
pub struct Host {
    name: String,
    kind: HostKind,
    timings: Timings,
    time_scale: f64,
    bmc_config: BmcConfig,
    faults: BmcFaults,
    console: Console,
    state: Mutex<HostState>,
    events: broadcast::Sender<HostEvent>,
    export_dir: Option<PathBuf>,
    export_gen: AtomicU64,
    /// Last export generation written; held while writing so writers never interleave.
    export_written: Mutex<u64>,
    actions: Arc<ActionLog>,
    weak: Weak<Host>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("name", &self.name).field("phase", &self.phase()).finish()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(a) = self.lock().sequencer.take() {
            a.abort();
        }
    }
}

impl Host {
    pub fn new(cfg: HostConfig) -> Arc<Host> {
        let node = NodeState::new(&cfg.name, &cfg.gpus, &cfg.rails);
        let phase = if cfg.powered_on { Phase::OsUp } else { Phase::Off };
        let tty = if cfg.powered_on { Tty::Login(String::new()) } else { Tty::Closed };
        Arc::new_cyclic(|weak| Host {
            name: cfg.name,
            kind: cfg.kind,
            timings: cfg.timings,
            time_scale: cfg.time_scale.max(0.0),
            bmc_config: cfg.bmc,
            faults: BmcFaults::default(),
            console: Console::new(weak.clone()),
            state: Mutex::new(HostState {
                phase,
                generation: 0,
                sequencer: None,
                boot_override: BootOverride::default(),
                node,
                faults: Vec::new(),
                sel: SelLog::default(),
                tty,
                sysrq_armed: false,
                boots: u32::from(cfg.powered_on),
                boot_console: None,
            }),
            events: broadcast::channel(16).0,
            export_dir: cfg.export_dir,
            export_gen: AtomicU64::new(1),
            export_written: Mutex::new(0),
            actions: Arc::default(),
            weak: weak.clone(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn kind(&self) -> HostKind {
        self.kind
    }
    pub fn bmc_config(&self) -> &BmcConfig {
        &self.bmc_config
    }
    /// The BMC's fault switches (read them on every request / datagram).
    pub fn bmc(&self) -> &BmcFaults {
        &self.faults
    }
    pub fn console(&self) -> &Console {
        &self.console
    }
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }
    pub fn scaled(&self, d: Duration) -> Duration {
        d.mul_f64(self.time_scale)
    }

    pub fn phase(&self) -> Phase {
        self.lock().phase
    }
    pub fn power_state(&self) -> PowerState {
        self.phase().power_state()
    }
    /// Completed boots since the sim started (tests wait on this).
    pub fn boots(&self) -> u32 {
        self.lock().boots
    }

    pub fn subscribe_events(&self) -> broadcast::Receiver<HostEvent> {
        self.events.subscribe()
    }

    /// Sends an event to every subscriber (SSE streams, Redfish subscriptions).
    pub fn publish(&self, e: HostEvent) {
        let _ = self.events.send(e);
    }

    pub fn sensors(&self) -> Vec<Sensor> {
        let st = self.lock();
        readings(self.kind, st.phase, &st.node)
    }

    /// A copy of the in-band state (GPUs, rails, settings).
    pub fn node_state(&self) -> NodeState {
        self.lock().node.clone()
    }

    pub fn active_faults(&self) -> Vec<Fault> {
        self.lock().faults.clone()
    }

    pub fn sel_entries(&self) -> Vec<SelEntry> {
        self.lock().sel.entries().cloned().collect()
    }
    /// (entries, generation, last add, last erase) for IPMI Get SEL Info.
    pub fn sel_info(&self) -> (usize, u32, u32, u32) {
        let st = self.lock();
        (st.sel.len(), st.sel.generation, st.sel.last_add, st.sel.last_erase)
    }
    pub fn sel_clear(&self) {
        let e = self.lock().sel.clear();
        let _ = self.events.send(HostEvent::Sel(e));
    }
    /// Clears the SEL on a protocol request, recorded in the action log.
    pub fn sel_clear_by(&self, origin: &Origin) {
        let mut st = self.lock();
        let e = st.sel.clear();
        self.actions.record(origin, ActionKind::SelClear, false);
        drop(st);
        let _ = self.events.send(HostEvent::Sel(e));
    }
    pub fn sel_add(&self, e: NewSel) -> SelEntry {
        let entry = self.lock().sel.add(e);
        let _ = self.events.send(HostEvent::Sel(entry.clone()));
        entry
    }

    pub fn boot_override(&self) -> BootOverride {
        self.lock().boot_override
    }
    pub fn set_boot_override(&self, o: BootOverride) {
        self.lock().boot_override = o;
    }

    /// A BMC reset: sessions go (front ends watch `reset_generation`), a stuck SOL payload is released.
    pub fn reset_bmc(&self) {
        self.faults.sol_stuck.store(false, Ordering::Relaxed);
        self.faults.reset_generation.fetch_add(1, Ordering::Relaxed);
        self.lock().faults.retain(|f| *f != Fault::SolStuck);
        self.faults.changed.notify_waiters();
    }

    /// A BMC reset requested through a protocol, recorded in the action log.
    pub fn reset_bmc_by(&self, origin: &Origin) {
        self.actions.record(origin, ActionKind::BmcReset, false);
        self.reset_bmc();
    }

    /// What this device was made to do (shared with a switch's SSH CLI).
    pub fn actions(&self) -> &Arc<ActionLog> {
        &self.actions
    }

    /// Runs a power command. Returns at once; the boot proceeds in the background. Not recorded in the
    /// action log: this is for in-band causes (console `reboot`, SysRq) and tests; front ends use
    /// [`Host::power_by`].
    pub fn power(&self, cmd: PowerCommand) -> Result<PowerOutcome, HostError> {
        let mut st = self.lock();
        self.execute(&mut st, cmd).map(|(outcome, _, _)| outcome)
    }

    /// Runs a power command requested through a BMC protocol or the control API, and records it in the
    /// action log (while holding the state lock, so the log order is the execution order). A refused
    /// command is not recorded; one without effect is recorded as a no-op.
    pub fn power_by(&self, cmd: PowerCommand, origin: &Origin) -> Result<PowerOutcome, HostError> {
        let mut st = self.lock();
        let (outcome, kind, noop) = self.execute(&mut st, cmd)?;
        self.actions.record(origin, kind, noop);
        Ok(outcome)
    }

    /// The power state machine: what `cmd` does in the current phase, and what to call it in the log.
    fn execute(
        &self,
        st: &mut HostState,
        cmd: PowerCommand,
    ) -> Result<(PowerOutcome, ActionKind, bool), HostError> {
        let phase = st.phase;
        let on = phase != Phase::Off;
        let not_on = || HostError::NotPoweredOn { host: self.name.clone(), command: cmd };
        let unchanged = |kind| Ok((PowerOutcome::NoChange, kind, true));
        let kind = match cmd {
            PowerCommand::On | PowerCommand::ForceOn => {
                if on {
                    return unchanged(ActionKind::PowerOn);
                }
                self.start(st, Sequence::Boot { cold: true });
                ActionKind::PowerOn
            }
            PowerCommand::ForceOff => {
                if !on {
                    return unchanged(ActionKind::PowerOff);
                }
                self.cut_power(st);
                ActionKind::PowerOff
            }
            PowerCommand::GracefulShutdown => {
                if !on {
                    return unchanged(ActionKind::SoftOff);
                }
                // Firmware and a crashed kernel ignore ACPI power button events.
                if phase != Phase::OsUp {
                    return Ok((PowerOutcome::Started, ActionKind::SoftOff, true));
                }
                self.start(st, Sequence::Shutdown { then_boot: false });
                ActionKind::SoftOff
            }
            PowerCommand::PushPowerButton => {
                if !on {
                    self.start(st, Sequence::Boot { cold: true });
                    ActionKind::PowerOn
                } else if phase == Phase::OsUp {
                    self.start(st, Sequence::Shutdown { then_boot: false });
                    ActionKind::SoftOff
                } else {
                    return Ok((PowerOutcome::Started, ActionKind::SoftOff, true));
                }
            }
            PowerCommand::ForceRestart => {
                if !on {
                    return Err(not_on());
                }
                self.start(st, Sequence::Boot { cold: false });
                ActionKind::HardReset
            }
            PowerCommand::GracefulRestart => {
                if !on {
                    return Err(not_on());
                }
                if phase == Phase::OsUp {
                    self.start(st, Sequence::Shutdown { then_boot: true });
                } else {
                    self.start(st, Sequence::Boot { cold: false });
                }
                ActionKind::GracefulRestart
            }
            PowerCommand::PowerCycle => {
                if !on {
                    return Err(not_on());
                }
                self.cut_power(st);
                self.start(st, Sequence::Cycle);
                ActionKind::PowerCycle
            }
            PowerCommand::Nmi => {
                if !on {
                    return Err(not_on());
                }
                if phase != Phase::OsUp {
                    return Ok((PowerOutcome::Started, ActionKind::Nmi, true));
                }
                self.panic(st, "NMI: Not continuing");
                ActionKind::Nmi
            }
        };
        Ok((PowerOutcome::Started, kind, false))
    }

    fn cut_power(&self, st: &mut HostState) {
        self.stop_sequencer(st);
        self.console.emit("\r\n");
        self.set_phase(st, Phase::Off);
        self.log_sel(st, power_sel(true));
    }

    fn panic(&self, st: &mut HostState, why: &str) {
        self.stop_sequencer(st);
        self.console.emit_line(&format!("\r\n[ 8812.104222] Kernel panic - not syncing: {why}"));
        self.console.emit_line(&format!("[ 8812.104391] ---[ end Kernel panic - not syncing: {why} ]---"));
        self.set_phase(st, Phase::Halted);
        self.log_sel(
            st,
            NewSel {
                sensor_type: sensor_type::OS_STOP,
                sensor_number: 0x71,
                event_type: 0x6f,
                deassertion: false,
                event_data: [0x01, 0xff, 0xff],
                severity: Health::Critical,
                message: "OS Critical Stop: run-time critical stop (kernel panic)".into(),
                message_id: "OpenBMC.0.1.OSCriticalStop",
            },
        );
    }

    fn stop_sequencer(&self, st: &mut HostState) {
        st.generation += 1;
        if let Some(a) = st.sequencer.take() {
            a.abort();
        }
        st.boot_console = None;
        st.tty = Tty::Closed;
        st.sysrq_armed = false;
    }

    fn start(&self, st: &mut HostState, mut seq: Sequence) {
        self.stop_sequencer(st);
        // The visible state changes synchronously, so a second command right after sees it.
        match seq {
            Sequence::Boot { cold: true } => {
                self.log_sel(st, power_sel(false));
                self.set_phase(st, Phase::Post);
                seq = Sequence::Boot { cold: false };
            }
            Sequence::Boot { cold: false } => self.set_phase(st, Phase::Post),
            Sequence::Shutdown { .. } => self.set_phase(st, Phase::ShuttingDown),
            _ => {}
        }
        let generation = st.generation;
        let weak = self.weak.clone();
        let loader = match self.kind {
            HostKind::Switch(p) => crate::bootloader::Flavor::for_platform(p),
            HostKind::Server => None,
        };
        let handle = match (loader, seq) {
            (Some(flavor), Sequence::Boot { .. }) => {
                tokio::spawn(run_boot_console(weak, generation, flavor, Duration::ZERO))
            }
            (Some(flavor), Sequence::Cycle) => {
                tokio::spawn(run_boot_console(weak, generation, flavor, self.scaled(self.timings.cycle_off)))
            }
            _ => tokio::spawn(run_sequence(weak, generation, seq)),
        };
        st.sequencer = Some(handle.abort_handle());
    }

    fn set_phase(&self, st: &mut HostState, phase: Phase) {
        let before = st.phase.power_state();
        let was_up = st.phase == Phase::OsUp;
        st.phase = phase;
        if phase.power_state() != before {
            let _ = self.events.send(HostEvent::Power(phase.power_state()));
        }
        if was_up != (phase == Phase::OsUp) {
            self.mark_export();
        }
    }

    fn log_sel(&self, st: &mut HostState, e: NewSel) {
        let entry = st.sel.add(e);
        let _ = self.events.send(HostEvent::Sel(entry));
    }

    fn mark_export(&self) {
        if self.export_dir.is_none() {
            return;
        }
        self.export_gen.fetch_add(1, Ordering::Relaxed);
        if tokio::runtime::Handle::try_current().is_ok()
            && let Some(h) = self.weak.upgrade()
        {
            tokio::task::spawn_blocking(move || h.write_export());
        }
    }

    /// Writes `DIR/<node>/...` now if anything changed since the last write. Blocking.
    fn write_export(&self) {
        let Some(dir) = &self.export_dir else { return };
        let mut written = self.export_written.lock().unwrap_or_else(|e| e.into_inner());
        let want = self.export_gen.load(Ordering::Relaxed);
        if *written >= want {
            return;
        }
        let (node, up) = {
            let st = self.lock();
            (st.node.clone(), st.phase == Phase::OsUp)
        };
        let files = node.render_files(up);
        match write_files(&dir.join(&self.name), &files) {
            Ok(()) => *written = want,
            Err(e) => {
                tracing::warn!(host = %self.name, dir = %dir.display(), error = %e, "node state export failed")
            }
        }
    }

    /// Waits until the export directory reflects the current state (no-op without export).
    pub async fn flush_export(self: &Arc<Self>) {
        if self.export_dir.is_none() {
            return;
        }
        let h = self.clone();
        let _ = tokio::task::spawn_blocking(move || h.write_export()).await;
    }

    /// Applies a fault to this host or its BMC.
    pub fn inject(&self, fault: &Fault) -> Result<(), HostError> {
        let not_applicable =
            || HostError::FaultNotApplicable { host: self.name.clone(), fault: fault.to_string() };
        let server = self.kind == HostKind::Server;
        let mut st = self.lock();
        match fault {
            Fault::BmcUnresponsive => self.faults.unresponsive.store(true, Ordering::Relaxed),
            Fault::BmcSlow { ms } => self.faults.slow_ms.store(*ms, Ordering::Relaxed),
            Fault::UdpLoss { pct } => self.faults.udp_loss_pct.store(*pct, Ordering::Relaxed),
            Fault::TlsCertChange => {
                self.faults.cert_generation.fetch_add(1, Ordering::Relaxed);
            }
            Fault::SolStuck => self.faults.sol_stuck.store(true, Ordering::Relaxed),
            Fault::SessionsFull => self.faults.sessions_full.store(true, Ordering::Relaxed),
            Fault::BootLoop => {
                st.faults.retain(|f| f != fault);
                st.faults.push(fault.clone());
                // A running machine crashes into the loop now; an off one loops at its next power on.
                if let Some(bc) = &st.boot_console {
                    bc.set_boot_loop(true);
                    bc.reset();
                } else if st.phase != Phase::Off {
                    self.console
                        .emit_line("\r\n[ 9102.000113] watchdog: BUG: soft lockup - CPU#3 stuck for 22s!");
                    self.start(&mut st, Sequence::Boot { cold: false });
                }
                self.faults.changed.notify_waiters();
                return Ok(());
            }
            Fault::GpuEcc { gpu } | Fault::GpuXid { gpu, .. } => {
                if !server {
                    return Err(not_applicable());
                }
                let count = st.node.gpus.len();
                let up = st.phase == Phase::OsUp;
                let Some(g) = st.node.gpus.get_mut(usize::from(*gpu)) else {
                    return Err(HostError::NoSuchGpu { host: self.name.clone(), gpu: *gpu, count });
                };
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                let bus = g.pci_bus_id[4..].to_lowercase();
                let (code, message) = match fault {
                    Fault::GpuEcc { .. } => {
                        g.ecc_volatile_uncorrected += 1;
                        g.ecc_aggregate_uncorrected += 1;
                        g.remapped_rows_pending = true;
                        (48, "DBE (Double Bit Error) ECC Error".to_owned())
                    }
                    Fault::GpuXid { code, .. } => {
                        match code {
                            79 => {
                                g.pcie_width_current = 0;
                                g.pcie_gen_current = 0;
                            }
                            74 => {
                                g.nvlinks_up = g.nvlinks_up.saturating_sub(1);
                                g.nvlinks_down += 1;
                            }
                            _ => {}
                        }
                        (*code, xid_message(*code).to_owned())
                    }
                    _ => unreachable!("outer match"),
                };
                g.xid_events.push(XidEvent { code, at: now, message: message.clone() });
                if up {
                    self.console.emit_line(&format!(
                        "[ 9231.551202] NVRM: Xid (PCI:{bus}): {code}, pid=48211, name=python3, {message}"
                    ));
                }
                let gpu_n = *gpu;
                if matches!(fault, Fault::GpuEcc { .. }) {
                    self.log_sel(
                        &mut st,
                        NewSel {
                            sensor_type: sensor_type::MEMORY,
                            sensor_number: 0x60 + gpu_n,
                            event_type: 0x6f,
                            deassertion: false,
                            event_data: [0x01, 0xff, gpu_n],
                            severity: Health::Critical,
                            message: format!("GPU{gpu_n}: uncorrectable ECC memory error detected"),
                            message_id: "Lifeline.1.0.GpuUncorrectableEcc",
                        },
                    );
                } else if code == 79 {
                    self.log_sel(
                        &mut st,
                        NewSel {
                            sensor_type: sensor_type::CRITICAL_INTERRUPT,
                            sensor_number: 0x60 + gpu_n,
                            event_type: 0x6f,
                            deassertion: false,
                            event_data: [0x08, 0xff, gpu_n],
                            severity: Health::Critical,
                            message: format!("GPU{gpu_n}: PCIe bus fatal error (device fell off the bus)"),
                            message_id: "Lifeline.1.0.GpuPcieFatal",
                        },
                    );
                }
            }
            Fault::RailDown { hca } | Fault::RailMtu { hca, .. } | Fault::PfcStorm { port: hca } => {
                if !server {
                    return Err(not_applicable());
                }
                let up = st.phase == Phase::OsUp;
                let Some(r) = st.node.rail_mut(hca) else {
                    return Err(HostError::NoSuchRail { host: self.name.clone(), hca: hca.clone() });
                };
                let netdev = r.spec.netdev.clone();
                let hca_name = r.spec.hca.clone();
                match fault {
                    Fault::RailDown { .. } => {
                        if r.link_up {
                            r.link_up = false;
                            r.link_downed += 1;
                        }
                        if up {
                            self.console.emit_line(&format!(
                                "[ 9301.004411] mlx5_core {hca_name}: Port module event: module 0, Cable unplugged"
                            ));
                            self.console.emit_line(&format!("[ 9301.004988] {netdev}: Link down"));
                        }
                        self.log_sel(
                            &mut st,
                            NewSel {
                                sensor_type: sensor_type::LAN,
                                sensor_number: 0x80,
                                event_type: 0x6f,
                                deassertion: false,
                                event_data: [0x00, 0xff, 0xff],
                                severity: Health::Warning,
                                message: format!("Network link down: {hca_name} ({netdev})"),
                                message_id: "Lifeline.1.0.NetworkLinkDown",
                            },
                        );
                    }
                    Fault::RailMtu { mtu, .. } => r.mtu = *mtu,
                    _ => {
                        r.pfc_storm = true;
                        r.rx_pause_prio3 += 48_000_000;
                        r.tx_pause_prio3 += 120;
                    }
                }
            }
            Fault::ConfigChange | Fault::SshKeyChange => return Err(not_applicable()),
        }
        st.faults.retain(|f| !same_slot(f, fault));
        st.faults.push(fault.clone());
        drop(st);
        self.faults.changed.notify_waiters();
        self.mark_export();
        Ok(())
    }

    /// Clears every injected fault and restores the in-band state to healthy (lifetime counters stay).
    pub fn clear_faults(&self) {
        let f = &self.faults;
        f.unresponsive.store(false, Ordering::Relaxed);
        f.slow_ms.store(0, Ordering::Relaxed);
        f.udp_loss_pct.store(0, Ordering::Relaxed);
        f.sessions_full.store(false, Ordering::Relaxed);
        f.sol_stuck.store(false, Ordering::Relaxed);
        let mut st = self.lock();
        st.faults.clear();
        if let Some(bc) = &st.boot_console {
            bc.set_boot_loop(false);
        }
        st.node.reboot();
        let up = st.phase == Phase::OsUp;
        for r in &mut st.node.rails {
            let was_down = !r.link_up;
            r.link_up = true;
            r.mtu = r.spec.mtu;
            r.pfc_storm = false;
            if was_down && up {
                self.console.emit_line(&format!("[ 9400.100020] {}: Link up", r.spec.netdev));
            }
        }
        drop(st);
        f.changed.notify_waiters();
        self.mark_export();
    }

    fn has_fault(st: &HostState, f: &Fault) -> bool {
        st.faults.iter().any(|x| x == f)
    }

    pub(crate) fn console_break(&self) {
        let mut st = self.lock();
        if matches!(st.phase, Phase::OsUp) {
            st.sysrq_armed = true;
        }
    }

    pub(crate) fn console_input(&self, bytes: &[u8]) {
        let mut pending: Option<PowerCommand> = None;
        let mut out = Vec::<u8>::new();
        {
            let mut st = self.lock();
            if st.phase != Phase::OsUp
                && let Some(bc) = &st.boot_console
            {
                bc.input(bytes);
                return;
            }
            for &b in bytes {
                if st.sysrq_armed {
                    st.sysrq_armed = false;
                    match b {
                        b'b' => {
                            out.extend_from_slice(b"[ 9500.000001] sysrq: Resetting\r\n");
                            pending = Some(PowerCommand::ForceRestart);
                        }
                        b'c' => {
                            self.console.emit(std::mem::take(&mut out));
                            out.extend_from_slice(b"[ 9500.000001] sysrq: Trigger a crash\r\n");
                            self.console.emit(std::mem::take(&mut out));
                            self.panic(&mut st, "sysrq triggered crash");
                            break;
                        }
                        _ => out.extend_from_slice(
                            b"[ 9500.000001] sysrq: HELP : loglevel(0-9) reboot(b) crash(c) show-memory-usage(m) \
                              show-task-states(t) sync(s) show-blocked-tasks(w)\r\n",
                        ),
                    }
                    continue;
                }
                let kind = self.kind;
                let name = self.name.clone();
                match &mut st.tty {
                    Tty::Closed => {}
                    Tty::Login(buf) => match b {
                        b'\r' | b'\n' => {
                            out.extend_from_slice(b"\r\n");
                            if buf.is_empty() {
                                out.extend_from_slice(format!("{name} login: ").as_bytes());
                            } else {
                                let user = std::mem::take(buf);
                                out.extend_from_slice(b"Password: ");
                                st.tty = Tty::Password { user, typed: String::new() };
                            }
                        }
                        0x7f | 0x08 if buf.pop().is_some() => out.extend_from_slice(b"\x08 \x08"),
                        0x20..=0x7e => {
                            buf.push(char::from(b));
                            out.push(b);
                        }
                        _ => {}
                    },
                    Tty::Password { user, typed } => match b {
                        b'\r' | b'\n' => {
                            out.extend_from_slice(b"\r\n");
                            if typed.is_empty() {
                                out.extend_from_slice(
                                    format!("Login incorrect\r\n{name} login: ").as_bytes(),
                                );
                                st.tty = Tty::Login(String::new());
                            } else {
                                let prompt = shell_prompt(kind, user, &name);
                                out.extend_from_slice(
                                    format!("Last login: Mon Mar  3 02:11:09 UTC 2025 on ttyS1\r\n{prompt}")
                                        .as_bytes(),
                                );
                                st.tty = Tty::Shell(String::new());
                            }
                        }
                        0x20..=0x7e => typed.push(char::from(b)),
                        _ => {}
                    },
                    Tty::Shell(buf) => match b {
                        b'\r' | b'\n' => {
                            let line = std::mem::take(buf);
                            out.extend_from_slice(b"\r\n");
                            let (reply, cmd, logout) = shell_command(kind, &name, &st.node, line.trim());
                            out.extend_from_slice(reply.as_bytes());
                            if logout {
                                out.extend_from_slice(format!("\r\n{name} login: ").as_bytes());
                                st.tty = Tty::Login(String::new());
                            } else if cmd.is_none() {
                                out.extend_from_slice(shell_prompt(kind, "root", &name).as_bytes());
                            }
                            if cmd.is_some() {
                                pending = cmd;
                                st.tty = Tty::Closed;
                            }
                        }
                        0x03 => {
                            buf.clear();
                            out.extend_from_slice(b"^C\r\n");
                            out.extend_from_slice(shell_prompt(kind, "root", &name).as_bytes());
                        }
                        0x7f | 0x08 if buf.pop().is_some() => out.extend_from_slice(b"\x08 \x08"),
                        0x20..=0x7e => {
                            buf.push(char::from(b));
                            out.push(b);
                        }
                        _ => {}
                    },
                }
            }
        }
        if !out.is_empty() {
            self.console.emit(out);
        }
        if let Some(cmd) = pending {
            let _ = self.power(cmd);
        }
    }
}

/// Faults of the same name and target replace each other (a second `rail-mtu=mlx5_0:X` updates X).
fn same_slot(a: &Fault, b: &Fault) -> bool {
    match (a, b) {
        (Fault::RailDown { hca: x }, Fault::RailDown { hca: y })
        | (Fault::RailMtu { hca: x, .. }, Fault::RailMtu { hca: y, .. })
        | (Fault::PfcStorm { port: x }, Fault::PfcStorm { port: y }) => x == y,
        (Fault::GpuEcc { gpu: x }, Fault::GpuEcc { gpu: y }) => x == y,
        (Fault::GpuXid { .. }, Fault::GpuXid { .. }) => a == b,
        _ => a.name() == b.name(),
    }
}

fn xid_message(code: u16) -> &'static str {
    match code {
        13 => "Graphics Engine Exception",
        31 => "GPU memory page fault",
        43 => "GPU stopped processing",
        45 => "Preemptive cleanup, due to previous errors",
        48 => "DBE (Double Bit Error) ECC Error",
        61 => "Internal micro-controller breakpoint/warning",
        63 => "ECC page retirement or row remapping recording event",
        64 => "ECC page retirement or row remapper recording failure",
        74 => "NVLink Error",
        79 => "GPU has fallen off the bus",
        92 => "High single-bit ECC error rate",
        94 => "Contained ECC error",
        95 => "Uncontained ECC error",
        _ => "GPU error",
    }
}

fn power_sel(off: bool) -> NewSel {
    NewSel {
        sensor_type: sensor_type::POWER_UNIT,
        sensor_number: 0x70,
        event_type: 0x6f,
        deassertion: !off,
        event_data: [0x00, 0xff, 0xff],
        severity: Health::Ok,
        message: if off { "Host power off".into() } else { "Host power on".into() },
        message_id: if off { "OpenBMC.0.1.DCPowerOff" } else { "OpenBMC.0.1.DCPowerOn" },
    }
}

fn shell_prompt(kind: HostKind, user: &str, name: &str) -> String {
    let user = if user.is_empty() { "root" } else { user };
    match kind {
        HostKind::Server => format!("{user}@{name}:~# "),
        HostKind::Switch(_) => format!("{user}@{name}:~$ "),
    }
}

/// A tiny shell: enough for recovery scripts to look around and reboot. Returns (output, power, logout).
fn shell_command(
    kind: HostKind,
    name: &str,
    node: &NodeState,
    line: &str,
) -> (String, Option<PowerCommand>, bool) {
    let mut words = line.split_whitespace();
    let Some(cmd) = words.next() else { return (String::new(), None, false) };
    let out = match cmd {
        "hostname" => format!("{name}\r\n"),
        "uname" => format!("Linux {name} 5.15.0-105-generic #115-Ubuntu SMP x86_64 GNU/Linux\r\n"),
        "uptime" => " 02:14:11 up 3 min,  1 user,  load average: 0.08, 0.11, 0.05\r\n".into(),
        "nvidia-smi" if kind == HostKind::Server => {
            node.gpus.iter().map(|g| format!("GPU {}: {} (UUID: {})\r\n", g.index, g.name, g.uuid)).collect()
        }
        "ip" => node
            .rails
            .iter()
            .map(|r| {
                let st = if r.link_up { "UP" } else { "DOWN" };
                format!("{:<16} {:<14} {}/{}\r\n", r.spec.netdev, st, r.spec.ipv4, r.spec.prefix)
            })
            .collect(),
        "reboot" => return ("Rebooting.\r\n".into(), Some(PowerCommand::GracefulRestart), false),
        "poweroff" => return ("Powering off.\r\n".into(), Some(PowerCommand::GracefulShutdown), false),
        "shutdown" if line.contains("-r") => {
            return ("Rebooting.\r\n".into(), Some(PowerCommand::GracefulRestart), false);
        }
        "shutdown" => return ("Powering off.\r\n".into(), Some(PowerCommand::GracefulShutdown), false),
        "exit" | "logout" => return ("logout\r\n".into(), None, true),
        "true" | ":" => String::new(),
        other => format!("-bash: {other}: command not found\r\n"),
    };
    (out, None, false)
}

#[derive(Debug, Clone, Copy)]
enum Sequence {
    /// POST through OS up. `cold`: power was just applied (logs a power-on SEL record).
    Boot { cold: bool },
    /// ACPI shutdown, then off (or a reboot).
    Shutdown { then_boot: bool },
    /// Power already cut: wait, then a cold boot.
    Cycle,
}

/// Prints `lines` spread over `total`, checking after each sleep that the command is still current.
/// Returns `None` when superseded (or the host is gone).
async fn stage(weak: &Weak<Host>, generation: u64, lines: &[String], total: Duration) -> Option<()> {
    let n = lines.len().max(1) as u32;
    let step = total / n;
    for line in lines {
        if !step.is_zero() {
            tokio::time::sleep(step).await;
        }
        let h = weak.upgrade()?;
        let st = h.lock();
        if st.generation != generation {
            return None;
        }
        h.console.emit_line(line);
    }
    if lines.is_empty() && !step.is_zero() {
        tokio::time::sleep(step).await;
    }
    Some(())
}

/// Moves the host to `phase` if the command is still current; with `f` run under the same lock.
fn advance(weak: &Weak<Host>, generation: u64, f: impl FnOnce(&Host, &mut HostState)) -> Option<()> {
    let h = weak.upgrade()?;
    let mut st = h.lock();
    if st.generation != generation {
        return None;
    }
    f(&h, &mut st);
    Some(())
}

async fn run_sequence(weak: Weak<Host>, generation: u64, seq: Sequence) -> Option<()> {
    let (timings, kind, name, gpus, rails) = {
        let h = weak.upgrade()?;
        let st = h.lock();
        let rails: Vec<(String, String)> =
            st.node.rails.iter().map(|r| (r.spec.hca.clone(), r.spec.netdev.clone())).collect();
        let t = h.timings;
        let s = h.time_scale;
        let scaled = Timings {
            post: t.post.mul_f64(s),
            bootloader: t.bootloader.mul_f64(s),
            kernel: t.kernel.mul_f64(s),
            userspace: t.userspace.mul_f64(s),
            shutdown: t.shutdown.mul_f64(s),
            cycle_off: t.cycle_off.mul_f64(s),
        };
        (scaled, h.kind, h.name.clone(), st.node.gpus.len(), rails)
    };
    let mut cold = match seq {
        Sequence::Boot { cold } => cold,
        Sequence::Cycle => {
            tokio::time::sleep(timings.cycle_off).await;
            true
        }
        Sequence::Shutdown { then_boot } => {
            advance(&weak, generation, |h, st| {
                st.tty = Tty::Closed;
                h.set_phase(st, Phase::ShuttingDown);
            })?;
            let lines: Vec<String> = [
                "[  OK  ] Stopped target Multi-User System.",
                "[  OK  ] Stopped NVIDIA Persistence Daemon.",
                "[  OK  ] Reached target System Shutdown.",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(std::iter::once(
                if then_boot {
                    "[ 9600.000001] reboot: Restarting system"
                } else {
                    "[ 9600.000001] reboot: Power down"
                }
                .to_owned(),
            ))
            .collect();
            stage(&weak, generation, &lines, timings.shutdown).await?;
            if !then_boot {
                return advance(&weak, generation, |h, st| {
                    h.set_phase(st, Phase::Off);
                    h.log_sel(st, power_sel(true));
                });
            }
            false
        }
    };
    loop {
        let mut target = "None";
        let mut looping = false;
        advance(&weak, generation, |h, st| {
            if cold {
                h.log_sel(st, power_sel(false));
            }
            h.set_phase(st, Phase::Post);
            st.node.reboot();
            st.faults.retain(|f| !f.cleared_by_power_cycle());
            h.mark_export();
            let o = st.boot_override;
            if o.enabled != "Disabled" {
                target = o.target;
                if o.enabled == "Once" {
                    st.boot_override.enabled = "Disabled";
                    st.boot_override.target = "None";
                }
            }
            looping = Host::has_fault(st, &Fault::BootLoop);
        })?;
        cold = false;
        let bios = weak.upgrade()?.bmc_config.identity.bios_version.clone();
        stage(&weak, generation, &post_lines(kind, &name, &bios, target), timings.post).await?;
        if looping {
            if matches!(kind, HostKind::Switch(_)) {
                stage(&weak, generation, &bootloader_lines(kind), timings.bootloader).await?;
            }
            stage(&weak, generation, &boot_loop_lines(kind), timings.kernel).await?;
            advance(&weak, generation, |h, st| {
                h.log_sel(
                    st,
                    NewSel {
                        sensor_type: sensor_type::SYSTEM_FIRMWARE_PROGRESS,
                        sensor_number: 0x74,
                        event_type: 0x6f,
                        deassertion: false,
                        event_data: [0x00, 0x06, 0xff],
                        severity: Health::Critical,
                        message: "System firmware error: boot failed, system reset".into(),
                        message_id: "OpenBMC.0.1.BIOSPOSTError",
                    },
                )
            })?;
            continue;
        }
        advance(&weak, generation, |h, st| h.set_phase(st, Phase::Bootloader))?;
        stage(&weak, generation, &bootloader_lines(kind), timings.bootloader).await?;
        advance(&weak, generation, |h, st| h.set_phase(st, Phase::Kernel))?;
        stage(&weak, generation, &kernel_lines(kind, &name, gpus, &rails), timings.kernel).await?;
        stage(&weak, generation, &[], timings.userspace).await?;
        return advance(&weak, generation, |h, st| {
            h.set_phase(st, Phase::OsUp);
            st.boots += 1;
            st.tty = Tty::Login(String::new());
            st.sequencer = None;
            h.console.emit(Bytes::from(login_banner(kind, &name)));
        });
    }
}

/// A switch boots through its bootloader model: the phase follows the bootloader's stage, keys typed on
/// the console reach it (an operator or an expect script can break into ONIE / U-Boot / Aboot).
async fn run_boot_console(
    weak: Weak<Host>,
    generation: u64,
    flavor: crate::bootloader::Flavor,
    wait: Duration,
) -> Option<()> {
    use crate::bootloader::{BootConsole, MachineConfig, Stage};
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let mut stages = {
        let h = weak.upgrade()?;
        let mut st = h.lock();
        if st.generation != generation {
            return None;
        }
        h.set_phase(&mut st, Phase::Post);
        let boot_loop = Host::has_fault(&st, &Fault::BootLoop);
        let cfg = MachineConfig { flavor, hostname: h.name.clone(), boot_loop };
        let emit_to = weak.clone();
        let bc = BootConsole::spawn(cfg, h.time_scale, move |b| {
            if let Some(h) = emit_to.upgrade() {
                h.console.emit(b);
            }
        });
        let rx = bc.stages();
        st.boot_console = Some(bc);
        rx
    };
    loop {
        let stage = *stages.borrow_and_update();
        let phase = match stage {
            Stage::Firmware => Phase::Post,
            Stage::Booting => Phase::Kernel,
            Stage::Panicked => Phase::Halted,
            Stage::Os => Phase::OsUp,
            _ => Phase::Bootloader,
        };
        advance(&weak, generation, |h, st| {
            if st.phase != phase {
                if phase == Phase::OsUp {
                    st.boots += 1;
                }
                h.set_phase(st, phase);
            }
        })?;
        stages.changed().await.ok()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn wait_for(h: &Host, phase: Phase) {
        for _ in 0..500 {
            if h.phase() == phase {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{} never reached {phase:?} (is {:?})", h.name(), h.phase());
    }

    fn fast(name: &str) -> Arc<Host> {
        let mut cfg = HostConfig::server(name);
        cfg.time_scale = 0.005;
        Host::new(cfg)
    }

    #[tokio::test]
    async fn power_cycle_boots_through_every_stage_on_the_console() {
        let h = fast("gpu-node-01");
        let mut rx = h.console().subscribe();
        let mut events = h.subscribe_events();
        assert_eq!(h.power(PowerCommand::PowerCycle).unwrap(), PowerOutcome::Started);
        assert_eq!(h.power_state(), PowerState::Off);
        wait_for(&h, Phase::OsUp).await;
        let mut text = Vec::new();
        while let Ok(b) = rx.try_recv() {
            text.extend_from_slice(&b);
        }
        let text = String::from_utf8_lossy(&text);
        for needle in ["BIOS Date", "GNU GRUB", "Linux version", "mlx5_core: mlx5_7", "gpu-node-01 login: "] {
            assert!(text.contains(needle), "missing {needle:?} in console:\n{text}");
        }
        assert_eq!(events.recv().await.unwrap(), HostEvent::Power(PowerState::Off));
        let sel: Vec<String> = h.sel_entries().into_iter().map(|e| e.message).collect();
        assert_eq!(sel, ["Host power off", "Host power on"]);
        assert_eq!(h.boots(), 2);
    }

    #[tokio::test]
    async fn commands_that_need_power_are_refused_when_off() {
        let h = fast("n1");
        assert_eq!(h.power(PowerCommand::ForceOff).unwrap(), PowerOutcome::Started);
        assert_eq!(h.power(PowerCommand::ForceOff).unwrap(), PowerOutcome::NoChange);
        assert!(matches!(h.power(PowerCommand::PowerCycle), Err(HostError::NotPoweredOn { .. })));
        assert!(matches!(h.power(PowerCommand::ForceRestart), Err(HostError::NotPoweredOn { .. })));
        h.power(PowerCommand::On).unwrap();
        assert_eq!(h.power(PowerCommand::On).unwrap(), PowerOutcome::NoChange);
        wait_for(&h, Phase::OsUp).await;
        h.power(PowerCommand::GracefulShutdown).unwrap();
        assert_eq!(h.power_state(), PowerState::PoweringOff);
        wait_for(&h, Phase::Off).await;
    }

    #[tokio::test]
    async fn login_shell_and_reboot_from_the_console() {
        let h = fast("n2");
        let mut rx = h.console().subscribe();
        h.console().write_input(b"root\r");
        h.console().write_input(b"secret\r");
        h.console().write_input(b"hostname\r");
        let mut got = String::new();
        while let Ok(b) = rx.try_recv() {
            got.push_str(&String::from_utf8_lossy(&b));
        }
        assert!(got.contains("Password: "), "{got}");
        assert!(!got.contains("secret"), "password must not echo: {got}");
        assert!(got.contains("root@n2:~# hostname\r\nn2\r\n"), "{got}");
        h.console().write_input(b"reboot\r");
        assert_eq!(h.phase(), Phase::ShuttingDown);
        wait_for(&h, Phase::OsUp).await;
        assert_eq!(h.boots(), 2);
    }

    #[tokio::test]
    async fn sysrq_crash_halts_and_a_reset_recovers() {
        let h = fast("n3");
        h.console().send_break();
        h.console().write_input(b"c");
        assert_eq!(h.phase(), Phase::Halted);
        assert!(h.console().history().contains("Kernel panic"));
        h.power(PowerCommand::ForceRestart).unwrap();
        wait_for(&h, Phase::OsUp).await;
    }

    #[tokio::test]
    async fn faults_reach_in_band_state_and_sel_and_a_cycle_clears_what_it_should() {
        let h = fast("n4");
        h.inject(&Fault::GpuXid { gpu: 2, code: 79 }).unwrap();
        h.inject(&Fault::GpuEcc { gpu: 5 }).unwrap();
        h.inject(&Fault::RailDown { hca: "mlx5_3".into() }).unwrap();
        assert!(matches!(h.inject(&Fault::GpuEcc { gpu: 9 }), Err(HostError::NoSuchGpu { count: 8, .. })));
        assert!(matches!(h.inject(&Fault::ConfigChange), Err(HostError::FaultNotApplicable { .. })));
        let n = h.node_state();
        assert_eq!(n.gpus[2].xid_events[0].code, 79);
        assert_eq!(n.gpus[5].ecc_volatile_uncorrected, 1);
        assert!(!n.rails[3].link_up);
        let sel: Vec<String> = h.sel_entries().into_iter().map(|e| e.message).collect();
        assert_eq!(sel.len(), 3, "{sel:?}");
        assert!(h.sensors().iter().any(|s| s.number == 0x15 && s.health == Health::Critical));
        assert_eq!(h.active_faults().len(), 3);
        h.power(PowerCommand::PowerCycle).unwrap();
        wait_for(&h, Phase::OsUp).await;
        let n = h.node_state();
        assert!(n.gpus[2].xid_events.is_empty());
        assert_eq!(n.gpus[5].ecc_volatile_uncorrected, 0);
        assert_eq!(n.gpus[5].ecc_aggregate_uncorrected, 1);
        assert!(!n.rails[3].link_up, "a cable stays unplugged across a power cycle");
        assert_eq!(h.active_faults(), vec![Fault::RailDown { hca: "mlx5_3".into() }]);
        h.clear_faults();
        assert!(h.node_state().rails[3].link_up);
    }

    #[tokio::test]
    async fn boot_loop_never_reaches_the_os_until_cleared() {
        let h = fast("n5");
        h.inject(&Fault::BootLoop).unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_ne!(h.phase(), Phase::OsUp);
        assert!(h.console().history().contains("PCIe Training Error"));
        assert!(
            h.sel_entries().iter().filter(|e| e.sensor_type == sensor_type::SYSTEM_FIRMWARE_PROGRESS).count()
                >= 2
        );
        h.clear_faults();
        wait_for(&h, Phase::OsUp).await;
    }

    #[tokio::test]
    async fn a_switch_boots_through_its_bootloader_and_loops_on_boot_loop() {
        let mut cfg = HostConfig::server("leaf1");
        cfg.kind = HostKind::Switch(lifeline_types::Platform::Eos);
        cfg.gpus.count = 0;
        cfg.rails.clear();
        cfg.time_scale = 0.01;
        let h = Host::new(cfg);
        h.power(PowerCommand::PowerCycle).unwrap();
        wait_for(&h, Phase::OsUp).await;
        assert!(h.console().history().contains("Aboot"), "{}", h.console().history());
        h.inject(&Fault::BootLoop).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_ne!(h.phase(), Phase::OsUp);
        h.clear_faults();
        h.power(PowerCommand::ForceRestart).unwrap();
        wait_for(&h, Phase::OsUp).await;
    }

    #[tokio::test]
    async fn bmc_faults_flip_switches() {
        let h = fast("n6");
        h.inject(&"udp-loss=100".parse().unwrap()).unwrap();
        h.inject(&"bmc-slow=25".parse().unwrap()).unwrap();
        h.inject(&Fault::SolStuck).unwrap();
        let g = h.bmc().cert_generation();
        h.inject(&Fault::TlsCertChange).unwrap();
        assert!(h.bmc().drop_datagram());
        assert_eq!(h.bmc().slow(), Some(Duration::from_millis(25)));
        assert_eq!(h.bmc().cert_generation(), g + 1);
        h.reset_bmc();
        assert!(!h.bmc().sol_stuck());
        h.clear_faults();
        assert!(!h.bmc().drop_datagram());
        assert!(h.active_faults().is_empty());
    }

    #[tokio::test]
    async fn export_follows_faults() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = HostConfig::server("n7");
        cfg.export_dir = Some(dir.path().to_owned());
        let h = Host::new(cfg);
        h.flush_export().await;
        let state = dir.path().join("n7/sysfs/class/infiniband/mlx5_1/ports/1/state");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "4: ACTIVE\n");
        h.inject(&Fault::RailDown { hca: "mlx5_1".into() }).unwrap();
        h.inject(&Fault::RailMtu { hca: "mlx5_2".into(), mtu: 1500 }).unwrap();
        h.flush_export().await;
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "1: DOWN\n");
        let mtu = dir.path().join("n7/sysfs/class/net/ens3np0/mtu");
        assert_eq!(std::fs::read_to_string(mtu).unwrap(), "1500\n");
    }
}
