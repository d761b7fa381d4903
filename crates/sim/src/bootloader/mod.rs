//! Bootloader consoles of simulated switches (ONIE/GRUB, U-Boot, Arista Aboot, plain GRUB).
//!
//! Why it exists: Lifeline's recovery path is "break into the bootloader over SOL and pick the rescue
//! entry", and the expect profiles that do it must be tested against something that behaves like the
//! real thing: real-looking text, real timing windows (scaled by the simulator's time scale), keys that
//! only count in the right window, and a `boot-loop` fault that panics the NOS forever until rescued.
//!
//! [`Machine`] is the pure state machine (virtual time in, bytes out); [`BootConsole`] runs one on tokio
//! in real time and is what a host's serial line (or a test) plugs into.

mod machine;
mod text;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use lifeline_types::Platform;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

pub use machine::{
    ABOOT_WINDOW, GRUB_TIMEOUT_S, KERNEL_LINE, LINE, Machine, MachineConfig, PANIC_REBOOT, Stage,
    UBOOT_BOOTDELAY_S,
};

/// Which bootloader a console shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flavor {
    /// x86 switch (SONiC): the NOS's GRUB with an "ONIE" entry chainloading ONIE's GRUB menu.
    OnieGrub,
    /// ARM/PowerPC switch (Cumulus): U-Boot with ONIE in flash (`run onie_rescue`).
    UBoot,
    /// Arista EOS: Aboot's Ctrl-C window.
    Aboot,
    /// A Linux server or switch with plain GRUB 2 ("Advanced options" -> "(recovery mode)").
    Grub,
}

impl Flavor {
    pub const ALL: [Flavor; 4] = [Flavor::OnieGrub, Flavor::UBoot, Flavor::Aboot, Flavor::Grub];

    /// The bootloader a switch platform ships with (`None`: not modelled, e.g. IOS ROMMON).
    pub fn for_platform(p: Platform) -> Option<Flavor> {
        match p {
            Platform::Sonic => Some(Flavor::OnieGrub),
            Platform::Cumulus => Some(Flavor::UBoot),
            Platform::Eos => Some(Flavor::Aboot),
            Platform::Ios | Platform::Nxos => None,
        }
    }
}

enum Cmd {
    Input(Vec<u8>),
    BootLoop(bool),
    Reset,
}

/// A bootloader console running in real time. Dropping it stops the machine.
#[derive(Debug)]
pub struct BootConsole {
    cmds: mpsc::Sender<Cmd>,
    stage: watch::Receiver<Stage>,
    boots: Arc<AtomicU32>,
    ignored: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BootConsole {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BootConsole {
    /// Power the machine on now. `time_scale` multiplies every delay (as `HostConfig::time_scale`;
    /// values below 1e-4 are raised to it so a boot loop never spins). `emit` receives console output.
    pub fn spawn(cfg: MachineConfig, time_scale: f64, emit: impl Fn(Bytes) + Send + 'static) -> BootConsole {
        let scale = if time_scale.is_finite() { time_scale.max(1e-4) } else { 1.0 };
        let (cmds, rx) = mpsc::channel(256);
        let machine = Machine::new(cfg);
        let (stage_tx, stage) = watch::channel(machine.stage());
        let boots = Arc::new(AtomicU32::new(machine.boots()));
        let ignored = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(run(machine, scale, rx, emit, stage_tx, boots.clone(), ignored.clone()));
        BootConsole { cmds, stage, boots, ignored, task }
    }

    /// Keys typed on the console. Dropped when 256 writes are queued (a UART overrun).
    pub fn input(&self, bytes: &[u8]) {
        let _ = self.cmds.try_send(Cmd::Input(bytes.to_vec()));
    }

    pub fn set_boot_loop(&self, on: bool) {
        let _ = self.cmds.try_send(Cmd::BootLoop(on));
    }

    /// Hard reset (power cycle): firmware again.
    pub fn reset(&self) {
        let _ = self.cmds.try_send(Cmd::Reset);
    }

    pub fn stage(&self) -> Stage {
        *self.stage.borrow()
    }

    /// Watch stage changes (e.g. the host model moves to `OsUp` on [`Stage::Os`]).
    pub fn stages(&self) -> watch::Receiver<Stage> {
        self.stage.clone()
    }

    pub fn boots(&self) -> u32 {
        self.boots.load(Ordering::Relaxed)
    }

    /// Keys that arrived while nothing read the console (a script typing at the wrong time).
    pub fn ignored_keys(&self) -> u64 {
        self.ignored.load(Ordering::Relaxed)
    }

    /// Wait until the console reaches `stage` (or `within` passes).
    pub async fn wait_for(&self, stage: Stage, within: Duration) -> bool {
        let mut rx = self.stage.clone();
        tokio::time::timeout(within, rx.wait_for(|s| *s == stage)).await.is_ok_and(|r| r.is_ok())
    }
}

async fn run(
    mut m: Machine,
    scale: f64,
    mut cmds: mpsc::Receiver<Cmd>,
    emit: impl Fn(Bytes) + Send + 'static,
    stage: watch::Sender<Stage>,
    boots: Arc<AtomicU32>,
    ignored: Arc<AtomicU64>,
) {
    let start = Instant::now();
    let virt = |at: Instant| at.duration_since(start).div_f64(scale);
    loop {
        let out = m.take_output();
        if !out.is_empty() {
            emit(Bytes::from(out));
        }
        stage.send_if_modified(|s| {
            let changed = *s != m.stage();
            *s = m.stage();
            changed
        });
        boots.store(m.boots(), Ordering::Relaxed);
        ignored.store(m.ignored_keys(), Ordering::Relaxed);
        let wake = m.next_deadline().map(|d| start + d.mul_f64(scale));
        tokio::select! {
            c = cmds.recv() => match c {
                Some(Cmd::Input(b)) => m.input(virt(Instant::now()), &b),
                Some(Cmd::BootLoop(on)) => m.set_boot_loop(on),
                Some(Cmd::Reset) => m.reset(virt(Instant::now())),
                None => return,
            },
            _ = sleep_until(wake) => m.advance(virt(Instant::now())),
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
