//! The server configuration (`lifeline.toml`): one type for every front end, so the CLI never rejects a
//! section the server adds. Unknown keys are rejected; problems point at FILE:LINE:COL.
//!
//! Where things are, in order: the front end's explicit value (`--inventory`, `--data-dir`,
//! `--database-url`, each also from its environment variable), then the config file (`--config`,
//! `$LIFELINE_CONFIG`, or `/etc/lifeline/lifeline.toml` when present), then a default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{EngineError, Result};

const SYSTEM_CONFIG: &str = "/etc/lifeline/lifeline.toml";

/// `lifeline.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerConfig {
    pub inventory: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    /// The key that seals raw switch configs; kept apart from the data directory so a copy of the data
    /// directory (a backup, a support bundle) does not carry the key to its own secrets.
    pub seal_key: Option<PathBuf>,
    /// Switch backup schedules, one per device group (run by `lifeline serve`; shown by `backup schedule`).
    #[serde(default)]
    pub backup_schedule: Vec<toml::Spanned<BackupSchedule>>,

    // --- `lifeline serve` only (issue 12); the CLI reads and ignores these ---
    /// `[server]`: listener, TLS, scheduler intervals.
    #[serde(default)]
    pub server: ServeSection,
    /// `[[webhook]]`: where fault notifications are posted (JSON, retried).
    #[serde(default)]
    pub webhook: Vec<Webhook>,
    /// Runbooks: where they live, the blast-radius guard, which may run `exec` steps.
    #[serde(default)]
    pub runbooks: RunbooksConfig,

    // --- the fault policy (issue 12): which runbook answers which fault, and how ---
    /// `[[fault-policy]]`: fault kind → runbook and mode; the first matching entry wins.
    #[serde(default)]
    pub fault_policy: Vec<FaultPolicy>,
}

/// `[server]` of `lifeline.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeSection {
    /// `ADDR:PORT` (default `127.0.0.1:7443`); `--listen` overrides.
    pub listen: Option<String>,
    /// The operator's certificate chain and key (PEM); without them a self-signed pair is made on first
    /// start and kept under the data directory.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// How often the whole fleet is swept (power, health, newest SEL entries), e.g. `60s`; `0s` disables.
    pub sweep_interval: Option<String>,
    /// Keep a session open and logged on every console of the inventory (default true).
    pub console_logging: Option<bool>,
    /// How long a browser session lasts (default `12h`).
    pub session_ttl: Option<String>,
    /// A switch whose scheduled backup failed this many times in a row gets a fault (default 3).
    pub backup_failures_fault: Option<u32>,
    /// How BMC events reach the server: `off` (default; the sweeps still read the event logs), `sse`
    /// (each Redfish BMC's event stream) or `push` (EventService subscriptions to `event-listen`).
    pub events: Option<String>,
    /// `ADDR:PORT` of the server's event receiver, for `events = "push"`.
    pub event_listen: Option<String>,
    /// The URL the BMCs post to when it is not `http://EVENT-LISTEN/events` (NAT, a relay).
    pub event_destination: Option<String>,
}

/// `[[webhook]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Webhook {
    pub url: String,
    /// Which notifications (`fault`); empty: all.
    #[serde(default)]
    pub events: Vec<String>,
}

// ---------------------------------------------------------------------------------------------------
// The fault policy. Kept apart from the rest of the file: the server decides with it (see
// `lifeline-server`'s `policy` module) and the runbook executor carries the decision out.

/// `[[fault-policy]]`: what the server does when a fault of `kind` opens.
///
/// ```toml
/// [[fault-policy]]
/// kind = "health-critical"        # a fault kind (`bmc-unreachable`, `sel-critical`, `agent-report`, …) or "*"
/// targets = ["gpu"]               # optional inventory selectors; empty: every device
/// runbook = "gpu-node-recover"    # the runbook to run for it (none: notify only)
/// mode = "approve"                # auto | approve | notify
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FaultPolicy {
    pub kind: String,
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub runbook: Option<String>,
    #[serde(default)]
    pub mode: PolicyMode,
}

/// How a policy's runbook is started.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyMode {
    /// Run the runbook at once (under the runbook blast-radius guard).
    Auto,
    /// Queue the run until an operator approves it.
    Approve,
    /// Only tell people (webhooks, the fault record); run nothing.
    #[default]
    Notify,
}

impl PolicyMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::Auto => "auto",
            PolicyMode::Approve => "approve",
            PolicyMode::Notify => "notify",
        }
    }
}

// ---------------------------------------------------------------------------------------------------

/// `[[backup-schedule]]`: when to back up which switches.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BackupSchedule {
    /// Inventory selectors: groups, racks, roles, names or globs.
    pub targets: Vec<String>,
    /// 5-field cron expression (minute hour day-of-month month day-of-week), UTC.
    pub cron: String,
    /// Spread the start over this long, per device, stable across restarts (e.g. `15m`).
    #[serde(default)]
    pub jitter: Option<String>,
    /// Attempts per run, with exponential backoff between them.
    #[serde(default = "default_retries")]
    pub retries: u32,
}

fn default_retries() -> u32 {
    3
}

// --- [runbooks] -------------------------------------------------------------------------------------------

/// `[runbooks]`: the runbook library and the limits every run is admitted under.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RunbooksConfig {
    /// The runbook library (default: `runbooks/` in the working directory).
    pub dir: Option<PathBuf>,
    /// Runbooks an administrator allows to run `exec` steps on the jump host.
    #[serde(default)]
    pub exec_allowed: Vec<String>,
    #[serde(default)]
    pub guard: GuardConfig,
}

/// `[runbooks.guard]`: the blast-radius guard. A rack-wide fault is not fixed by cycling every node in it,
/// so a new run is refused when too many runs are active in its rack, role or the fleet, or when too large
/// a share of its rack is already in recovery (active or escalated runs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GuardConfig {
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: u32,
    #[serde(default = "default_max_per_rack")]
    pub max_concurrent_per_rack: u32,
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent_per_role: u32,
    /// No new run in a rack where more than this share of the same role is in recovery.
    #[serde(default = "default_max_percent")]
    pub max_in_recovery_percent: u32,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            max_concurrent: default_max_concurrent(),
            max_concurrent_per_rack: default_max_per_rack(),
            max_concurrent_per_role: default_max_concurrent(),
            max_in_recovery_percent: default_max_percent(),
        }
    }
}

fn default_max_concurrent() -> u32 {
    8
}

fn default_max_per_rack() -> u32 {
    2
}

fn default_max_percent() -> u32 {
    25
}

// -----------------------------------------------------------------------------------------------------------

/// What the front end was told explicitly (flags and their environment variables).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub config: Option<PathBuf>,
    pub inventory: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
}

/// A loaded configuration file, with its text for messages that point at a line.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub path: Option<PathBuf>,
    pub text: String,
    pub config: ServerConfig,
}

impl LoadedConfig {
    /// 1-based line and column of a byte offset in the file.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(&self.text, offset)
    }

    pub fn display_path(&self) -> String {
        self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "(no config)".into())
    }
}

pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

/// Reads the config named by `settings` (or the system one when present); none is an empty config.
pub fn load(settings: &Settings) -> Result<LoadedConfig> {
    let path = match &settings.config {
        Some(p) => p.clone(),
        None if Path::new(SYSTEM_CONFIG).exists() => PathBuf::from(SYSTEM_CONFIG),
        None => return Ok(LoadedConfig::default()),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|source| EngineError::ConfigRead { path: path.clone(), source })?;
    let config = parse(&path, &text)?;
    Ok(LoadedConfig { path: Some(path), text, config })
}

/// Parses a config; relative paths in it are relative to the file.
pub fn parse(path: &Path, text: &str) -> Result<ServerConfig> {
    let cfg: ServerConfig = toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        EngineError::Config { path: path.to_path_buf(), line, col, message: e.message().to_owned() }
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let fix = |p: Option<PathBuf>| p.map(|p| if p.is_relative() { base.join(p) } else { p });
    Ok(ServerConfig {
        inventory: fix(cfg.inventory),
        data_dir: fix(cfg.data_dir),
        seal_key: fix(cfg.seal_key),
        server: ServeSection {
            tls_cert: fix(cfg.server.tls_cert.clone()),
            tls_key: fix(cfg.server.tls_key.clone()),
            ..cfg.server.clone()
        },
        runbooks: RunbooksConfig { dir: fix(cfg.runbooks.dir.clone()), ..cfg.runbooks.clone() },
        ..cfg
    })
}

/// Where everything is, resolved once.
#[derive(Debug, Clone)]
pub struct Paths {
    pub inventory: Option<PathBuf>,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub seal_key: PathBuf,
}

impl Paths {
    pub fn resolve(settings: &Settings, cfg: &LoadedConfig) -> Paths {
        let c = &cfg.config;
        let data_dir =
            settings.data_dir.clone().or_else(|| c.data_dir.clone()).unwrap_or_else(default_data_dir);
        let seal_key = std::env::var_os("LIFELINE_SEAL_KEY")
            .map(PathBuf::from)
            .or_else(|| c.seal_key.clone())
            .unwrap_or_else(default_seal_key);
        Paths {
            inventory: settings.inventory.clone().or_else(|| c.inventory.clone()),
            data_dir,
            database_url: settings.database_url.clone().or_else(|| c.database_url.clone()),
            seal_key,
        }
    }

    /// The inventory path, or a usage error that says how to give one.
    pub fn inventory(&self, cfg: &LoadedConfig) -> Result<&Path> {
        self.inventory.as_deref().ok_or_else(|| EngineError::NoInventory {
            hint: cfg
                .path
                .as_ref()
                .map(|p| format!(" (and {} has no `inventory` key)", p.display()))
                .unwrap_or_default(),
        })
    }
}

fn state_home() -> PathBuf {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Per-user state directory, so running the CLI never needs root.
fn default_data_dir() -> PathBuf {
    state_home().join("lifeline")
}

/// Per-user configuration directory: not the data directory.
fn default_seal_key() -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("lifeline/seal.key")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_points_at_line_and_column() {
        let text = "inventory = \"inv.toml\"\n\n[[backup-schedule]]\ntargets = [\"leaf\"]\ncron = \"0 2 * * *\"\ncolour = 1\n";
        let e = parse(Path::new("/etc/l/lifeline.toml"), text).unwrap_err().to_string();
        assert!(e.starts_with("/etc/l/lifeline.toml:6:1: unknown field `colour`"), "{e}");
    }

    #[test]
    fn fault_policy_parses_and_rejects_unknown_modes() {
        let text = "[[fault-policy]]\nkind = \"health-critical\"\nrunbook = \"recover\"\nmode = \"auto\"\n\n\
                    [[fault-policy]]\nkind = \"*\"\n";
        let c = parse(Path::new("/l.toml"), text).unwrap();
        assert_eq!(c.fault_policy.len(), 2);
        assert_eq!(c.fault_policy[0].mode, PolicyMode::Auto);
        assert_eq!(c.fault_policy[0].runbook.as_deref(), Some("recover"));
        assert_eq!(c.fault_policy[1].mode, PolicyMode::Notify, "notify is the default");
        let e = parse(Path::new("/l.toml"), "[[fault-policy]]\nkind = \"x\"\nmode = \"yolo\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/l.toml:3:"), "{e}");
    }

    #[test]
    fn relative_paths_follow_the_file() {
        let c = parse(Path::new("/etc/l/lifeline.toml"), "inventory = \"inv.toml\"\nseal-key = \"/k\"\n")
            .unwrap();
        assert_eq!(c.inventory, Some(PathBuf::from("/etc/l/inv.toml")));
        assert_eq!(c.seal_key, Some(PathBuf::from("/k")));
    }
}
