//! The power state machine: what each command does in each phase, and the background task that walks a
//! boot (`Off -> Post -> Bootloader -> Kernel -> OsUp`) or a shutdown, printing the console text of each
//! stage. A newer command bumps the generation, which stops the task at its next step.

use std::sync::Weak;

use bytes::Bytes;
use std::time::Duration;

use lifeline_types::Health;

use super::{Host, HostError, HostEvent, HostState, Phase, PowerCommand, PowerOutcome, Timings, Tty};
use crate::actions::{ActionKind, Origin};
use crate::console::{HostKind, boot_loop_lines, bootloader_lines, kernel_lines, login_banner, post_lines};
use crate::fault::Fault;
use crate::sel::{NewSel, sensor_type};

impl Host {
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
        if !noop
            && matches!(
                kind,
                ActionKind::PowerOn
                    | ActionKind::PowerCycle
                    | ActionKind::HardReset
                    | ActionKind::GracefulRestart
            )
        {
            st.last_reset = chrono::Utc::now();
        }
        self.actions.record(origin, kind, noop);
        Ok(outcome)
    }

    /// The power state machine: what `cmd` does in the current phase, and what to call it in the log.
    pub(super) fn execute(
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

    pub(super) fn cut_power(&self, st: &mut HostState) {
        self.stop_sequencer(st);
        self.console.emit("\r\n");
        self.set_phase(st, Phase::Off);
        self.log_sel(st, power_sel(true));
    }

    pub(super) fn panic(&self, st: &mut HostState, why: &str) {
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

    pub(super) fn stop_sequencer(&self, st: &mut HostState) {
        st.generation += 1;
        if let Some(a) = st.sequencer.take() {
            a.abort();
        }
        st.boot_console = None;
        st.tty = Tty::Closed;
        st.sysrq_armed = false;
    }

    pub(super) fn start(&self, st: &mut HostState, mut seq: Sequence) {
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

    pub(super) fn set_phase(&self, st: &mut HostState, phase: Phase) {
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

    pub(super) fn log_sel(&self, st: &mut HostState, e: NewSel) {
        let entry = st.sel.add(e);
        let _ = self.events.send(HostEvent::Sel(entry));
    }
}

pub(super) fn power_sel(off: bool) -> NewSel {
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

#[derive(Debug, Clone, Copy)]
pub(super) enum Sequence {
    /// POST through OS up. `cold`: power was just applied (logs a power-on SEL record).
    Boot { cold: bool },
    /// ACPI shutdown, then off (or a reboot).
    Shutdown { then_boot: bool },
    /// Power already cut: wait, then a cold boot.
    Cycle,
}

/// Prints `lines` spread over `total`, checking after each sleep that the command is still current.
/// Returns `None` when superseded (or the host is gone).
pub(super) async fn stage(
    weak: &Weak<Host>,
    generation: u64,
    lines: &[String],
    total: Duration,
) -> Option<()> {
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
pub(super) fn advance(
    weak: &Weak<Host>,
    generation: u64,
    f: impl FnOnce(&Host, &mut HostState),
) -> Option<()> {
    let h = weak.upgrade()?;
    let mut st = h.lock();
    if st.generation != generation {
        return None;
    }
    f(&h, &mut st);
    Some(())
}

pub(super) async fn run_sequence(weak: Weak<Host>, generation: u64, seq: Sequence) -> Option<()> {
    let (timings, kind, name, gpus, rails) = {
        let h = weak.upgrade()?;
        let mut st = h.lock();
        let node = st.node.get(&h.name);
        let rails: Vec<(String, String)> =
            node.rails.iter().map(|r| (r.spec.hca.clone(), r.spec.netdev.clone())).collect();
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
        (scaled, h.kind, h.name.clone(), node.gpus.len(), rails)
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
        // Booting once from a virtual CD with an image in it runs the fake installer, which ends with a
        // marker on the console (what a reinstall waits for), then boots the installed system.
        let cd = if target == "Cd" {
            Some(weak.upgrade()?.media().slot(crate::media::SlotKind::Cd))
        } else {
            None
        };
        if let Some((image, mount)) = cd.and_then(|s| s.image.map(|i| (i, s.mount))) {
            let lines = crate::media::installer_lines(&name, &image, mount.as_ref());
            stage(&weak, generation, &lines, crate::media::installer_time(timings.kernel)).await?;
        }
        if looping {
            stage(&weak, generation, &bootloader_lines(kind), timings.bootloader).await?;
            stage(&weak, generation, &boot_loop_lines(kind), timings.kernel).await?;
            advance(&weak, generation, |h, st| {
                let sel = match kind {
                    // What a BMC logs when the host panics (the OS's critical-stop sensor).
                    HostKind::Server => NewSel {
                        sensor_type: sensor_type::OS_STOP,
                        sensor_number: 0x71,
                        event_type: 0x6f,
                        deassertion: false,
                        event_data: [0x01, 0xff, 0xff],
                        severity: Health::Critical,
                        message: "OS Critical Stop: run-time critical stop (kernel panic)".into(),
                        message_id: "OpenBMC.0.1.OSCriticalStop",
                    },
                    HostKind::Switch(_) => NewSel {
                        sensor_type: sensor_type::SYSTEM_FIRMWARE_PROGRESS,
                        sensor_number: 0x74,
                        event_type: 0x6f,
                        deassertion: false,
                        event_data: [0x00, 0x06, 0xff],
                        severity: Health::Critical,
                        message: "System firmware error: boot failed, system reset".into(),
                        message_id: "OpenBMC.0.1.BIOSPOSTError",
                    },
                };
                h.log_sel(st, sel)
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
pub(super) async fn run_boot_console(
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
