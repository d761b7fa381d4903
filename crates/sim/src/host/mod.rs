//! The simulated machine behind a BMC: power state machine, serial console, in-band state, SEL and the
//! BMC's own fault switches.
//!
//! Every protocol front end (Redfish, IPMI + SOL, the control API) drives the same `Arc<Host>`, so a power
//! cycle through IPMI is seen by Redfish, and a fault shows up in every protocol at once.
//!
//! Power: `Off -> Post -> Bootloader -> Kernel -> OsUp` with delays scaled by `time_scale`; a sequencing
//! task exists only while a transition is in progress (idle hosts cost no task), and it is aborted by the
//! next power command or when the host is dropped.
//!
//! Split by concern: `config` (what a host and its BMC are built from, the BMC's fault switches),
//! `power` (the power state machine and boot sequencing), `faults` (applying and clearing faults),
//! `tty` (the serial console's login and tiny shell); this file holds the shared state and accessors.

mod config;
mod faults;
mod node;
mod power;
#[cfg(test)]
mod tests;
mod tty;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use lifeline_types::PowerState;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use crate::actions::{ActionKind, ActionLog, Origin};
pub use crate::console::{Console, HostKind};
use crate::fault::Fault;
use crate::node_state::{NodeState, write_files};
use crate::sel::{NewSel, SelEntry, SelLog};
use crate::sensors::{Sensor, readings};
pub use config::{BMC_RESET_DOWNTIME, BmcConfig, BmcFaults, BmcIdentity, HostConfig, Timings};
use tty::Tty;

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
    #[error("{host}: no PSU {psu} (the machine has {count}, numbered from 1)")]
    NoSuchPsu { host: String, psu: u8, count: u8 },
    #[error("{host}: no rail `{hca}`")]
    NoSuchRail { host: String, hca: String },
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
    /// A Redfish heartbeat, sent by the EventService itself to the subscriptions that asked for one
    /// (never published by the host).
    Heartbeat,
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

pub const BOOT_TARGETS: [&str; 8] = ["None", "Pxe", "Hdd", "Cd", "Usb", "BiosSetup", "Diags", "UefiHttp"];

struct HostState {
    phase: Phase,
    /// Bumped by every power command; a sequencing task stops when it no longer matches.
    generation: u64,
    sequencer: Option<AbortHandle>,
    boot_override: BootOverride,
    node: node::LazyNode,
    faults: Vec<Fault>,
    sel: SelLog,
    tty: Tty,
    sysrq_armed: bool,
    boots: u32,
    /// When the system was last reset or powered on by a command (Redfish `LastResetTime`): a BMC's own
    /// record, which clients use to confirm a cycle whose off phase was too short to observe.
    last_reset: chrono::DateTime<chrono::Utc>,
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
    /// The BMC's user database (IPMI user slots, Redfish accounts).
    accounts: crate::accounts::Accounts,
    faults: BmcFaults,
    console: Console,
    state: Mutex<HostState>,
    events: crate::lazy_channel::LazyBroadcast<HostEvent>,
    export_dir: Option<PathBuf>,
    export_gen: AtomicU64,
    /// Last export generation written; held while writing so writers never interleave.
    export_written: Mutex<u64>,
    actions: Arc<ActionLog>,
    /// Virtual media (made on first use).
    media: crate::media::MediaTray,
    /// BIOS settings (made on first use).
    bios: crate::bios::Bios,
    /// Firmware components and update tasks (made on first use).
    firmware: crate::firmware::Firmware,
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
        let node = node::LazyNode::new(cfg.gpus, cfg.rails);
        let phase = if cfg.powered_on { Phase::OsUp } else { Phase::Off };
        let tty = if cfg.powered_on { Tty::Login(String::new()) } else { Tty::Closed };
        Arc::new_cyclic(|weak| Host {
            name: cfg.name,
            kind: cfg.kind,
            timings: cfg.timings,
            time_scale: cfg.time_scale.max(0.0),
            accounts: crate::accounts::Accounts::new(&cfg.bmc.username, &cfg.bmc.password),
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
                last_reset: chrono::Utc::now(),
                boot_console: None,
            }),
            events: crate::lazy_channel::LazyBroadcast::new(16),
            export_dir: cfg.export_dir,
            export_gen: AtomicU64::new(1),
            export_written: Mutex::new(0),
            actions: Arc::default(),
            media: crate::media::MediaTray::default(),
            bios: crate::bios::Bios::default(),
            firmware: crate::firmware::Firmware::default(),
            weak: weak.clone(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HostState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The BMC's virtual media tray.
    pub fn media(&self) -> &crate::media::MediaTray {
        &self.media
    }

    /// The host's BIOS settings.
    pub fn bios(&self) -> &crate::bios::Bios {
        &self.bios
    }

    /// The BMC's firmware components and update tasks.
    pub fn firmware(&self) -> &crate::firmware::Firmware {
        &self.firmware
    }

    /// What the firmware state moves on by: the time, boots and BMC resets so far.
    pub fn firmware_clock(&self) -> crate::firmware::Clock {
        crate::firmware::Clock {
            now: std::time::Instant::now(),
            boots: self.boots(),
            bmc_resets: self.faults.reset_generation.load(Ordering::Relaxed),
        }
    }

    /// The components the BMC starts with (its identity's BMC and BIOS versions, a NIC, the GPU baseboard).
    pub fn firmware_defaults(&self) -> Vec<crate::firmware::Item> {
        let id = &self.bmc_config.identity;
        let item = |id: &str, name: &str, v: &str| crate::firmware::Item {
            id: id.into(),
            name: name.into(),
            version: v.into(),
        };
        vec![
            item("BMC", "BMC firmware", &id.bmc_firmware),
            item("BIOS", "BIOS firmware", &id.bios_version),
            item("NIC_0", "Mellanox ConnectX-7 firmware", "28.39.1002"),
            item("HGX_FW_0", "HGX GPU baseboard firmware", "1.3.0"),
        ]
    }

    /// The firmware components now.
    pub fn firmware_items(&self) -> Vec<crate::firmware::Item> {
        self.firmware.items(|| self.firmware_defaults(), self.firmware_clock())
    }

    /// A component's version now.
    pub fn firmware_version(&self, id: &str) -> Option<String> {
        self.firmware_items().into_iter().find(|i| i.id == id).map(|i| i.version)
    }

    pub fn kind(&self) -> HostKind {
        self.kind
    }
    pub fn bmc_config(&self) -> &BmcConfig {
        &self.bmc_config
    }
    /// The BMC's accounts (the configured user starts in slot 2).
    pub fn accounts(&self) -> &crate::accounts::Accounts {
        &self.accounts
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

    /// Redfish `LastResetTime`: the last reset, restart, cycle or power-on that a command caused.
    pub fn last_reset(&self) -> chrono::DateTime<chrono::Utc> {
        self.lock().last_reset
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
        let mut st = self.lock();
        let phase = st.phase;
        let mut v = readings(self.kind, phase, st.node.get(&self.name));
        for f in &st.faults {
            if let Fault::PsuFail { psu } = f {
                crate::sensors::fail_psu(&mut v, *psu);
            }
        }
        v
    }

    /// PSUs (numbered from 1) that have lost their input (`psu-fail`).
    pub fn failed_psus(&self) -> Vec<u8> {
        let st = self.lock();
        st.faults
            .iter()
            .filter_map(|f| if let Fault::PsuFail { psu } = f { Some(*psu) } else { None })
            .collect()
    }

    /// A copy of the in-band state (GPUs, rails, settings).
    pub fn node_state(&self) -> NodeState {
        self.lock().node.get(&self.name).clone()
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

    /// The OS answers (SSH, slurmctld, the agent): booted and not hung (`os-hang`).
    pub fn os_answering(&self) -> bool {
        Host::os_up(&self.lock())
    }

    fn os_up(st: &HostState) -> bool {
        st.phase == Phase::OsUp && !Host::has_fault(st, &crate::fault::Fault::OsHang)
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
        self.faults.boot_set_in_progress.store(false, Ordering::Relaxed);
        // The BMC's web server restarts with it.
        self.faults.redfish_down.store(false, Ordering::Relaxed);
        self.faults.reset_generation.fetch_add(1, Ordering::Relaxed);
        self.lock().faults.retain(|f| !matches!(f, Fault::SolStuck | Fault::RedfishDown));
        self.faults.changed.notify_waiters();
    }

    /// A BMC reset requested through a protocol, recorded in the action log: the BMC then restarts, silent
    /// on both protocols for [`config::BMC_RESET_DOWNTIME`] (or [`Host::set_bmc_reset_downtime`]).
    pub fn reset_bmc_by(&self, origin: &Origin) {
        self.actions.record(origin, ActionKind::BmcReset, false);
        self.reset_bmc();
        self.faults.start_restart();
    }

    /// How long a protocol-requested BMC reset keeps this BMC silent (tests shorten or lengthen it).
    pub fn set_bmc_reset_downtime(&self, d: std::time::Duration) {
        let ms = u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1);
        self.faults.reset_downtime_ms.store(ms, Ordering::Relaxed);
    }

    /// What this device was made to do (shared with a switch's SSH CLI).
    pub fn actions(&self) -> &Arc<ActionLog> {
        &self.actions
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
            let mut st = self.lock();
            (st.node.get(&self.name).clone(), Host::os_up(&st))
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
}
