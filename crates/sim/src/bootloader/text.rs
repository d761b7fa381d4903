//! What each bootloader prints, modelled on real serial transcripts (vendor manuals and ONIE's design
//! spec): GRUB 2's serial menu (`*` marks the highlighted entry, "The highlighted entry will be executed
//! automatically in Ns."), ONIE's chainloaded menu ("ONIE: Install OS", "ONIE: Rescue", ...) and its
//! "Please press Enter to activate this console.", U-Boot's "Hit any key to stop autoboot:" countdown
//! (backspaces redraw the number), and Arista Aboot's "Press Control-C now to enter Aboot shell".
//!
//! Kept apart from the state machine so the texts can be compared with transcripts at a glance.

use super::Flavor;

/// Terminal width the menus are drawn for (GRUB's serial terminal default).
pub(crate) const WIDTH: usize = 80;
/// Screen row (1-based) of the countdown line under a menu.
pub(crate) const COUNTDOWN_ROW: usize = 17;

/// Firmware / early boot lines printed before the bootloader takes the console.
pub(crate) fn firmware_lines(flavor: Flavor) -> Vec<String> {
    let v: &[&str] = match flavor {
        Flavor::OnieGrub => &[
            "\x1b[2J\x1b[H",
            "Version 2.17.1249. Copyright (C) 2019 American Megatrends, Inc.",
            "BIOS Date: 06/10/2023 11:21:43 Ver: 0ACHI024",
            "Press <DEL> or <F2> to enter setup.",
            "Booting from Hard Disk 0 ...",
        ],
        Flavor::Grub => &[
            "\x1b[2J\x1b[H",
            "Version 2.22.1287 Copyright (C) 2024 AMI",
            "Memory: 2097152 MB DDR5 4800 MT/s ... OK",
            "Press <DEL> or <F2> to enter setup, <F11> for boot menu, <F12> for network boot.",
            "Booting from disk (UEFI: ubuntu) ...",
        ],
        Flavor::UBoot => &[
            "",
            "U-Boot 2013.01-00016-g0b32ade (Jun 10 2019 - 11:21:43)",
            "",
            "CPU:   Marvell Armada 385 @ 1600 MHz",
            "DRAM:  2 GiB",
            "SF: Detected MX25L6405D with page size 256 Bytes, erase size 64 KiB, total 8 MiB",
            "In:    serial",
            "Out:   serial",
            "Err:   serial",
            "Net:   eth0, eth1",
        ],
        Flavor::Aboot => &["", "", "Aboot 9.0.3-4core-36414480", ""],
    };
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The GRUB title line for a menu.
pub(crate) fn grub_title(flavor: Flavor, onie_menu: bool) -> &'static str {
    match (flavor, onie_menu) {
        (_, true) => "GNU GRUB  version 2.02~beta2+e4a1fe391",
        (Flavor::OnieGrub, false) => "GNU GRUB  version 2.02",
        _ => "GNU GRUB  version 2.06",
    }
}

/// Draw a whole GRUB menu screen. `countdown` is the seconds left, `None` once a key stopped it.
pub(crate) fn grub_screen(title: &str, entries: &[String], sel: usize, countdown: Option<u32>) -> String {
    let mut s = String::from("\x1b[2J\x1b[H");
    let pad = (WIDTH - title.len()) / 2;
    s.push_str(&format!("\r\n{}{}\r\n\r\n", " ".repeat(pad), title));
    let inner = WIDTH - 4;
    s.push_str(&format!(" +{}+\r\n", "-".repeat(inner)));
    for row in 0..10 {
        let text = entries.get(row).map(String::as_str).unwrap_or("");
        let mark = if row == sel && row < entries.len() { '*' } else { ' ' };
        let cell = format!("{mark}{text:<w$}", w = inner - 1);
        if row == sel && row < entries.len() {
            s.push_str(&format!(" |\x1b[7m{cell}\x1b[0m|\r\n"));
        } else {
            s.push_str(&format!(" |{cell}|\r\n"));
        }
    }
    s.push_str(&format!(" +{}+\r\n\r\n", "-".repeat(inner)));
    s.push_str("      Use the ^ and v keys to select which entry is highlighted.\r\n");
    s.push_str("      Press enter to boot the selected OS, `e' to edit the commands\r\n");
    s.push_str("      before booting or `c' for a command-line.");
    if let Some(n) = countdown {
        s.push_str(&countdown_line(n));
    }
    s
}

/// Redraw only the countdown line (GRUB rewrites it in place every second).
pub(crate) fn countdown_line(n: u32) -> String {
    format!("\x1b[{COUNTDOWN_ROW};1H\x1b[K   The highlighted entry will be executed automatically in {n}s. ")
}

/// Main-menu entries of a GRUB flavor.
pub(crate) fn main_entries(flavor: Flavor) -> Vec<String> {
    match flavor {
        Flavor::OnieGrub => vec!["SONiC-OS-202305.1-0a1b2c3d".into(), "ONIE".into()],
        _ => vec!["Ubuntu".into(), "Advanced options for Ubuntu".into(), "UEFI Firmware Settings".into()],
    }
}

/// ONIE's own GRUB menu (chainloaded from the NOS's GRUB on x86).
pub(crate) fn onie_entries() -> Vec<String> {
    ["ONIE: Install OS", "ONIE: Rescue", "ONIE: Uninstall OS", "ONIE: Update ONIE", "ONIE: Embed ONIE"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// Ubuntu's "Advanced options" submenu.
pub(crate) fn advanced_entries() -> Vec<String> {
    [
        "Ubuntu, with Linux 5.15.0-105-generic",
        "Ubuntu, with Linux 5.15.0-105-generic (recovery mode)",
        "Ubuntu, with Linux 5.15.0-101-generic",
        "Ubuntu, with Linux 5.15.0-101-generic (recovery mode)",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Kernel log of the NOS booting normally (up to the point a boot loop panics).
pub(crate) fn nos_kernel_lines(flavor: Flavor) -> Vec<String> {
    let (head, kernel): (&[&str], &str) = match flavor {
        Flavor::OnieGrub => (
            &[
                "  Booting `SONiC-OS-202305.1-0a1b2c3d'",
                "",
                "Loading SONiC-OS OS kernel ...",
                "Loading SONiC-OS OS initial ramdisk ...",
            ],
            "5.10.0-18-2-amd64 (debian-kernel@lists.debian.org)",
        ),
        Flavor::Grub => (
            &[
                "  Booting `Ubuntu'",
                "",
                "Loading Linux 5.15.0-105-generic ...",
                "Loading initial ramdisk ...",
            ],
            "5.15.0-105-generic (buildd@lcy02-amd64-054)",
        ),
        Flavor::UBoot => (
            &[
                "## Booting kernel from Legacy Image at 02000000 ...",
                "   Image Name:   cumulus-linux-5.9.1-armel",
                "   Verifying Checksum ... OK",
                "   Loading Kernel Image ... OK",
                "",
                "Starting kernel ...",
                "",
            ],
            "5.10.0-cl-1-armmp (dev-support@cumulusnetworks.com)",
        ),
        Flavor::Aboot => (
            &["Booting flash:/EOS-4.31.2F.swi", "Starting new kernel"],
            "4.19.142.Ar-31953018.4312F (gcc 9.3.1)",
        ),
    };
    let mut v: Vec<String> = head.iter().map(|s| (*s).to_owned()).collect();
    v.push(format!("[    0.000000] Linux version {kernel} #1 SMP"));
    v.push("[    0.000000] Command line: console=ttyS0,9600n8 quiet".into());
    v.push("[    1.103998] Serial: 8250/16550 driver, 4 ports, IRQ sharing enabled".into());
    v.push("[    2.870031] Freeing unused kernel image memory: 2108K".into());
    v
}

/// What a boot-looping NOS prints before it resets itself.
pub(crate) fn panic_lines() -> Vec<String> {
    [
        "[    3.318811] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00007f00",
        "[    3.318902] ---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x00007f00 ]---",
        "Rebooting in 5 seconds..",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// ONIE booting in rescue or install (discovery) mode, up to the activation prompt.
pub(crate) fn onie_boot_lines(rescue: bool, uboot: bool) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if uboot {
        v.extend(
            [
                "## Booting kernel from Legacy Image at ec040000 ...",
                "   Image Name:   onie-armv7a-2016.05",
                "   Verifying Checksum ... OK",
                "Starting kernel ...",
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
    } else {
        let entry = if rescue { "ONIE: Rescue" } else { "ONIE: Install OS" };
        v.push(format!("  Booting `{entry}'"));
        v.push(String::new());
    }
    v.push(if rescue { "ONIE: Rescue Mode ...".into() } else { "ONIE: OS Install Mode ...".into() });
    v.push("Platform  : x86_64-accton_as9736_64d-r0".into());
    v.push("Version   : 2023.05".into());
    v.push("Build Date: 2023-05-30T10:12+00:00".into());
    v.push("Info: Mounting kernel filesystems... done.".into());
    v.push("Info: Mounting ONIE-BOOT on /mnt/onie-boot ...".into());
    if rescue {
        v.push("Info: Rescue mode detected.  Installer disabled.".into());
    } else {
        v.push("Info: Starting ONIE Service Discovery".into());
    }
    v
}

pub(crate) const ONIE_ACTIVATE: &str = "\r\nPlease press Enter to activate this console. ";
pub(crate) const ONIE_PROMPT: &str = "ONIE:/ # ";
pub(crate) const UBOOT_PROMPT: &str = "=> ";
pub(crate) const ABOOT_PROMPT: &str = "Aboot# ";
pub(crate) const ABOOT_WINDOW: &str = "Press Control-C now to enter Aboot shell";

/// The recovery kernel (Ubuntu "(recovery mode)") up to systemd's maintenance prompt.
pub(crate) fn recovery_lines() -> Vec<String> {
    [
        "  Booting `Ubuntu, with Linux 5.15.0-105-generic (recovery mode)'",
        "",
        "Loading Linux 5.15.0-105-generic ...",
        "Loading initial ramdisk ...",
        "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) #115-Ubuntu SMP",
        "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz-5.15.0-105-generic root=/dev/md0 ro recovery nomodeset",
        "You are in rescue mode. After logging in, type \"journalctl -xb\" to view",
        "system logs, \"systemctl reboot\" to reboot, \"systemctl default\" or \"exit\"",
        "to boot into default mode.",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

pub(crate) const MAINTENANCE: &str = "Press Enter for maintenance\r\n(or press Control-D to continue): ";

/// U-Boot `help` (abridged).
pub(crate) const UBOOT_HELP: &str = "?       - alias for 'help'\r\nboot    - boot default, i.e., run 'bootcmd'\r\n\
printenv- print environment variables\r\nreset   - Perform RESET of the CPU\r\nrun     - run commands in an environment variable\r\n\
setenv  - set environment variables\r\n";

/// U-Boot `printenv` (the ONIE variables that matter).
pub(crate) const UBOOT_ENV: &str = "bootcmd=run check_boot_reason; run nos_bootcmd; run onie_bootcmd\r\nbootdelay=3\r\n\
nos_bootcmd=run cl_boot\r\nonie_bootcmd=echo Loading Open Network Install Environment ...; bootm ec040000\r\n\
onie_rescue=setenv onie_boot_reason rescue && run onie_bootcmd\r\nonie_uninstall=setenv onie_boot_reason uninstall && run onie_bootcmd\r\n";

pub(crate) const ABOOT_HELP: &str = "Available commands:\r\n  boot       Boot an EOS image\r\n  fullrecover  Restore the flash to factory defaults\r\n\
  reboot     Reboot the switch\r\n  exit       Continue the normal boot\r\n";
