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

// The doc comments of these types are the configuration reference: `docs/configuration.md` is generated
// from them by `config_reference`, and a test fails when it is stale.

/// `lifeline.toml`: where the inventory, the data and the sealing key are.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerConfig {
    /// The inventory file; a verb that needs one and has none says how to give it. Default: none
    /// (`--inventory` / `$LIFELINE_INVENTORY` first).
    pub inventory: Option<PathBuf>,
    /// The SQLite store (`lifeline.db`, WAL mode), config backups, console logs and the server's TLS pair;
    /// created 0700, files 0600. Default: `$XDG_STATE_HOME/lifeline`, else `~/.local/state/lifeline`
    /// (`--data-dir` / `$LIFELINE_DATA_DIR` first).
    pub data_dir: Option<PathBuf>,
    /// `postgres://…` for several replicas sharing one store. Default: SQLite in `data-dir`
    /// (`--database-url` / `$LIFELINE_DATABASE_URL` first).
    pub database_url: Option<String>,
    /// The key that seals raw switch configs and rotated BMC passwords (AES-256-GCM); kept apart from the
    /// data directory so a copy of the data directory (a backup, a support bundle) does not carry the key to
    /// its own secrets. Default: `$XDG_CONFIG_HOME/lifeline/seal.key`, else `~/.config/lifeline/seal.key`
    /// (`$LIFELINE_SEAL_KEY` first).
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
    /// `[correlation]`: how observations of many devices are grouped by the part they share.
    #[serde(default)]
    pub correlation: CorrelationConfig,
    /// `[probation]`: how long a re-admitted node is watched, and when it is a lemon.
    #[serde(default)]
    pub probation: ProbationConfig,
    /// `[image-server]`: Lifeline serving an installer image itself, for BMCs that must pull one.
    #[serde(default)]
    pub image_server: ImageServerConfig,
    /// `[[bios-profile]]`: the golden BIOS settings per role, used by `bios diff` / `bios apply` without
    /// `--profile`.
    #[serde(default)]
    pub bios_profile: Vec<BiosProfileEntry>,
}

/// `[[bios-profile]]`: golden BIOS attributes for the targets of one role (or, without `role`, for every
/// target, the roles' entries on top). Values are compared by meaning (`"10"` and `10`, `"true"` and
/// `true`); see docs/media-bios.md.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BiosProfileEntry {
    /// The inventory role this entry is for; omitted: every target. At most one entry per role.
    pub role: Option<String>,
    /// A profile file (the `--profile` format: `[attributes]` and `[role.ROLE.attributes]`), read for this
    /// entry's role; relative to the configuration file's directory.
    pub file: Option<PathBuf>,
    /// Attributes given here, on top of the file's: `attributes = { SriovGlobalEnable = "Enabled" }`.
    #[serde(default)]
    pub attributes: std::collections::BTreeMap<String, String>,
}

/// `[image-server]`: `lifeline media insert TARGET... --serve FILE` serves FILE, and `lifeline serve` the
/// images of `images` by name, over HTTPS from the jump host, with range requests (a BMC mounts an ISO by
/// reading ranges of it), at a URL with a per-insert token (unguessable, expiring, one image per token);
/// see docs/media-bios.md.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ImageServerConfig {
    /// `ADDR:PORT` to listen on: the jump host's address on the OOB network, which the BMCs reach. Required
    /// for `--serve`; an unspecified address (`0.0.0.0`, `::`) is refused (no default: an image server
    /// must not answer on every network the jump host is on).
    pub listen: Option<String>,
    /// The certificate chain (PEM) the image server presents; without it and `tls-key` a self-signed pair
    /// for the listen address is made at each start (most BMCs do not check an image server's
    /// certificate; its SHA-256 fingerprint is printed and audited).
    pub tls_cert: Option<PathBuf>,
    /// The key of `tls-cert` (PEM).
    pub tls_key: Option<PathBuf>,
    /// How long a token (and so the URL handed to a BMC) is good for, from the insert (default `2h`; at
    /// most `7d`). After it the URL answers 404 and nothing is served.
    pub token_ttl: Option<String>,
    /// The directory of the images `lifeline serve` serves by name (the API's `served_image`, a runbook's
    /// `served-image` parameter), e.g. `/var/lib/lifeline/images`; relative to the configuration file's
    /// directory. Only regular files directly in it are served: a name with `/` or `..` is refused.
    pub images: Option<PathBuf>,
}

/// `[probation]`: after Lifeline re-admits a node, the node is on probation (docs/faults.md): a fault of the
/// node, or a failing in-band check, within `window` is a recurrence, which drains it again (Lifeline's
/// mark) and counts against it. A node with `lemon-threshold` recurrences within `lemon-window` is a lemon:
/// listed with its history (`lifeline fault lemons`, `GET /api/v1/lemons`) and, with `lemon-readmit =
/// "refuse"`, not re-admitted again until a human releases it (`lifeline fault release-lemon NODE
/// --reason TEXT`, audited, used once).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProbationConfig {
    /// How long a re-admitted node stays on probation, e.g. `24h` (default `24h`; `0s` disables probation).
    pub window: Option<String>,
    /// How often `lifeline serve` checks a node on probation in band (the runbooks' report source; default
    /// `1h`).
    pub check_interval: Option<String>,
    /// Recurrences within `lemon-window` that make a node a lemon, at least 1 (default 3).
    pub lemon_threshold: Option<u32>,
    /// How far back recurrences count towards `lemon-threshold` (default `30d`).
    pub lemon_window: Option<String>,
    /// `refuse` (default): a lemon is not re-admitted without a human's release; `allow`: a lemon is only
    /// listed.
    pub lemon_readmit: Option<String>,
}

/// `[correlation]`: fault correlation (docs/faults.md) holds each observation a moment, groups observations
/// of one kind by the part their devices share (a leaf's port group, a leaf, a rack, a PDU, an NVLink domain,
/// an OOB switch) and raises one fault on the part that explains them. Read by `lifeline serve` only.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CorrelationConfig {
    /// How long an observation waits for others before it is decided alone, e.g. `5s` (default `5s`).
    pub hold: Option<String>,
    /// How long a shared fault's group stays open for late members, how far back lone observations are
    /// linked to a new group, and how long after an offered switch-config restore was answered (approved
    /// and run, failed, rejected) it is not offered again (default `10m`).
    pub window: Option<String>,
    /// The fewest affected devices (or rails) that make a shared fault; at least 2 (default 2).
    pub min_members: Option<usize>,
    /// The least fraction of a part's dependents that must be affected for it to be blamed, in (0, 1]
    /// (default 0.5).
    pub min_fraction: Option<f64>,
}

/// `[server]`: the listener, TLS, the scheduler's intervals and how BMC events arrive. Read by
/// `lifeline serve` only; the CLI accepts and ignores it.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeSection {
    /// `ADDR:PORT` of the HTTPS listener of the API and the web console (default `127.0.0.1:7443`;
    /// `--listen` first).
    pub listen: Option<String>,
    /// The operator's certificate chain (PEM); without it and `tls-key` a self-signed pair is made on first
    /// start and kept in `DATA/server-tls/`.
    pub tls_cert: Option<PathBuf>,
    /// The key of `tls-cert` (PEM).
    pub tls_key: Option<PathBuf>,
    /// How often the whole fleet is swept (power, health, newest event-log entries), split over the live
    /// replicas; a duration (default `60s`; `0s` disables).
    pub sweep_interval: Option<String>,
    /// How often the cabling is checked (`inventory verify-cabling`: every leaf's LLDP neighbours over SSH
    /// and the agents' reports of what each NIC hears, against the inventory), raising and resolving
    /// `cabling` faults; a duration (default `0s`: not scheduled; at least `1s`).
    pub cabling_interval: Option<String>,
    /// Keep a session open and logged on every console of the inventory, whether or not anyone is
    /// attached (default true).
    pub console_logging: Option<bool>,
    /// How long a browser login lasts (default `12h`).
    pub session_ttl: Option<String>,
    /// A switch whose scheduled backup failed this many times in a row gets a fault (default 3, at least 1).
    pub backup_failures_fault: Option<u32>,
    /// How often every switch's interface, link-flap and PFC counters are read over SSH; a counter that
    /// rose past its threshold since the previous read is evidence on its port for the fault correlation
    /// (docs/faults.md); a duration (default `0s`: not read).
    pub switch_counters_interval: Option<String>,
    /// How many switches' counters are read at once (default 8, at least 1).
    pub switch_counters_concurrency: Option<usize>,
    /// How long one switch's counters read may take, connect to close (default `30s`).
    pub switch_counters_timeout: Option<String>,
    /// How many link flaps (carrier transitions) a port must add between two counters reads to be
    /// `switch-link-flap` evidence (default 1, at least 1).
    pub switch_flap_threshold: Option<u64>,
    /// How much a port's error counters (rx / tx errors, CRC) must rise between two reads to be
    /// `switch-port-errors` evidence (default 1, at least 1).
    pub switch_error_threshold: Option<u64>,
    /// How much a port's drop counters must rise between two reads to be `switch-port-drops` evidence
    /// (default 1000, at least 1).
    pub switch_drop_threshold: Option<u64>,
    /// How many PFC or link-level pause frames a port must add between two reads to be `switch-pfc-storm`
    /// evidence: a lossless fabric pauses all the time, so only a storm counts (default 100000, at
    /// least 1).
    pub switch_pause_threshold: Option<u64>,
    /// How many PFC watchdog storms a port's queues must add between two reads to be
    /// `switch-pfc-watchdog` evidence (default 1, at least 1).
    pub switch_watchdog_threshold: Option<u64>,
    /// How often every Redfish BMC's BIOS attributes are read against the `[[bios-profile]]` of its node's
    /// role and each node's drift kept for the API and the fleet view (docs/media-bios.md); a duration
    /// (default `0s`: not read).
    pub bios_drift_interval: Option<String>,
    /// How many BMCs' BIOS attributes are read at once (default 8, at least 1).
    pub bios_drift_concurrency: Option<usize>,
    /// How BMC events reach the server: `off` (default; the sweeps still read the event logs), `sse`
    /// (each Redfish BMC's event stream) or `push` (EventService subscriptions to `event-listen`).
    pub events: Option<String>,
    /// `ADDR:PORT` of the server's event receiver; required with `events = "push"`.
    pub event_listen: Option<String>,
    /// The URL the BMCs post to when it is not `http://EVENT-LISTEN/events` (NAT, a relay).
    pub event_destination: Option<String>,
    /// A certificate chain (PEM) for the event receiver: with it and `event-tls-key` the receiver speaks
    /// TLS only and BMCs are subscribed to `https://EVENT-LISTEN/events` (the subscription secret in the
    /// path never crosses the OOB network in clear).
    pub event_tls_cert: Option<PathBuf>,
    /// The key of `event-tls-cert` (PEM).
    pub event_tls_key: Option<PathBuf>,
    /// With `events = "push"`: how often each BMC's subscriptions are listed to find Lifeline's gone (a
    /// BMC reset or firmware update drops them) and re-create it; a duration (default `60s`; at least
    /// `1s`). After a failed check (the BMC restarting) the next comes within seconds.
    pub event_check_interval: Option<String>,
    /// With `events = "push"`: heartbeat events asked for every this many minutes where the BMC offers
    /// them (`SendHeartbeat`, EventDestination v1_11); none for twice that plus the check interval and
    /// the subscription is taken as lost and made again (default 5; 0: none asked for).
    pub event_heartbeat_minutes: Option<u32>,
}

/// `[[webhook]]`: where notifications are POSTed (JSON, in the background, retried with backoff; a
/// delivery that fails every try is counted in `/metrics` and logged).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Webhook {
    /// The receiver (`http://` or `https://`).
    pub url: String,
    /// Which notification kinds (`fault`) this receiver gets; empty: every kind.
    #[serde(default)]
    pub events: Vec<String>,
}

// ---------------------------------------------------------------------------------------------------
// The fault policy. Kept apart from the rest of the file: the server decides with it (see
// `lifeline-server`'s `policy` module) and the runbook executor carries the decision out.

/// `[[fault-policy]]`: what the server does when a fault of `kind` opens. The first matching entry wins.
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
    /// A fault kind (`health-critical`, `bmc-unreachable`, `sel-critical`, `agent-report`, …) or `*`.
    pub kind: String,
    /// Inventory selectors the fault's device must match; empty: every device.
    #[serde(default)]
    pub targets: Vec<String>,
    /// The runbook to run on the fault's device; none: notify only.
    #[serde(default)]
    pub runbook: Option<String>,
    /// `auto` starts the run at once under the guard; `approve` creates it waiting for an operator's
    /// approval; `notify` (the default) runs nothing.
    #[serde(default)]
    pub mode: PolicyMode,
    /// An escalation ladder instead of one `runbook`: the N-th fault of a device within `attempt-window`
    /// runs the N-th rung, and once every rung was tried a human is called (notify only, audited); e.g.
    /// `[{ runbook = "gpu-node-recover", vars = { reset = "reset" } }, { runbook = "gpu-node-recover" },
    /// { runbook = "bmc-unreachable" }]`.
    #[serde(default)]
    pub ladder: Vec<LadderRung>,
    /// How far back a device's earlier policy runs count against its ladder (default `24h`).
    pub attempt_window: Option<String>,
}

/// One rung of a `[[fault-policy]]` ladder: a runbook and its variables.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LadderRung {
    /// The runbook this rung runs on the fault's device.
    pub runbook: String,
    /// Its variables (`--var NAME=VALUE`), e.g. `{ reset = "cycle" }`.
    #[serde(default)]
    pub vars: std::collections::BTreeMap<String, String>,
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

/// `[[backup-schedule]]`: when to back up which switches, one entry per device group. Run by
/// `lifeline serve` (each slot claimed by one replica, a slot missed during downtime run once), listed by
/// `lifeline backup schedule`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BackupSchedule {
    /// Inventory selectors: groups, racks, roles, names or globs.
    pub targets: Vec<String>,
    /// 5-field cron expression (minute hour day-of-month month day-of-week), UTC.
    pub cron: String,
    /// Spread each switch's start over this long, stable per switch across restarts (a duration, e.g. `15m`).
    #[serde(default)]
    pub jitter: Option<String>,
    /// Attempts per run, with exponential backoff between them (default 3).
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
    /// The runbook library (default: `runbooks/` in the working directory; `--runbooks` /
    /// `$LIFELINE_RUNBOOKS` first).
    pub dir: Option<PathBuf>,
    /// Runbooks an administrator allows to run `exec` steps on the jump host.
    #[serde(default)]
    pub exec_allowed: Vec<String>,
    /// The blast-radius guard.
    #[serde(default)]
    pub guard: GuardConfig,
}

/// `[runbooks.guard]`: the blast-radius guard. A rack-wide fault is not fixed by cycling every node in it,
/// so a new run is refused when too many runs are active in its rack, role or the fleet, or when too large
/// a share of its rack is already in recovery (active or escalated runs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GuardConfig {
    /// Runs active at once in the fleet (default 8).
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: u32,
    /// Runs active at once in one rack (default 2).
    #[serde(default = "default_max_per_rack")]
    pub max_concurrent_per_rack: u32,
    /// Runs active at once for one role (default 8).
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent_per_role: u32,
    /// Runs active at once on the devices of one failure domain other than the rack: a leaf their rails are
    /// cabled to, a PDU, an NVLink domain, an OOB switch (the inventory's topology keys; default 2).
    #[serde(default = "default_max_per_rack")]
    pub max_concurrent_per_domain: u32,
    /// No new run in a rack where more than this share (percent) of the same role is in recovery: active or
    /// escalated runs (default 25).
    #[serde(default = "default_max_percent")]
    pub max_in_recovery_percent: u32,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            max_concurrent: default_max_concurrent(),
            max_concurrent_per_rack: default_max_per_rack(),
            max_concurrent_per_role: default_max_concurrent(),
            max_concurrent_per_domain: default_max_per_rack(),
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
