//! Cumulus Linux driver. With NVUE: `nv config show -o commands`; restore with `nv config replace` of
//! a YAML-free command file applied by `nv config apply`. Without NVUE (ifupdown2 + FRR, managed as
//! files): the two files, each after a `# lifeline-file: PATH` marker line; restore writes each file
//! back and reloads `ifreload -a` and FRR.
//!
//! Why the `commands` output: it is the one NVUE form an operator can read in a diff and replay
//! line by line (`nv set …`), and it has no timestamps. Why files otherwise: they are the whole
//! configuration of such a switch, and both are text an operator can read in a diff.

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;

use super::{Driver, Incomplete, Step, cli_error};

static PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|\n)[\w.\-]+@[\w.\-]+(?::[\w.\-]+)?:[^\n]{0,60}[$#] ?\z").expect("prompt")
});

#[derive(Debug, Default)]
pub struct Cumulus {
    files: bool,
}

impl Cumulus {
    /// NVUE-managed.
    pub fn new() -> Self {
        Cumulus { files: false }
    }

    /// ifupdown2 + FRR files, without NVUE.
    pub fn files() -> Self {
        Cumulus { files: true }
    }
}

pub const RESTORE_FILE: &str = "/tmp/lifeline-restore.nv";

/// The files of a Cumulus switch without NVUE, in the order they are fetched and restored.
pub const FILES: &[&str] = &["/etc/network/interfaces", "/etc/frr/frr.conf"];

/// The line that starts each file's text in a files-mode config.
pub const FILE_MARKER: &str = "# lifeline-file: ";

/// The first word of the lines of ifupdown2 and FRR files (the check that a non-NVUE output is a
/// configuration and not an error or a banner).
const FILE_WORDS: &[&str] =
    &["auto", "iface", "source", "frr", "hostname", "router", "interface", "log", "vrf"];

impl Driver for Cumulus {
    fn platform(&self) -> Platform {
        Platform::Cumulus
    }
    fn prompt(&self) -> &Regex {
        &PROMPT
    }
    fn fetch_command(&self) -> &str {
        if self.files {
            "for f in /etc/network/interfaces /etc/frr/frr.conf; do echo \"# lifeline-file: $f\"; sudo cat \"$f\"; done"
        } else {
            "nv config show -o commands"
        }
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
        let mut first_other: Option<(usize, &str)> = None;
        let mut file_lines = 0;
        for (i, line) in config.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with('!') {
                continue;
            }
            if t.starts_with("nv set ") || t.starts_with("nv unset ") {
                commands += 1;
            } else {
                first_other.get_or_insert((i + 1, t));
                let word = t.split_whitespace().next().unwrap_or_default();
                file_lines += usize::from(FILE_WORDS.contains(&word));
            }
        }
        match first_other {
            None if commands == 0 => Err(Incomplete::Empty),
            None => Ok(()),
            // ifupdown2 + FRR files: no NVUE command among them, and lines those files start with.
            Some(_) if commands == 0 && file_lines > 0 => Ok(()),
            Some((line, text)) => Err(Incomplete::NotNvue { line, text: text.to_owned() }),
        }
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        if self.files {
            return files_restore_steps(config);
        }
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

/// Write each `# lifeline-file: PATH` part back to its file (only the paths of [`FILES`]: a path in
/// the text never chooses where a restore writes), then reload the interfaces and FRR.
fn files_restore_steps(config: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut parts: Vec<(&str, String)> = Vec::new();
    for line in config.split_inclusive('\n') {
        if let Some(path) = line.trim_end().strip_prefix(FILE_MARKER)
            && let Some(known) = FILES.iter().find(|f| **f == path)
        {
            parts.push((known, String::new()));
        } else if let Some((_, body)) = parts.last_mut() {
            body.push_str(line);
        }
    }
    for (path, body) in parts {
        steps.push(Step::Block {
            intro: format!("sudo tee {path} >/dev/null <<'LIFELINE_EOF'"),
            body,
            end: "LIFELINE_EOF".into(),
        });
    }
    steps.push(Step::cmd("sudo ifreload -a"));
    steps.push(Step::cmd("sudo systemctl reload frr"));
    steps
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
        // Without NVUE: ifupdown2 + FRR files are a configuration; NVUE mixed with other text is not.
        let files = "# lifeline-file: /etc/network/interfaces\nauto swp1\niface swp1\n    mtu 9216\n\
                     # lifeline-file: /etc/frr/frr.conf\nfrr version 8.4\nrouter bgp 65001\n neighbor swp51 interface remote-as external\n";
        assert!(d.validate(files).is_ok());
        assert!(matches!(
            d.validate("nv set system hostname x\nauto swp1\n"),
            Err(Incomplete::NotNvue { line: 2, .. })
        ));
    }

    #[test]
    fn files_restore_writes_only_the_known_files() {
        let cfg = "# lifeline-file: /etc/network/interfaces\nauto swp1\n# lifeline-file: /etc/shadow\nroot::0\n\
                   # lifeline-file: /etc/frr/frr.conf\nfrr version 8.4\n";
        let steps = Cumulus::files().restore_steps(cfg);
        let blocks: Vec<(String, String)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Block { intro, body, .. } => Some((intro.clone(), body.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(blocks.len(), 2);
        assert!(blocks[0].0.contains("/etc/network/interfaces") && blocks[0].1.contains("root::0"));
        assert!(blocks[1].0.contains("/etc/frr/frr.conf") && blocks[1].1 == "frr version 8.4\n");
        assert!(!steps.iter().any(|s| matches!(s, Step::Block { intro, .. } if intro.contains("shadow"))));
    }
}
