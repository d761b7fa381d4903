//! Cumulus Linux (NVUE) driver: `nv config show -o commands`; restore with `nv config replace` of a
//! YAML-free command file applied by `nv config apply`.
//!
//! Why the `commands` output: it is the one NVUE form an operator can read in a diff and replay
//! line by line (`nv set …`), and it has no timestamps.

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;

use super::{Driver, Incomplete, Step, cli_error};

static PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\n)[\w.\-]+@[\w.\-]+(?::[\w.\-]+)?:[^\n]{0,60}[$#] ?\z").expect("prompt")
});

#[derive(Debug, Default)]
pub struct Cumulus;

impl Cumulus {
    pub fn new() -> Self {
        Cumulus
    }
}

pub const RESTORE_FILE: &str = "/tmp/lifeline-restore.nv";

impl Driver for Cumulus {
    fn platform(&self) -> Platform {
        Platform::Cumulus
    }
    fn prompt(&self) -> &Regex {
        &PROMPT
    }
    fn fetch_command(&self) -> &str {
        "nv config show -o commands"
    }
    fn is_volatile(&self, line: &str) -> bool {
        let l = line.trim();
        l.starts_with("# Auto-generated") || l.starts_with("# Generated at") || l.starts_with("# Time:")
    }
    fn validate(&self, config: &str) -> Result<(), Incomplete> {
        if let Some(text) = cli_error(config) {
            return Err(Incomplete::CliError { text });
        }
        let mut commands = 0;
        for (i, line) in config.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if !(t.starts_with("nv set ") || t.starts_with("nv unset ")) {
                return Err(Incomplete::NotNvue { line: i + 1, text: t.to_owned() });
            }
            commands += 1;
        }
        if commands == 0 { Err(Incomplete::Empty) } else { Ok(()) }
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        vec![
            Step::Block {
                intro: format!("cat > {RESTORE_FILE} <<'LIFELINE_EOF'"),
                body: config.to_owned(),
                end: "LIFELINE_EOF".into(),
            },
            Step::cmd("nv config detach"),
            Step::cmd("nv unset"),
            Step::cmd(format!("sh {RESTORE_FILE}")),
            Step::cmd("nv config apply -y"),
            Step::cmd("nv config save"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let d = Cumulus::new();
        assert!(d.validate("nv set system hostname leaf1\nnv set interface swp1 link mtu 9000\n").is_ok());
        assert!(matches!(d.validate("nv set system hostname leaf1\nnv set interf"), Ok(())));
        assert!(matches!(d.validate("garbage\n"), Err(Incomplete::NotNvue { line: 1, .. })));
        assert!(matches!(d.validate("\n"), Err(Incomplete::Empty)));
        assert!(d.prompt().is_match("cumulus@leaf1:mgmt:~$ "));
    }
}
