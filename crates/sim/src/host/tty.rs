//! The serial console's line discipline once the OS is up: login prompt, password, a tiny shell that
//! recovery scripts can look around in and `reboot` from, and SysRq after a break.

use super::{Host, Phase, PowerCommand};
use crate::console::HostKind;
use crate::node_state::NodeState;

#[derive(Debug)]
pub(super) enum Tty {
    /// Nothing reads the line (firmware, kernel, halted).
    Closed,
    Login(String),
    Password {
        user: String,
        typed: String,
    },
    Shell(String),
}

impl Host {
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
            // A hung OS echoes nothing and runs nothing; only a SysRq (break, then a key) reaches the kernel.
            if Host::has_fault(&st, &crate::fault::Fault::OsHang) && !st.sysrq_armed {
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
                            let (reply, cmd, logout) =
                                shell_command(kind, &name, st.node.get(&name), line.trim());
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

pub(super) fn shell_prompt(kind: HostKind, user: &str, name: &str) -> String {
    let user = if user.is_empty() { "root" } else { user };
    match kind {
        HostKind::Server => format!("{user}@{name}:~# "),
        HostKind::Switch(_) => format!("{user}@{name}:~$ "),
    }
}

/// A tiny shell: enough for recovery scripts to look around and reboot. Returns (output, power, logout).
pub(super) fn shell_command(
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
