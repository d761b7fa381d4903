//! Arista EOS driver: `enable`, `terminal length 0`, `show running-config`; restore with
//! `copy terminal:` to flash and `configure replace`.
//!
//! Why `configure replace`: it computes and applies the difference to the running config atomically
//! (lines absent from the file are removed), which is exactly "make it equal to this version".

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;

use super::{Driver, Incomplete, Step, validate_ends_with_end};

static PROMPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\n)[A-Za-z0-9][\w.\-/:]*(?:\([\w.\-/]+\))?[>#] ?\z").expect("prompt"));

#[derive(Debug, Default)]
pub struct Eos;

impl Eos {
    pub fn new() -> Self {
        Eos
    }
}

pub const RESTORE_FILE: &str = "flash:lifeline-restore.cfg";

impl Driver for Eos {
    fn platform(&self) -> Platform {
        Platform::Eos
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
    fn is_volatile(&self, line: &str) -> bool {
        let l = line.trim();
        l.starts_with("! Command:")
            || l.starts_with("! Time:")
            || l.starts_with("! device:")
            || l.starts_with("! Startup-config last modified")
            || l.starts_with("! boot system")
    }
    fn validate(&self, config: &str) -> Result<(), Incomplete> {
        validate_ends_with_end(config)
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        vec![
            Step::Block {
                intro: format!("copy terminal: {RESTORE_FILE}"),
                body: config.to_owned(),
                end: "\x04".into(),
            },
            Step::cmd(format!("configure replace {RESTORE_FILE}")),
            Step::cmd("copy running-config startup-config"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::normalise;
    use crate::scrub::TagKey;

    #[test]
    fn header_is_volatile() {
        let d = Eos::new();
        let k = TagKey::random();
        let a = "! Command: show running-config\n! device: spine1 (DCS-7050, EOS-4.30)\n! Time: Mon Jan 1 10:00:00 2024\n!\nhostname spine1\nend\n";
        let b = a.replace("10:00:00", "11:11:11");
        assert_eq!(normalise(&d, a, &k), normalise(&d, &b, &k));
        assert!(d.validate(a).is_ok());
        assert!(d.prompt().is_match("spine1-eos(config-s-lifel)#"));
    }
}
