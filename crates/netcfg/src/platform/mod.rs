//! Platform drivers: what differs between network operating systems, behind one trait.
//!
//! Why a trait of small pure methods: the SSH session code, the backup run and the restore run are
//! the same for every switch; a driver only says which commands to send, what the prompt looks like,
//! which lines change by themselves (timestamps, counters), how to tell a complete config from a
//! truncated one, and how to push a config back. Keeping drivers pure makes them testable without a
//! switch and lets a new platform be added in one file.

mod cumulus;
mod eos;
mod ios;
mod sonic;

use std::time::Duration;

use lifeline_types::{ConfigSource, Platform};
use regex::Regex;

pub use cumulus::Cumulus;
pub use eos::Eos;
pub use ios::Ios;
pub use sonic::{Sonic, SonicSource};

use crate::scrub::{self, TagKey};

/// One step of a restore, run in an interactive shell.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send `line`, wait for the prompt; each `(pattern, reply)` answers a confirmation question
    /// (`[confirm]`, `Destination filename [startup-config]?`) seen before the prompt.
    Command { line: String, answers: Vec<(Regex, String)> },
    /// Send `intro`, then every line of `body`, then `end` (e.g. a heredoc terminator or Ctrl-D), and
    /// wait for the prompt.
    Block { intro: String, body: String, end: String },
    /// The device reboots: the connection is expected to drop. Reconnect no earlier than `after`.
    Reboot { after: Duration },
}

impl Step {
    pub fn cmd(line: impl Into<String>) -> Step {
        Step::Command { line: line.into(), answers: Vec::new() }
    }
}

/// Why a fetched config is not accepted as a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incomplete {
    #[error("the device returned an empty config")]
    Empty,
    #[error("config does not end with `end` (last line: `{last_line}`): truncated")]
    NoEnd { last_line: String },
    #[error("config is not valid JSON at line {line}, column {column}: truncated or corrupted")]
    BadJson { line: usize, column: usize },
    #[error("config JSON is not an object with tables")]
    NotTables,
    #[error("line {line} is not an NVUE command: `{text}`")]
    NotNvue { line: usize, text: String },
    #[error("the device answered with an error instead of a config: `{text}`")]
    CliError { text: String },
}

/// What a network OS looks like from an SSH session.
pub trait Driver: Send + Sync + std::fmt::Debug {
    fn platform(&self) -> Platform;
    /// Matches a prompt at the very end of the cleaned shell output.
    fn prompt(&self) -> &Regex;
    /// The platform wants `enable` before it shows the running config.
    fn needs_enable(&self) -> bool {
        false
    }
    /// Commands sent once after login in a shell (paging off).
    fn shell_setup(&self) -> &[&str] {
        &[]
    }
    /// The command whose output is the config.
    fn fetch_command(&self) -> &str;
    /// Whether this command works over an SSH exec channel on a real device of this platform.
    fn exec_supported(&self) -> bool {
        true
    }
    /// Turn the command's output into the text that is compared, diffed and stored scrubbed (strip
    /// banners, canonicalise). Trailing whitespace is trimmed here, and only here: two fetches of
    /// the same config must compare equal whatever the terminal padded. The sealed raw copy and
    /// what a restore pushes ([`Driver::restorable`]) keep it.
    fn canonical(&self, output: &str) -> String {
        let mut s: String = output.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
        s.push('\n');
        s.trim_start_matches('\n').to_owned()
    }
    /// The config text a restore pushes, from the sealed raw copy: volatile header lines and
    /// leading blank lines dropped, every other byte (trailing whitespace included) as fetched.
    fn restorable(&self, raw: &str) -> String {
        let kept: String = raw.split_inclusive('\n').filter(|l| !self.is_volatile(l)).collect();
        kept.trim_start_matches(['\n', '\r']).to_owned()
    }
    /// A line that changes by itself and must not count as a config change.
    fn is_volatile(&self, line: &str) -> bool;
    /// Refuse an empty, truncated or error output.
    fn validate(&self, config: &str) -> Result<(), Incomplete>;
    /// The steps that make `config` the running (and saved) config.
    fn restore_steps(&self, config: &str) -> Vec<Step>;
}

/// The driver for a platform (SONiC backs up the running config by default).
pub fn driver_for(platform: Platform) -> Box<dyn Driver> {
    match platform {
        Platform::Sonic => Box::new(Sonic::new(SonicSource::Running)),
        Platform::Eos => Box::new(Eos::new()),
        Platform::Cumulus => Box::new(Cumulus::new()),
        Platform::Ios => Box::new(Ios::new(Platform::Ios)),
        Platform::Nxos => Box::new(Ios::new(Platform::Nxos)),
    }
}

/// The driver for a platform reading the configuration source the inventory chose (`config-source`):
/// SONiC's saved `config_db.json`, Cumulus's ifupdown2 + FRR files; otherwise the platform default.
pub fn driver_with_source(platform: Platform, source: ConfigSource) -> Box<dyn Driver> {
    match (platform, source) {
        (Platform::Sonic, ConfigSource::Saved) => Box::new(Sonic::new(SonicSource::Saved)),
        (Platform::Cumulus, ConfigSource::Files) => Box::new(Cumulus::files()),
        _ => driver_for(platform),
    }
}

/// The config as compared and stored: canonical, volatile lines removed, secrets masked (each with
/// its tag under `key`, the store's [`crate::BlobStore::tag_key`]).
pub fn normalise(driver: &dyn Driver, config: &str, key: &TagKey) -> String {
    let once = normalise_once(driver, config, key);
    // Scrubbing can turn text the platform could not read into text it can (a SONiC secret with a raw tab
    // is invalid JSON until it becomes `<removed>`); one more pass makes what is stored a fixed point, so
    // a version always compares equal to itself normalised again (found by the `text` fuzz target).
    let twice = normalise_once(driver, &once, key);
    if twice == once { once } else { twice }
}

fn normalise_once(driver: &dyn Driver, config: &str, key: &TagKey) -> String {
    let canonical = driver.canonical(config);
    let mut kept = String::with_capacity(canonical.len());
    for line in canonical.lines() {
        if !driver.is_volatile(line) {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    // Removing a header can leave blank lines at the top; they are not part of the config.
    scrub::scrub(driver.platform(), kept.trim_start_matches(['\n', ' ', '\t']), key)
}

/// First line of the output that looks like a CLI error (`% Invalid input`, `Error:`), if any.
pub(crate) fn cli_error(output: &str) -> Option<String> {
    output
        .lines()
        .map(str::trim)
        .find(|l| {
            l.starts_with("% Invalid")
                || l.starts_with("% Incomplete")
                || l.starts_with("% Ambiguous")
                || l.starts_with("% Unknown")
                || l.starts_with("Error:")
                || l.starts_with("-bash:")
                || l.contains("command not found")
        })
        .map(str::to_owned)
}

/// Shared check for line configs that end with `end` (IOS, EOS).
pub(crate) fn validate_ends_with_end(config: &str) -> Result<(), Incomplete> {
    if let Some(text) = cli_error(config) {
        return Err(Incomplete::CliError { text });
    }
    let last = config.lines().map(str::trim).rfind(|l| !l.is_empty());
    match last {
        None => Err(Incomplete::Empty),
        Some("end") => Ok(()),
        Some(l) => Err(Incomplete::NoEnd { last_line: l.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn drivers_never_panic(s in any::<String>()) {
            let key = TagKey::from_bytes([3; 32]);
            for p in Platform::ALL {
                let d = driver_for(*p);
                let _ = d.validate(&s);
                let n = normalise(d.as_ref(), &s, &key);
                // Normalising is idempotent: a stored version compares equal to itself.
                prop_assert_eq!(normalise(d.as_ref(), &n, &key), n.clone());
                let _ = d.prompt().is_match(&s);
            }
        }
    }
}
