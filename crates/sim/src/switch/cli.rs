//! The switch CLIs: one line in, text out, per platform, over an exec request or a PTY shell.
//!
//! Why one line-oriented engine: the backup and restore paths of every platform need the same few
//! things — a prompt, privilege (`enable`), paging, show commands, a way to write a file (heredoc,
//! `copy terminal:`, Tcl `puts`) and a way to make a file the running config (`config reload`,
//! `configure replace`, `copy` + `reload`, `nv config apply`). Modes (pager, heredoc, confirmation
//! questions) are explicit states so partial input never confuses the engine.

use std::sync::Arc;

use lifeline_types::Platform;

use super::SwitchState;
use crate::actions::{ActionKind, Origin, Protocol};

/// Lines per page when paging is on (IOS default on a 24-line terminal).
const PAGE: usize = 23;

#[derive(Debug)]
enum Mode {
    Normal,
    /// Collecting heredoc lines until `end` (bash `cat > path <<'END'`).
    Heredoc {
        path: String,
        end: String,
        buf: String,
    },
    /// EOS `copy terminal: dest` until Ctrl-D.
    CopyTerminal {
        dest: String,
        buf: String,
    },
    /// IOS Tcl shell; `Some` while collecting a `puts … {` body.
    Tcl {
        collecting: Option<(String, String)>,
    },
    /// A yes/no or confirm question is pending.
    Confirm(Pending),
    /// Output waiting behind `--More--`.
    Paging {
        rest: Vec<String>,
    },
}

#[derive(Debug)]
enum Pending {
    CopyToStartup { src: String },
    ReloadSave,
    Reload,
}

/// What the transport should do after a line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// Text to send (`\n` line endings; the shell transport converts to `\r\n`).
    pub text: String,
    /// Whether to print the prompt after the text.
    pub prompt: bool,
    /// Close the session (exit, reload).
    pub close: bool,
    /// Exit status for exec requests.
    pub status: u32,
}

impl Reply {
    fn out(text: impl Into<String>) -> Reply {
        Reply { text: text.into(), prompt: true, close: false, status: 0 }
    }
    fn err(text: impl Into<String>) -> Reply {
        Reply { text: text.into(), prompt: true, close: false, status: 1 }
    }
    fn raw(text: impl Into<String>) -> Reply {
        Reply { text: text.into(), prompt: false, close: false, status: 0 }
    }
}

pub struct Cli {
    state: Arc<SwitchState>,
    /// Who is typing (recorded with the config changes this session executes).
    origin: Origin,
    privileged: bool,
    paging: bool,
    mode: Mode,
}

impl Cli {
    /// A session; exec sessions start privileged (a priv-15 user's exec on EOS/IOS) and never page.
    pub fn new(state: Arc<SwitchState>, exec: bool) -> Cli {
        let linux = matches!(state.platform, Platform::Sonic | Platform::Cumulus);
        Cli {
            paging: !exec && matches!(state.platform, Platform::Ios | Platform::Nxos),
            privileged: exec || linux,
            state,
            origin: Origin::new(Protocol::Ssh, None, None),
            mode: Mode::Normal,
        }
    }

    /// Names the SSH peer and login for the action log.
    pub fn with_origin(mut self, origin: Origin) -> Cli {
        self.origin = origin;
        self
    }

    fn record(&self, kind: ActionKind, noop: bool) {
        self.state.actions.record(&self.origin, kind, noop);
    }

    pub fn prompt(&self) -> String {
        let n = &self.state.name;
        match (&self.mode, self.state.platform) {
            (Mode::Heredoc { .. }, _) => "> ".into(),
            (Mode::CopyTerminal { .. }, _) | (Mode::Confirm(_), _) | (Mode::Paging { .. }, _) => {
                String::new()
            }
            (Mode::Tcl { collecting: Some(_) }, _) => String::new(),
            (Mode::Tcl { collecting: None }, _) => format!("{n}(tcl)#"),
            (_, Platform::Sonic) => format!("{}@{n}:~$ ", self.state.username),
            (_, Platform::Cumulus) => format!("{}@{n}:mgmt:~$ ", self.state.username),
            (_, _) => format!("{n}{}", if self.privileged { "#" } else { ">" }),
        }
    }

    /// Whether the engine is in a raw-input mode where Ctrl-D matters (EOS `copy terminal:`).
    pub fn wants_ctrl_d(&self) -> bool {
        matches!(self.mode, Mode::CopyTerminal { .. })
    }

    pub fn paging(&self) -> bool {
        matches!(self.mode, Mode::Paging { .. })
    }

    /// A key pressed at a `--More--`.
    pub fn page_key(&mut self, key: u8) -> Reply {
        let Mode::Paging { rest } = std::mem::replace(&mut self.mode, Mode::Normal) else {
            return Reply::raw("");
        };
        // Erase the marker like IOS does (carriage return, spaces, carriage return).
        let erase = "\r          \r";
        match key {
            b'q' | b'Q' => Reply { text: erase.into(), prompt: true, ..Default::default() },
            b'\r' | b'\n' => self.page(erase.to_owned(), rest, 1),
            _ => self.page(erase.to_owned(), rest, PAGE),
        }
    }

    fn page(&mut self, mut text: String, mut lines: Vec<String>, n: usize) -> Reply {
        if lines.len() <= n {
            for l in lines {
                text.push_str(&l);
                text.push('\n');
            }
            return Reply { text, prompt: true, ..Default::default() };
        }
        let rest = lines.split_off(n);
        for l in lines {
            text.push_str(&l);
            text.push('\n');
        }
        text.push_str(" --More-- ");
        self.mode = Mode::Paging { rest };
        Reply::raw(text)
    }

    fn paged(&mut self, output: String) -> Reply {
        if !self.paging {
            return Reply::out(output);
        }
        let lines: Vec<String> = output.lines().map(str::to_owned).collect();
        self.page(String::new(), lines, PAGE)
    }

    /// Ctrl-D ends EOS `copy terminal:`.
    pub fn ctrl_d(&mut self) -> Reply {
        if let Mode::CopyTerminal { dest, buf } = std::mem::replace(&mut self.mode, Mode::Normal) {
            let n = buf.len();
            self.state.write_file(&dest, buf);
            return Reply::out(format!("Copy completed successfully.\n{n} bytes copied\n"));
        }
        Reply::raw("")
    }

    /// Handle one input line.
    pub fn line(&mut self, line: &str) -> Reply {
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Heredoc { path, end, mut buf } => {
                if line.trim() == end {
                    self.state.write_file(&path, buf);
                    return Reply::out("");
                }
                buf.push_str(line);
                buf.push('\n');
                self.mode = Mode::Heredoc { path, end, buf };
                Reply::raw("")
            }
            Mode::CopyTerminal { dest, mut buf } => {
                buf.push_str(line);
                buf.push('\n');
                self.mode = Mode::CopyTerminal { dest, buf };
                Reply::raw("")
            }
            Mode::Tcl { collecting } => self.tcl(line, collecting),
            Mode::Confirm(p) => self.confirm(p, line),
            Mode::Paging { rest } => {
                self.mode = Mode::Paging { rest };
                Reply::raw("")
            }
            Mode::Normal => {
                let line = line.trim();
                if line.is_empty() {
                    return Reply::out("");
                }
                let words: Vec<&str> = line.split_whitespace().collect();
                let words = words.strip_prefix(&["sudo"]).unwrap_or(&words);
                if let Some(text) = self.state.lldp.answer(self.state.platform, words) {
                    return Reply::out(text);
                }
                match self.state.platform {
                    Platform::Ios | Platform::Nxos => self.ios(line),
                    Platform::Eos => self.eos(line),
                    Platform::Sonic => self.sonic(line),
                    Platform::Cumulus => self.cumulus(line),
                }
            }
        }
    }

    /// Records `kind` and answers `text`.
    fn recorded(&self, kind: ActionKind, text: String) -> Reply {
        self.record(kind, false);
        Reply::out(text)
    }

    fn invalid(&self) -> Reply {
        Reply::err("% Invalid input detected at '^' marker.\n")
    }

    fn common_network_os(&mut self, line: &str) -> Option<Reply> {
        let words: Vec<&str> = line.split_whitespace().collect();
        Some(match words.as_slice() {
            ["exit"] | ["quit"] | ["logout"] => Reply { close: true, ..Default::default() },
            ["enable"] | ["en"] => {
                self.privileged = true;
                Reply::out("")
            }
            ["disable"] => {
                self.privileged = false;
                Reply::out("")
            }
            ["terminal", "length", n] => {
                self.paging = *n != "0";
                Reply::out(if self.state.platform == Platform::Eos && *n == "0" {
                    "Pagination disabled.\n"
                } else {
                    ""
                })
            }
            ["show", "version"] => Reply::out(self.state.show_version()),
            ["show", "running-config"] | ["show", "run"] | ["sh", "run"] if self.privileged => {
                self.paged(self.state.show_running())
            }
            ["show", "startup-config"] | ["show", "start"] if self.privileged => {
                self.paged(self.state.show_startup())
            }
            ["copy", "running-config", "startup-config"] | ["write", "memory"] | ["wr"]
                if self.privileged =>
            {
                self.state.save();
                Reply::out(if self.state.platform == Platform::Eos {
                    "Copy completed successfully.\n".to_owned()
                } else {
                    "Building configuration...\n[OK]\n".to_owned()
                })
            }
            _ => return None,
        })
    }

    fn ios(&mut self, line: &str) -> Reply {
        if let Some(r) = self.common_network_os(line) {
            return r;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["show", "interfaces"] | ["show", "interface"] => {
                self.paged(super::ifcounters::show_interfaces(&self.state.if_counters()))
            }
            ["show", "interface", "priority-flow-control"] => {
                self.paged(super::counters::nxos_pfc(&self.state.pfc.counters(self.state.platform)))
            }
            ["tclsh"] if self.privileged => {
                self.mode = Mode::Tcl { collecting: None };
                Reply::out("")
            }
            ["copy", src, "startup-config"] if self.privileged && src.starts_with("flash:") => {
                if self.state.read_file(src).is_none() {
                    return Reply::err(format!("%Error opening {src} (No such file or directory)\n"));
                }
                self.mode = Mode::Confirm(Pending::CopyToStartup { src: (*src).to_owned() });
                Reply::raw("Destination filename [startup-config]? ")
            }
            ["reload"] if self.privileged => {
                if self.state.unsaved() {
                    self.mode = Mode::Confirm(Pending::ReloadSave);
                    Reply::raw("\nSystem configuration has been modified. Save? [yes/no]: ")
                } else {
                    self.mode = Mode::Confirm(Pending::Reload);
                    Reply::raw("Proceed with reload? [confirm]")
                }
            }
            _ => self.invalid(),
        }
    }

    fn confirm(&mut self, p: Pending, answer: &str) -> Reply {
        let a = answer.trim();
        match p {
            Pending::CopyToStartup { src } => {
                let body = self.state.read_file(&src).unwrap_or_default();
                let n = body.len();
                self.state.set_startup_from_text(&body);
                Reply::out(format!("[OK]\n{n} bytes copied in 0.120 secs\n"))
            }
            Pending::ReloadSave => {
                if a.starts_with('y') {
                    self.state.save();
                }
                self.mode = Mode::Confirm(Pending::Reload);
                Reply::raw("Proceed with reload? [confirm]")
            }
            Pending::Reload => {
                if a.is_empty() || a.starts_with('y') || a == "confirm" {
                    self.state.reload();
                    self.record(ActionKind::ConfigReload, false);
                    Reply {
                        text: "\n*** System going down for reload ***\n".into(),
                        close: true,
                        ..Default::default()
                    }
                } else {
                    Reply::out("")
                }
            }
        }
    }

    fn tcl(&mut self, line: &str, collecting: Option<(String, String)>) -> Reply {
        if let Some((path, mut buf)) = collecting {
            // The end of the Tcl double-quoted word the restore sends; `\c` inside it is `c`.
            if line.trim_end() == "\"" {
                let mut text = String::with_capacity(buf.len());
                let mut chars = buf.chars();
                while let Some(c) = chars.next() {
                    text.push(if c == '\\' { chars.next().unwrap_or(c) } else { c });
                }
                self.state.write_file(&path, text);
                self.mode = Mode::Tcl { collecting: None };
                return Reply::out("");
            }
            buf.push_str(line);
            buf.push('\n');
            self.mode = Mode::Tcl { collecting: Some((path, buf)) };
            return Reply::raw("");
        }
        let t = line.trim();
        if t == "tclquit" || t == "exit" {
            self.mode = Mode::Normal;
            return Reply::out("");
        }
        // puts -nonewline [open "flash:x" w+] "
        if let Some(rest) = t.strip_prefix("puts -nonewline [open \"")
            && let Some((path, tail)) = rest.split_once('"')
            && tail.trim_end().ends_with('"')
        {
            self.mode = Mode::Tcl { collecting: Some((path.to_owned(), String::new())) };
            return Reply::raw("");
        }
        self.mode = Mode::Tcl { collecting: None };
        Reply::err(format!("invalid command name \"{}\"\n", t.split_whitespace().next().unwrap_or("")))
    }

    fn eos(&mut self, line: &str) -> Reply {
        if let Some(r) = self.common_network_os(line) {
            return r;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["show", "interfaces", "counters", "errors"] => {
                Reply::out(super::ifcounters::eos_errors(&self.state.if_counters()))
            }
            ["show", "interfaces"] => {
                Reply::out(super::ifcounters::show_interfaces(&self.state.if_counters()))
            }
            ["show", "priority-flow-control", "counters"] => {
                Reply::out(super::counters::eos_pfc(&self.state.pfc.counters(self.state.platform)))
            }
            ["copy", "terminal:", dest] if self.privileged => {
                self.mode = Mode::CopyTerminal { dest: (*dest).to_owned(), buf: String::new() };
                Reply::raw("enter input, to end type Ctrl-D\n")
            }
            ["configure", "replace", src] if self.privileged => match self.state.read_file(src) {
                Some(body) => {
                    self.state.set_running_from_text(&body);
                    self.record(ActionKind::ConfigApply, false);
                    Reply::out("")
                }
                None => Reply::err(format!("% Error: could not open {src}\n")),
            },
            _ => self.invalid(),
        }
    }

    /// Shared bash-isms of the Linux-based NOSes: heredoc upload, `cat`, `sh FILE`.
    fn linux(&mut self, line: &str) -> Option<Reply> {
        if let Some(rest) = line.strip_prefix("cat > ") {
            // cat > PATH <<'END'
            let (path, end) = rest.split_once("<<")?;
            let end = end.trim().trim_matches('\'').trim_matches('"').to_owned();
            self.mode = Mode::Heredoc { path: path.trim().to_owned(), end, buf: String::new() };
            return Some(Reply::raw(""));
        }
        if let Some(path) = line.strip_prefix("cat ") {
            let path = path.trim();
            return Some(match self.state.read_file(path) {
                Some(t) => Reply::out(t),
                None => Reply::err(format!("cat: {path}: No such file or directory\n")),
            });
        }
        if let Some(path) = line.strip_prefix("sh ") {
            let Some(script) = self.state.read_file(path.trim()) else {
                return Some(Reply::err(format!("sh: 0: cannot open {}: No such file\n", path.trim())));
            };
            let mut out = Reply::out("");
            for l in script.lines() {
                let r = self.line(l);
                out.text.push_str(&r.text);
                out.status = out.status.max(r.status);
            }
            return Some(out);
        }
        if line == "exit" || line == "logout" {
            return Some(Reply { close: true, ..Default::default() });
        }
        None
    }

    fn sonic(&mut self, line: &str) -> Reply {
        if let Some(r) = self.linux(line) {
            return r;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let words = match words.as_slice() {
            ["sudo", rest @ ..] => rest.to_vec(),
            w => w.to_vec(),
        };
        match words.as_slice() {
            ["show", "runningconfiguration", "all"] => Reply::out(self.state.show_running()),
            ["show", "interfaces", "counters"] => {
                Reply::out(super::ifcounters::sonic_counters(&self.state.if_counters()))
            }
            ["show", "interfaces", "flap"] => {
                Reply::out(super::ifcounters::sonic_flap(&self.state.if_counters()))
            }
            ["show", "pfcwd", "stats"] => {
                Reply::out(super::ifcounters::sonic_pfcwd(&self.state.if_counters()))
            }
            ["show", "pfc", "counters"] => {
                Reply::out(super::counters::sonic_pfc(&self.state.pfc.counters(self.state.platform)))
            }
            ["show", "version"] => Reply::out(self.state.show_version()),
            ["config", "save", "-y"] => {
                self.state.save();
                Reply::out(
                    "Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json\n",
                )
            }
            ["config", "reload", "-y", rest @ ..] => {
                let src = rest.first().copied().unwrap_or("/etc/sonic/config_db.json");
                let Some(text) = self.state.read_file(src) else {
                    return Reply::err(format!("Error: {src} does not exist\n"));
                };
                match self.state.sonic_replace(&text) {
                    Ok(()) => self.recorded(ActionKind::ConfigReload, format!(
                        "Disabling container monitoring ...\nStopping SONiC target ...\n\
                         Running command: /usr/local/bin/sonic-cfggen -j {src} --write-to-db\n\
                         Restarting SONiC target ...\nEnabling container monitoring ...\nReloading Monit configuration ...\n"
                    )),
                    Err(e) => Reply::err(format!("Error: {src} is not valid JSON: {e}\n")),
                }
            }
            ["config", "load", "-y", src] => {
                let Some(text) = self.state.read_file(src) else {
                    return Reply::err(format!("Error: {src} does not exist\n"));
                };
                match self.state.sonic_merge(&text) {
                    Ok(()) => self.recorded(
                        ActionKind::ConfigApply,
                        format!("Running command: /usr/local/bin/sonic-cfggen -j {src} --write-to-db\n"),
                    ),
                    Err(e) => Reply::err(format!("Error: {src} is not valid JSON: {e}\n")),
                }
            }
            _ => Reply::err(format!("-bash: {}: command not found\n", words.first().unwrap_or(&""))),
        }
    }

    /// Cumulus without NVUE: the backup's `cat` loop, `sudo tee FILE <<'END'`, `ifreload -a`, an FRR
    /// reload (see [`super::files`]).
    fn cumulus_files(&mut self, line: &str) -> Option<Reply> {
        if let Some(paths) = super::files::cat_loop(line) {
            let mut out = Reply::out("");
            for p in paths {
                out.text.push_str(&format!("{}{p}\n", super::files::MARKER));
                match self.state.read_file(p) {
                    Some(t) => out.text.push_str(&t),
                    None => {
                        out.text.push_str(&format!("cat: {p}: No such file or directory\n"));
                        out.status = 1;
                    }
                }
            }
            return Some(out);
        }
        if let Some(rest) = line.strip_prefix("sudo tee ") {
            let (path, end) = rest.split_once("<<")?;
            let path = path.split_whitespace().next()?.to_owned();
            let end = end.trim().trim_matches('\'').trim_matches('"').to_owned();
            self.mode = Mode::Heredoc { path, end, buf: String::new() };
            return Some(Reply::raw(""));
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let words = words.strip_prefix(&["sudo"]).unwrap_or(&words);
        match words {
            ["ifreload", "-a"] => Some(self.recorded(ActionKind::ConfigApply, String::new())),
            ["systemctl", "reload", "frr"] => Some(Reply::out("")),
            _ => None,
        }
    }

    fn cumulus(&mut self, line: &str) -> Reply {
        if self.state.files_mode
            && let Some(r) = self.cumulus_files(line)
        {
            return r;
        }
        if let Some(r) = self.linux(line) {
            return r;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            // Managed by files, NVUE holds no configuration: `nv config show` prints nothing.
            ["nv", "config", "show", ..] if self.state.files_mode => Reply::out(""),
            ["nv", "config", "show", "-o", "commands"] => Reply::out(self.state.show_running()),
            ["nv", "show", "interface", port, "counters"] => {
                match super::ifcounters::cumulus_counters(&self.state.if_counters(), port) {
                    Some(t) => Reply::out(t),
                    None => Reply::err(format!("Error: interface {port} not found\n")),
                }
            }
            ["nv", "show", "interface", port, "counters", "qos", "pfc-stats"] => {
                match super::counters::cumulus_pfc(&self.state.pfc.counters(self.state.platform), port) {
                    Some(t) => Reply::out(t),
                    None => Reply::err(format!("Error: interface {port} not found\n")),
                }
            }
            ["nv", "set", ..] => {
                self.state.nv_set(line);
                Reply::out("")
            }
            ["nv", "unset", path @ ..] => {
                self.state.nv_unset(&path.join(" "));
                Reply::out("")
            }
            ["nv", "config", "apply", ..] => {
                let (rev, applied) = self.state.nv_apply();
                self.record(ActionKind::ConfigApply, !applied);
                Reply::out(format!("applied [rev_id: {rev}]\n"))
            }
            ["nv", "config", "detach"] => {
                self.state.nv_detach();
                Reply::out("")
            }
            ["nv", "config", "save"] => {
                self.state.save();
                Reply::out("saved\n")
            }
            ["show", "version"] | ["nv", "show", "system"] => Reply::out(self.state.show_version()),
            ["nv", ..] => Reply::err(format!("Error: unknown command `{line}`\n")),
            _ => Reply::err(format!("-bash: {}: command not found\n", words.first().unwrap_or(&""))),
        }
    }
}
