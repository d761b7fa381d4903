//! The bootloader state machine, pure: virtual time goes in (`advance`, `input`), console bytes come out
//! (`take_output`). No tokio, no clock, so every timing window is testable exactly, and the async driver
//! ([`super::BootConsole`]) only maps real time (scaled) onto it.
//!
//! Keys only count in the state that reads them: firmware, kernel and panic output ignore input (nothing
//! reads the UART then), a GRUB menu stops its countdown on the first key, U-Boot stops autoboot on any
//! key, and Aboot only honours Ctrl-C while "Press Control-C now" is showing.

use std::collections::VecDeque;
use std::time::Duration;

use super::Flavor;
use super::text;

/// Configuration of one simulated bootloader console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineConfig {
    pub flavor: Flavor,
    pub hostname: String,
    /// The NOS panics at every boot (until rescued through the bootloader or the fault is cleared).
    pub boot_loop: bool,
}

/// Where the console is, as a test or the host model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Firmware,
    /// A GRUB menu is showing (main or submenu).
    BootMenu,
    /// U-Boot's "Hit any key to stop autoboot" countdown.
    Countdown,
    /// Aboot's Ctrl-C window.
    AbootWindow,
    /// U-Boot `=>` or the Aboot shell.
    LoaderShell,
    Booting,
    Panicked,
    /// ONIE waits for Enter ("Please press Enter to activate this console.").
    AwaitingActivation,
    /// ONIE in install (discovery) mode: a shell, but not the rescue the operator wanted.
    OnieInstall,
    /// ONIE rescue shell or the recovery-mode root shell.
    RescueShell,
    /// The NOS came up (login prompt).
    Os,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Menu {
    Main,
    /// ONIE's chainloaded menu.
    Onie,
    /// Ubuntu's "Advanced options".
    Advanced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Nos,
    OnieRescue { uboot: bool },
    OnieInstall,
    Recovery,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellKind {
    Onie { rescue: bool },
    Root,
    Uboot,
    Aboot,
    Login,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum St {
    Firmware,
    Menu { menu: Menu, sel: usize, left: Option<u32> },
    UbootCountdown { left: u32 },
    AbootWindow,
    Booting(Target),
    Panicked,
    Activate { rescue: bool },
    Maintenance,
    Shell { kind: ShellKind, line: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Out(String),
    Tick,
    Goto(St),
}

/// Unscaled timings (the driver multiplies them by the simulator's time scale).
pub const LINE: Duration = Duration::from_millis(300);
pub const KERNEL_LINE: Duration = Duration::from_millis(250);
pub const GRUB_TIMEOUT_S: u32 = 5;
pub const UBOOT_BOOTDELAY_S: u32 = 3;
pub const ABOOT_WINDOW: Duration = Duration::from_secs(3);
pub const PANIC_REBOOT: Duration = Duration::from_secs(5);
const TICK: Duration = Duration::from_secs(1);

/// One bootloader console.
#[derive(Debug)]
pub struct Machine {
    cfg: MachineConfig,
    st: St,
    now: Duration,
    queue: VecDeque<(Duration, Ev)>,
    out: Vec<u8>,
    boots: u32,
    ignored: u64,
}

impl Machine {
    /// Power on at virtual time 0.
    pub fn new(cfg: MachineConfig) -> Machine {
        let mut m = Machine {
            cfg,
            st: St::Firmware,
            now: Duration::ZERO,
            queue: VecDeque::new(),
            out: vec![],
            boots: 0,
            ignored: 0,
        };
        m.enter(St::Firmware);
        m
    }

    pub fn flavor(&self) -> Flavor {
        self.cfg.flavor
    }

    /// Times the machine went through firmware (1 after power on, +1 per reboot).
    pub fn boots(&self) -> u32 {
        self.boots
    }

    /// Keys that arrived while nothing read the console.
    pub fn ignored_keys(&self) -> u64 {
        self.ignored
    }

    pub fn set_boot_loop(&mut self, on: bool) {
        self.cfg.boot_loop = on;
    }

    pub fn stage(&self) -> Stage {
        match &self.st {
            St::Firmware => Stage::Firmware,
            St::Menu { .. } => Stage::BootMenu,
            St::UbootCountdown { .. } => Stage::Countdown,
            St::AbootWindow => Stage::AbootWindow,
            St::Booting(_) => Stage::Booting,
            St::Panicked => Stage::Panicked,
            St::Activate { .. } | St::Maintenance => Stage::AwaitingActivation,
            St::Shell { kind, .. } => match kind {
                ShellKind::Onie { rescue: true } | ShellKind::Root => Stage::RescueShell,
                ShellKind::Onie { rescue: false } => Stage::OnieInstall,
                ShellKind::Uboot | ShellKind::Aboot => Stage::LoaderShell,
                ShellKind::Login => Stage::Os,
            },
        }
    }

    /// When the next timed event is due (`None`: the machine waits for input only).
    pub fn next_deadline(&self) -> Option<Duration> {
        self.queue.front().map(|(t, _)| *t)
    }

    /// Everything printed since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Run every timed event due at or before `now`.
    pub fn advance(&mut self, now: Duration) {
        while let Some((t, _)) = self.queue.front() {
            if *t > now {
                break;
            }
            let Some((t, ev)) = self.queue.pop_front() else { break };
            self.now = t;
            match ev {
                Ev::Out(s) => self.out.extend_from_slice(s.as_bytes()),
                Ev::Tick => self.tick(),
                Ev::Goto(st) => self.enter(st),
            }
        }
        self.now = self.now.max(now);
    }

    /// Power cycle: back to firmware now.
    pub fn reset(&mut self, now: Duration) {
        self.advance(now);
        self.out.extend_from_slice(b"\r\n");
        self.enter(St::Firmware);
    }

    /// Keys from the console at virtual time `now` (timed events up to `now` run first).
    pub fn input(&mut self, now: Duration, bytes: &[u8]) {
        self.advance(now);
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // Arrow keys arrive as ESC [ A / ESC O A; a lone ESC is the Escape key.
            let key = if b == 0x1b {
                match (bytes.get(i + 1), bytes.get(i + 2)) {
                    (Some(b'[' | b'O'), Some(k)) => {
                        i += 3;
                        Key::Csi(*k)
                    }
                    _ => {
                        i += 1;
                        Key::Esc
                    }
                }
            } else {
                i += 1;
                Key::Byte(b)
            };
            self.key(key);
        }
    }

    fn schedule(&mut self, after: Duration, ev: Ev) {
        let at = self.queue.back().map(|(t, _)| *t).unwrap_or(self.now).max(self.now) + after;
        self.queue.push_back((at, ev));
    }

    fn lines(&mut self, lines: Vec<String>, every: Duration) {
        for l in lines {
            self.schedule(every, Ev::Out(format!("{l}\r\n")));
        }
    }

    fn print(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn enter(&mut self, st: St) {
        self.queue.clear();
        self.st = st.clone();
        let flavor = self.cfg.flavor;
        match st {
            St::Firmware => {
                self.boots += 1;
                self.lines(text::firmware_lines(flavor), LINE);
                let next = match flavor {
                    Flavor::OnieGrub | Flavor::Grub => {
                        St::Menu { menu: Menu::Main, sel: 0, left: Some(GRUB_TIMEOUT_S) }
                    }
                    Flavor::UBoot => St::UbootCountdown { left: UBOOT_BOOTDELAY_S },
                    Flavor::Aboot => St::AbootWindow,
                };
                self.schedule(LINE, Ev::Goto(next));
            }
            St::Menu { menu, sel, left } => {
                self.draw_menu(menu, sel, left);
                if left.is_some() {
                    self.schedule(TICK, Ev::Tick);
                }
            }
            St::UbootCountdown { left } => {
                self.print(&format!("Hit any key to stop autoboot: {left:2} "));
                self.schedule(TICK, Ev::Tick);
            }
            St::AbootWindow => {
                self.print(&format!("\r\n{}\r\n", text::ABOOT_WINDOW));
                self.schedule(ABOOT_WINDOW, Ev::Goto(St::Booting(Target::Nos)));
            }
            St::Booting(target) => match target {
                Target::Nos => {
                    self.lines(text::nos_kernel_lines(flavor), KERNEL_LINE);
                    if self.cfg.boot_loop {
                        self.schedule(KERNEL_LINE, Ev::Goto(St::Panicked));
                    } else {
                        let banner = format!(
                            "\r\nDebian GNU/Linux 11 {h} ttyS0\r\n\r\n{h} login: ",
                            h = self.cfg.hostname
                        );
                        self.schedule(KERNEL_LINE, Ev::Out(banner));
                        self.schedule(
                            Duration::ZERO,
                            Ev::Goto(St::Shell { kind: ShellKind::Login, line: String::new() }),
                        );
                    }
                }
                Target::OnieRescue { uboot } => {
                    self.lines(text::onie_boot_lines(true, uboot), KERNEL_LINE);
                    self.schedule(KERNEL_LINE, Ev::Goto(St::Activate { rescue: true }));
                }
                Target::OnieInstall => {
                    self.lines(text::onie_boot_lines(false, false), KERNEL_LINE);
                    self.schedule(KERNEL_LINE, Ev::Goto(St::Activate { rescue: false }));
                }
                Target::Recovery => {
                    self.lines(text::recovery_lines(), KERNEL_LINE);
                    self.schedule(KERNEL_LINE, Ev::Goto(St::Maintenance));
                }
            },
            St::Panicked => {
                self.lines(text::panic_lines(), KERNEL_LINE);
                self.schedule(PANIC_REBOOT, Ev::Goto(St::Firmware));
            }
            St::Activate { .. } => self.print(text::ONIE_ACTIVATE),
            St::Maintenance => self.print(&format!("\r\n{}", text::MAINTENANCE)),
            St::Shell { .. } => {}
        }
    }

    fn draw_menu(&mut self, menu: Menu, sel: usize, left: Option<u32>) {
        let flavor = self.cfg.flavor;
        let entries = self.entries(menu);
        let screen = text::grub_screen(text::grub_title(flavor, menu == Menu::Onie), &entries, sel, left);
        self.print(&screen);
    }

    fn entries(&self, menu: Menu) -> Vec<String> {
        match menu {
            Menu::Main => text::main_entries(self.cfg.flavor),
            Menu::Onie => text::onie_entries(),
            Menu::Advanced => text::advanced_entries(),
        }
    }

    fn tick(&mut self) {
        match &mut self.st {
            St::Menu { menu, sel, left: Some(n) } => {
                *n = n.saturating_sub(1);
                let (menu, sel, n) = (*menu, *sel, *n);
                if n == 0 {
                    self.choose(menu, sel);
                } else {
                    self.print(&text::countdown_line(n));
                    self.schedule(TICK, Ev::Tick);
                }
            }
            St::UbootCountdown { left } => {
                *left = left.saturating_sub(1);
                let n = *left;
                self.print(&format!("\x08\x08\x08{n:2} "));
                if n == 0 {
                    self.print("\r\n");
                    self.enter(St::Booting(Target::Nos));
                } else {
                    self.schedule(TICK, Ev::Tick);
                }
            }
            _ => {}
        }
    }

    /// Boot (or open) the menu entry `sel` of `menu`.
    fn choose(&mut self, menu: Menu, sel: usize) {
        let entries = self.entries(menu);
        let Some(entry) = entries.get(sel).cloned() else { return };
        self.print("\x1b[2J\x1b[H");
        let next = match (menu, entry.as_str()) {
            (Menu::Main, "ONIE") => St::Menu { menu: Menu::Onie, sel: 0, left: Some(GRUB_TIMEOUT_S) },
            (Menu::Main, "Advanced options for Ubuntu") => {
                St::Menu { menu: Menu::Advanced, sel: 0, left: None }
            }
            (Menu::Main, "UEFI Firmware Settings") => St::Firmware,
            (Menu::Onie, "ONIE: Rescue") => St::Booting(Target::OnieRescue { uboot: false }),
            (Menu::Onie, _) => St::Booting(Target::OnieInstall),
            (Menu::Advanced, e) if e.ends_with("(recovery mode)") => St::Booting(Target::Recovery),
            _ => St::Booting(Target::Nos),
        };
        self.enter(next);
    }

    fn key(&mut self, key: Key) {
        match self.st.clone() {
            St::Firmware | St::Booting(_) | St::Panicked => self.ignored += 1,
            St::Menu { menu, sel, left } => {
                let n = self.entries(menu).len();
                let mut sel2 = sel;
                match key {
                    Key::Csi(b'A') | Key::Byte(0x10) => sel2 = sel.saturating_sub(1),
                    Key::Csi(b'B') | Key::Byte(0x0e) => sel2 = (sel + 1).min(n.saturating_sub(1)),
                    Key::Byte(b'\r' | b'\n') => {
                        self.queue.clear();
                        self.choose(menu, sel);
                        return;
                    }
                    Key::Esc if menu != Menu::Main => {
                        let st = St::Menu { menu: Menu::Main, sel: 0, left: None };
                        self.enter(st);
                        return;
                    }
                    _ => {}
                }
                // Any key stops the countdown (GRUB's behaviour); the menu then waits forever.
                self.queue.clear();
                let _ = left;
                self.st = St::Menu { menu, sel: sel2, left: None };
                self.draw_menu(menu, sel2, None);
            }
            St::UbootCountdown { .. } => {
                self.queue.clear();
                self.print(&format!("\x08\x08\x08{:2} \r\n{}", 0, text::UBOOT_PROMPT));
                self.st = St::Shell { kind: ShellKind::Uboot, line: String::new() };
            }
            St::AbootWindow => {
                if key == Key::Byte(0x03) {
                    self.queue.clear();
                    self.print(&format!("^C\r\nWelcome to Aboot.\r\n{}", text::ABOOT_PROMPT));
                    self.st = St::Shell { kind: ShellKind::Aboot, line: String::new() };
                } else {
                    self.ignored += 1;
                }
            }
            St::Activate { rescue } => {
                if matches!(key, Key::Byte(b'\r' | b'\n')) {
                    self.print("\r\n\r\nONIE:/ # ");
                    self.st = St::Shell { kind: ShellKind::Onie { rescue }, line: String::new() };
                }
            }
            St::Maintenance => match key {
                Key::Byte(b'\r' | b'\n') => {
                    self.print(&format!("\r\nroot@{}:~# ", self.cfg.hostname));
                    self.st = St::Shell { kind: ShellKind::Root, line: String::new() };
                }
                Key::Byte(0x04) => {
                    self.print("\r\n");
                    self.enter(St::Booting(Target::Nos));
                }
                _ => {}
            },
            St::Shell { kind, mut line } => match key {
                Key::Byte(b'\r' | b'\n') => {
                    self.print("\r\n");
                    self.st = St::Shell { kind, line: String::new() };
                    self.command(kind, line.trim());
                }
                Key::Byte(0x03) => {
                    self.print("^C\r\n");
                    self.prompt(kind);
                    self.st = St::Shell { kind, line: String::new() };
                }
                Key::Byte(0x7f | 0x08) => {
                    if line.pop().is_some() {
                        self.print("\x08 \x08");
                    }
                    self.st = St::Shell { kind, line };
                }
                Key::Byte(b @ 0x20..=0x7e) => {
                    line.push(char::from(b));
                    self.out.push(b);
                    self.st = St::Shell { kind, line };
                }
                _ => {}
            },
        }
    }

    fn prompt(&mut self, kind: ShellKind) {
        let p = match kind {
            ShellKind::Onie { .. } => text::ONIE_PROMPT.to_owned(),
            ShellKind::Root => format!("root@{}:~# ", self.cfg.hostname),
            ShellKind::Uboot => text::UBOOT_PROMPT.to_owned(),
            ShellKind::Aboot => text::ABOOT_PROMPT.to_owned(),
            ShellKind::Login => format!("{} login: ", self.cfg.hostname),
        };
        self.print(&p);
    }

    fn command(&mut self, kind: ShellKind, line: &str) {
        let word = line.split_whitespace().next().unwrap_or("");
        match (kind, word) {
            (_, "") => {}
            (ShellKind::Uboot, "run") => match line.split_whitespace().nth(1) {
                Some("onie_rescue") => {
                    self.print("Loading Open Network Install Environment ...\r\n");
                    return self.enter(St::Booting(Target::OnieRescue { uboot: true }));
                }
                Some("onie_bootcmd") => return self.enter(St::Booting(Target::OnieInstall)),
                Some("bootcmd" | "nos_bootcmd") => return self.enter(St::Booting(Target::Nos)),
                Some(v) => self.print(&format!("## Error: \"{v}\" not defined\r\n")),
                None => self.print("run - run commands in an environment variable\r\n"),
            },
            (ShellKind::Uboot, "boot") => return self.enter(St::Booting(Target::Nos)),
            (ShellKind::Uboot, "reset") => {
                self.print("resetting ...\r\n");
                return self.enter(St::Firmware);
            }
            (ShellKind::Uboot, "printenv") => self.print(text::UBOOT_ENV),
            (ShellKind::Uboot, "help" | "?") => self.print(text::UBOOT_HELP),
            (ShellKind::Uboot, w) => self.print(&format!("Unknown command '{w}' - try 'help'\r\n")),
            (ShellKind::Aboot, "boot" | "exit") => return self.enter(St::Booting(Target::Nos)),
            (ShellKind::Aboot, "reboot") => return self.enter(St::Firmware),
            (ShellKind::Aboot, "help") => self.print(text::ABOOT_HELP),
            (ShellKind::Aboot, w) => self.print(&format!("-sh: {w}: not found\r\n")),
            (ShellKind::Onie { .. } | ShellKind::Root, "reboot") => {
                self.print("The system is going down NOW!\r\nRequesting system reboot\r\n");
                return self.enter(St::Firmware);
            }
            (ShellKind::Onie { .. }, "onie-stop") => self.print("Stopping: discover... done.\r\n"),
            (ShellKind::Onie { .. }, "onie-sysinfo") => self.print("x86_64-accton_as9736_64d-r0\r\n"),
            (ShellKind::Onie { .. }, w) => self.print(&format!("-sh: {w}: not found\r\n")),
            (ShellKind::Root, "hostname") => self.print(&format!("{}\r\n", self.cfg.hostname)),
            (ShellKind::Root, w) => self.print(&format!("bash: {w}: command not found\r\n")),
            (ShellKind::Login, _) => self.print("Password: \r\nLogin incorrect\r\n"),
        }
        self.prompt(kind);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Byte(u8),
    Esc,
    Csi(u8),
}
