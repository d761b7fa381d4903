//! The serial console of a simulated host (what SOL carries) and the text a real machine prints on it.
//!
//! Output is a broadcast of byte chunks, so any number of SOL sessions and tests can watch the same line
//! without the host waiting for them (a slow viewer lags and loses bytes, like a real UART overrun).
//! Input goes back into the host's model ([`crate::host::Host`]), which echoes and answers like a getty.
//!
//! The boot texts are modelled on real consoles: AMI/UEFI POST, GRUB, the Linux kernel log with mlx5 and
//! NVIDIA lines, and for switches ONIE/GRUB (SONiC, Cumulus), Aboot (EOS) and ROMMON (IOS), NX-OS loader.

use std::collections::VecDeque;
use std::sync::{Mutex, Weak};

use bytes::Bytes;
use lifeline_types::Platform;
use tokio::sync::broadcast;

use crate::host::Host;

/// Chunks buffered per viewer before it lags (bytes are dropped, as on an overrun UART).
const CHANNEL_CAPACITY: usize = 128;
/// Console history kept for late viewers and the control API.
const HISTORY_BYTES: usize = 8192;

/// A host's serial line.
pub struct Console {
    tx: crate::lazy_channel::LazyBroadcast<Bytes>,
    history: Mutex<VecDeque<u8>>,
    host: Weak<Host>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").field("viewers", &self.tx.receiver_count()).finish()
    }
}

impl Console {
    pub(crate) fn new(host: Weak<Host>) -> Console {
        Console {
            tx: crate::lazy_channel::LazyBroadcast::new(CHANNEL_CAPACITY),
            history: Mutex::new(VecDeque::new()),
            host,
        }
    }

    /// Everything the host prints from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Bytes> {
        self.tx.subscribe()
    }

    /// Keystrokes from a console user (SOL payload data from the remote console).
    pub fn write_input(&self, bytes: &[u8]) {
        if let Some(h) = self.host.upgrade() {
            h.console_input(bytes);
        }
    }

    /// A serial BREAK (SOL "generate break"): arms magic SysRq on a running Linux host.
    pub fn send_break(&self) {
        if let Some(h) = self.host.upgrade() {
            h.console_break();
        }
    }

    /// The last few KiB printed (lossy UTF-8), for tests and the control API.
    pub fn history(&self) -> String {
        let h = self.history.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = h.as_slices();
        let mut v = a.to_vec();
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }

    /// Host output. Never blocks: with no viewer the bytes only go to the history. Public so a benchmark
    /// can make every simulated host print at a chosen rate (the console bench's chatty kernels).
    pub fn emit(&self, bytes: impl Into<Bytes>) {
        let bytes: Bytes = bytes.into();
        {
            let mut h = self.history.lock().unwrap_or_else(|e| e.into_inner());
            h.extend(bytes.iter().copied());
            let excess = h.len().saturating_sub(HISTORY_BYTES);
            h.drain(..excess);
        }
        let _ = self.tx.send(bytes);
    }

    pub(crate) fn emit_line(&self, line: &str) {
        self.emit(format!("{line}\r\n"));
    }
}

/// What kind of machine prints on this console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    Server,
    Switch(Platform),
}

/// Lines of each boot stage. `kernel_time` prefixes give the kernel log its `[    1.234567]` look.
pub(crate) fn post_lines(kind: HostKind, name: &str, bios: &str, boot_target: &str) -> Vec<String> {
    match kind {
        HostKind::Server => {
            let mut v = vec![
                "\x1b[2J\x1b[H".to_owned(),
                format!("Version 2.22.1287 Copyright (C) 2024 AMI  BIOS Date: 03/14/2024 Ver: {bios}"),
                "CPU: Intel(R) Xeon(R) Platinum 8480+ @ 2.0GHz  x 2".into(),
                "Memory: 2097152 MB DDR5 4800 MT/s (32 DIMMs) ... OK".into(),
                "Initializing PCIe devices ...".into(),
                "  8 x NVIDIA GH100 [H100 SXM5 80GB]    8 x Mellanox ConnectX-7 (MT2910)".into(),
                "Press <DEL> or <F2> to enter setup, <F11> for boot menu, <F12> for network boot.".into(),
            ];
            match boot_target {
                "Pxe" => v.extend([
                    ">>Start PXE over IPv4.".into(),
                    "  Station IP address is 10.0.0.42".into(),
                    "  PXE-E18: Server response timeout. Falling back to next boot device.".into(),
                ]),
                "BiosSetup" => v.push("Entering Setup ... (no keyboard activity, continuing boot)".into()),
                _ => {}
            }
            v.push(format!("Booting {name} from disk (UEFI: ubuntu) ..."));
            v
        }
        HostKind::Switch(Platform::Sonic) | HostKind::Switch(Platform::Cumulus) => vec![
            "U-Boot 2013.01 (Jun 10 2023 - 11:21:43)".into(),
            "ONIE: Open Network Install Environment 2023.05".into(),
            "Platform: x86_64-accton_as9736_64d-r0".into(),
        ],
        HostKind::Switch(Platform::Eos) => vec![
            "Aboot 9.0.3-4core-36414480".into(),
            "Press Control-C now to enter Aboot shell".into(),
            "Booting flash:/EOS-4.31.2F.swi".into(),
        ],
        HostKind::Switch(Platform::Ios) => vec![
            "System Bootstrap, Version 17.6.1r[FC2], RELEASE SOFTWARE (P)".into(),
            "Copyright (c) 1994-2022 by cisco Systems, Inc.".into(),
            "boot: attempting to boot from [bootflash:packages.conf]".into(),
        ],
        HostKind::Switch(Platform::Nxos) => vec![
            "Cisco Nexus Operating System (NX-OS) Loader, Version 8.37".into(),
            "Booting nxos.10.3.4a.M.bin...".into(),
        ],
    }
}

pub(crate) fn bootloader_lines(kind: HostKind) -> Vec<String> {
    match kind {
        HostKind::Server => vec![
            "                             GNU GRUB  version 2.06".into(),
            "Booting `Ubuntu'".into(),
            "Loading Linux 5.15.0-105-generic ...".into(),
            "Loading initial ramdisk ...".into(),
        ],
        HostKind::Switch(Platform::Sonic) => vec![
            "                             GNU GRUB  version 2.02".into(),
            "Booting `SONiC-OS-202305.1'".into(),
            "Loading SONiC-OS OS kernel ...".into(),
        ],
        HostKind::Switch(Platform::Cumulus) => vec![
            "                             GNU GRUB  version 2.06".into(),
            "Booting `Cumulus Linux 5.9.1'".into(),
        ],
        HostKind::Switch(Platform::Eos) => vec!["Starting new kernel".into()],
        HostKind::Switch(Platform::Ios) => vec!["Rommon image validation passed.".into()],
        HostKind::Switch(Platform::Nxos) => vec!["Loading kickstart image...".into()],
    }
}

pub(crate) fn kernel_lines(
    kind: HostKind,
    name: &str,
    gpus: usize,
    rails: &[(String, String)],
) -> Vec<String> {
    let mut v = vec![
        "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc 11.4.0) #115-Ubuntu SMP"
            .to_owned(),
        "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/md0 ro console=tty0 console=ttyS1,115200n8 iommu=pt"
            .into(),
        "[    0.412031] ACPI: Core revision 20210730".into(),
        "[    1.103998] Serial: 8250/16550 driver, 32 ports, IRQ sharing enabled".into(),
    ];
    if kind == HostKind::Server {
        let mut t = 6.2;
        for (hca, netdev) in rails {
            t += 0.13;
            v.push(format!("[{t:>12.6}] mlx5_core: {hca}: Port 1 link up, {netdev} (ConnectX-7, 400Gbps)"));
        }
        for i in 0..gpus {
            t += 0.21;
            v.push(format!("[{t:>12.6}] nvidia {i:04x}:00:00.0: enabling device (0000 -> 0002)"));
        }
        v.push(format!("[{:>12.6}] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07", t + 0.5));
    }
    v.push(format!("[   12.418220] systemd[1]: Set hostname to <{name}>."));
    v.push("[   13.001544] systemd[1]: Reached target Multi-User System.".into());
    v
}

/// The banner and prompt once userspace is up.
pub(crate) fn login_banner(kind: HostKind, name: &str) -> String {
    match kind {
        HostKind::Server => format!("\r\nUbuntu 22.04.4 LTS {name} ttyS1\r\n\r\n{name} login: "),
        HostKind::Switch(Platform::Sonic) => {
            format!("\r\nDebian GNU/Linux 11 {name} ttyS0\r\n\r\n{name} login: ")
        }
        HostKind::Switch(Platform::Cumulus) => {
            format!("\r\nDebian GNU/Linux 12 {name} ttyS0\r\n\r\n{name} login: ")
        }
        HostKind::Switch(Platform::Eos) => format!("\r\n{name} login: "),
        HostKind::Switch(Platform::Ios) | HostKind::Switch(Platform::Nxos) => {
            format!("\r\n\r\nPress RETURN to get started!\r\n\r\n{name} login: ")
        }
    }
}

/// What a machine stuck in a boot loop prints before it resets itself.
pub(crate) fn boot_loop_lines(kind: HostKind) -> Vec<String> {
    match kind {
        // The kernel starts, then oopses while the GPU driver probes and panics (the shape of a
        // `panic_on_oops` host: BUG, #PF, Oops, RIP, "Kernel panic - not syncing: Fatal exception"), and
        // the panic timer reboots it into the same loop.
        HostKind::Server => vec![
            "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc 11.4.0) #115-Ubuntu SMP"
                .into(),
            "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/md0 ro console=tty0 console=ttyS1,115200n8 iommu=pt panic=10"
                .into(),
            "[    6.870114] nvidia: loading out-of-tree module taints kernel.".into(),
            "[    7.402871] BUG: unable to handle page fault for address: ffffb5e1c2a3f000".into(),
            "[    7.402877] #PF: supervisor read access in kernel mode".into(),
            "[    7.402879] #PF: error_code(0x0000) - not-present page".into(),
            "[    7.402883] Oops: 0000 [#1] SMP NOPTI".into(),
            "[    7.402887] CPU: 12 PID: 1873 Comm: nvidia-modprobe Tainted: P           OE     5.15.0-105-generic #115-Ubuntu"
                .into(),
            "[    7.402893] RIP: 0010:_nv041371rm+0x1a/0x40 [nvidia]".into(),
            "[    7.403511] Kernel panic - not syncing: Fatal exception".into(),
            "[    7.403902] Kernel Offset: 0x2c600000 from 0xffffffff81000000 (relocation range: 0xffffffff80000000-0xffffffffbfffffff)"
                .into(),
            "[    7.404117] ---[ end Kernel panic - not syncing: Fatal exception ]---".into(),
        ],
        HostKind::Switch(_) => vec![
            "[    3.318811] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)"
                .into(),
            "[    3.318902] ---[ end Kernel panic - not syncing: VFS: Unable to mount root fs ]---".into(),
            "Rebooting in 5 seconds..".into(),
        ],
    }
}
