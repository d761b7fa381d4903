//! `scrub-check`: scrub a config file offline and say what was masked, by which rule or by the
//! fallback and why: for an operator adding a platform or a feature, before a backup ever runs.
//!
//! Why a platform guess: a file copied off a switch rarely says what it is; the guess is only a
//! default (`--platform` overrides it), and a wrong one shows as fallback maskings.

use lifeline_types::Platform;

use super::{Scrubbed, TagKey, scrub_report};

/// The platform a config text most likely comes from.
pub fn guess_platform(text: &str) -> Platform {
    let t = text.trim_start();
    let has = |p: &str| text.lines().any(|l| l.trim_start().starts_with(p));
    if t.starts_with('{') {
        Platform::Sonic
    } else if has("nv set ") || has("iface ") || has("frr version") {
        Platform::Cumulus
    } else if has("feature ") || has("!Command:") {
        Platform::Nxos
    } else if has("! device:") || has("daemon TerminAttr") || has("management api http-commands") {
        Platform::Eos
    } else {
        Platform::Ios
    }
}

/// One file's check: the platform used and what the scrubber masked.
#[derive(Debug, Clone)]
pub struct Checked {
    pub platform: Platform,
    pub guessed: bool,
    pub scrubbed: Scrubbed,
}

/// Scrub `text` as `platform` (or the guessed one) under `key`.
pub fn check(text: &str, platform: Option<Platform>, key: &TagKey) -> Checked {
    let (platform, guessed) = match platform {
        Some(p) => (p, false),
        None => (guess_platform(text), true),
    };
    Checked { platform, guessed, scrubbed: scrub_report(platform, text, key) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_and_reports_the_fallback() {
        assert_eq!(guess_platform("{\"PORT\": {}}"), Platform::Sonic);
        assert_eq!(guess_platform("nv set system hostname x\n"), Platform::Cumulus);
        assert_eq!(guess_platform("auto swp1\niface swp1\n"), Platform::Cumulus);
        assert_eq!(guess_platform("feature bgp\nhostname n\n"), Platform::Nxos);
        assert_eq!(guess_platform("! device: s1 (DCS-7050)\nhostname s1\n"), Platform::Eos);
        assert_eq!(guess_platform("hostname r1\n!\nend\n"), Platform::Ios);
        let c = check(
            "hostname r1\nfoo-agent shared-password 0 Zz9\nenable secret 0 Yy8\n",
            None,
            &TagKey::random(),
        );
        assert!(c.guessed && c.platform == Platform::Ios);
        assert_eq!(c.scrubbed.masked.len(), 2);
        assert_eq!(c.scrubbed.by_fallback().count(), 1);
    }
}
