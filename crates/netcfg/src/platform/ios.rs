//! Cisco IOS / NX-OS-like driver: `terminal length 0`, `show running-config`, restore by copying the
//! config to startup-config and reloading.
//!
//! Why copy + reload rather than pasting into `configure terminal`: pasting merges, it never removes
//! a line that the version does not have; a reload from startup-config is the one mechanism every
//! IOS release has that yields exactly the saved config.

use std::sync::LazyLock;
use std::time::Duration;

use lifeline_types::Platform;
use regex::Regex;

use super::{Driver, Incomplete, Step, validate_ends_with_end};

static PROMPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\n)[A-Za-z0-9][\w.\-/:]*(?:\([\w.\-/]+\))?[>#] ?\z").expect("prompt"));

// The answers to `copy` and `reload`, compiled once: a Regex clone shares the compiled program, and
// compiling them on every restore plan was an eighth of the text fuzz target's time.
static DESTINATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Destination filename \[[^\]]*\]\? ?\z").expect("destination"));
static CONFIRM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[confirm\] ?\z").expect("confirm"));
static SAVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"System configuration has been modified. Save\? \[yes/no\]: ?\z").expect("save")
});

#[derive(Debug)]
pub struct Ios {
    platform: Platform,
}

impl Ios {
    pub fn new(platform: Platform) -> Self {
        Ios { platform }
    }
}

/// Where the restore file goes on the device's flash.
pub const RESTORE_FILE: &str = "flash:lifeline-restore.cfg";

/// `text` as the inside of a Tcl double-quoted word that reads back as exactly `text`: the characters
/// that substitute or end the word (`\ " $ [ ]`, and braces for good measure) get a backslash. (A braced
/// word cannot carry an unbalanced `}` at all: the restore used to drop every brace of the config.)
pub fn tcl_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '[' | ']' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Driver for Ios {
    fn platform(&self) -> Platform {
        self.platform
    }
    fn prompt(&self) -> &Regex {
        &PROMPT
    }
    fn needs_enable(&self) -> bool {
        true
    }
    fn shell_setup(&self) -> &[&str] {
        &["terminal length 0"]
    }
    fn fetch_command(&self) -> &str {
        "show running-config"
    }
    fn exec_supported(&self) -> bool {
        // IOS runs one exec command, but `show running-config` then needs privilege 15 on the line;
        // the shell path with `enable` works everywhere.
        false
    }
    fn canonical(&self, output: &str) -> String {
        let mut lines: Vec<&str> = output.lines().map(str::trim_end).collect();
        while lines.first().is_some_and(|l| l.is_empty()) {
            lines.remove(0);
        }
        let mut s = lines.join("\n");
        s.push('\n');
        s
    }
    fn is_volatile(&self, line: &str) -> bool {
        let l = line.trim();
        l.starts_with("Building configuration")
            || l.starts_with("Current configuration :")
            || l.starts_with("! Last configuration change")
            || l.starts_with("! NVRAM config last updated")
            || l.starts_with("! No configuration change since last restart")
            || l.starts_with("!Time:")
            || l.starts_with("!Command:")
            || l.starts_with("!Running configuration last done")
            || l.starts_with("ntp clock-period")
    }
    fn validate(&self, config: &str) -> Result<(), Incomplete> {
        if self.platform == Platform::Nxos {
            // NX-OS does not end with `end`; require its header and a non-trivial body instead.
            if let Some(text) = super::cli_error(config) {
                return Err(Incomplete::CliError { text });
            }
            return if config.lines().filter(|l| !l.trim().is_empty()).count() < 3 {
                Err(Incomplete::Empty)
            } else {
                Ok(())
            };
        }
        validate_ends_with_end(config)
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        // The config goes to flash through the device's Tcl shell (no file server needed), then
        // becomes startup-config, then the device reloads into it.
        vec![
            Step::cmd("tclsh"),
            Step::Block {
                intro: format!("puts -nonewline [open \"{RESTORE_FILE}\" w+] \""),
                body: tcl_quoted(config),
                end: "\"".into(),
            },
            Step::cmd("tclquit"),
            Step::Command {
                line: format!("copy {RESTORE_FILE} startup-config"),
                answers: vec![(DESTINATION.clone(), String::new()), (CONFIRM.clone(), String::new())],
            },
            Step::Command {
                line: "reload".into(),
                answers: vec![(SAVE.clone(), "no".into()), (CONFIRM.clone(), String::new())],
            },
            Step::Reboot { after: Duration::from_millis(200) },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::normalise;
    use crate::scrub::TagKey;

    /// The restore's Tcl block through the real Tcl interpreter (`tclsh`, as IOS runs it): the file written
    /// is the config, every brace, quote, dollar, bracket and backslash included.
    #[test]
    fn the_restore_file_written_by_tclsh_is_the_config_braces_included() {
        if std::process::Command::new("tclsh").arg("/dev/null").output().is_err() {
            assert!(std::env::var("OOB_PEERS_REQUIRED").as_deref() != Ok("1"), "tclsh required");
            eprintln!("SKIP: no tclsh");
            return;
        }
        let config = "hostname x\nbanner motd ^C {unbalanced} } \"q\" $HOME [exit 3] \\n back\\slash ^C\n\
                      event manager applet A\n action 1.0 cli command \"show ver | i {\"\n!\nend\n";
        let steps = Ios::new(Platform::Ios).restore_steps(config);
        let Some(Step::Block { intro, body, end }) = steps.iter().find(|s| matches!(s, Step::Block { .. }))
        else {
            panic!("no Tcl block in {steps:?}")
        };
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("tclsh")
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let script = format!("{intro}\n{body}{end}\n");
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), script.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let written = std::fs::read_to_string(dir.path().join(RESTORE_FILE)).unwrap();
        assert_eq!(written.strip_prefix('\n'), Some(config));
    }

    #[test]
    fn prompt_and_validation() {
        let d = Ios::new(Platform::Ios);
        for p in ["leaf1-ios>", "leaf1-ios#", "x\nleaf1(config-if)#", "sw1# "] {
            assert!(d.prompt().is_match(p), "{p}");
        }
        assert!(!d.prompt().is_match("interface Ethernet1\n description uplink"));
        assert!(d.validate("hostname x\n!\nend\n").is_ok());
        assert!(matches!(d.validate("hostname x\ninterface"), Err(Incomplete::NoEnd { .. })));
        assert!(matches!(d.validate(""), Err(Incomplete::Empty)));
        assert!(matches!(
            d.validate("% Invalid input detected at '^' marker.\n"),
            Err(Incomplete::CliError { .. })
        ));
    }

    #[test]
    fn volatile_lines_do_not_count() {
        let d = Ios::new(Platform::Ios);
        let k = TagKey::random();
        let a = "Building configuration...\n\nCurrent configuration : 100 bytes\n! Last configuration change at 10:00:01 UTC Mon\nhostname x\nend\n";
        let b = "Building configuration...\n\nCurrent configuration : 104 bytes\n! Last configuration change at 11:22:33 UTC Tue\nhostname x\nend\n";
        assert_eq!(normalise(&d, a, &k), normalise(&d, b, &k));
        assert_eq!(normalise(&d, a, &k), "hostname x\nend\n");
    }
}
