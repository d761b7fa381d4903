//! Command-line grammar (clap). Names and flags here are a contract with operators and scripts.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "lifeline", version, about = "Out-of-band management and recovery for AI GPU clusters")]
#[command(disable_help_subcommand = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every verb accepts, before or after the verb.
#[derive(Debug, Args, Clone)]
pub struct Global {
    /// Inventory file (default: $LIFELINE_INVENTORY, then `inventory` in the server config).
    #[arg(long, global = true, env = "LIFELINE_INVENTORY", value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Directory for the SQLite store, config blobs and console logs.
    #[arg(long, global = true, env = "LIFELINE_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Database URL (`postgres://…` to share state between replicas; default: SQLite in --data-dir).
    #[arg(long, global = true, env = "LIFELINE_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,
    /// Server configuration file.
    #[arg(long, global = true, env = "LIFELINE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// More log output (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Less log output (repeat for less).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "verbose")]
    pub quiet: u8,
    /// Idempotency key of this request: the same id again returns the first outcome instead of acting
    /// twice (scripts that retry). Per target, as `ID/<target>`.
    #[arg(long, global = true, env = "LIFELINE_REQUEST_ID", value_name = "ID")]
    pub request_id: Option<String>,
    /// Wait up to this long for a target another process is acting on (`30s`, `2m`) instead of failing
    /// with the holder's name; a wait that ends with the same action done by the holder does not repeat it.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub wait: Option<std::time::Duration>,
    /// Send `power`, `health` and `sweep` through a running `lifeline serve` at URL instead of acting
    /// locally (token from LIFELINE_TOKEN or LIFELINE_TOKEN_FILE, never an argument).
    #[arg(long, global = true, env = "LIFELINE_SERVER", value_name = "URL")]
    pub server: Option<String>,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("`{s}`: {e} (e.g. 30s, 2m)"))
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check, show and sync inventory files.
    #[command(subcommand)]
    Inventory(InventoryCmd),
    /// Read the audit log.
    #[command(subcommand)]
    Audit(AuditCmd),
    /// Power status and confirmed power actions (on, off, cycle, reset, soft) through the BMC.
    Power(PowerArgs),
    /// Health summary of BMC sensors (temperatures, fans, PSUs, voltages).
    Health(BmcArgs),
    /// Read (or clear) the BMC's system event log.
    Sel(SelArgs),
    /// The whole fleet at once: power, health and the newest SEL entries of every BMC.
    Sweep(SweepArgs),
    /// BMC trust management, reset and info.
    #[command(subcommand)]
    Bmc(BmcCmd),
    /// Set the next boot device (pxe, disk, bios, cdrom, usb) or show it (`boot show`); read back.
    Boot(crate::cmd::bmcops::BootArgs),
    /// Every sensor as `ipmitool sdr elist` lists it (Redfish: the chassis sensors).
    Sdr(BmcArgs),
    /// FRU fields as `ipmitool fru print` shows them (Redfish: System and Chassis equivalents).
    Fru(BmcArgs),
    /// BMC events: what subscriptions delivered and what event log polls found, deduplicated.
    Events(crate::cmd::accounts::EventsArgs),
    /// Serial-over-LAN console: attach (`~.` leaves, `~B` break, `~W` take over writing, `~?` help), read
    /// its log, or break a boot-looping device into its bootloader's rescue shell.
    Console(ConsoleArgs),
    /// Switch configuration backups: run, history, diff, export to git, restore, trust.
    #[command(subcommand)]
    Backup(BackupCmd),
    /// Verify nodes in-band (every RDMA rail, every GPU, host settings) and, with --readmit, return the
    /// ones that pass to training — only if Lifeline drained them.
    Verify(VerifyArgs),
    /// Take nodes out of training with Lifeline's own mark (Slurm drain reason `lifeline: …`, Kubernetes
    /// cordon + `lifeline.io/quarantine` taint), so that a later `verify --readmit` may return them.
    Drain(DrainArgs),
    /// The main job on one machine: the example cluster simulated in-process and a live fleet view
    /// (sweeps refreshed, events as they happen) until Ctrl-C.
    Demo(DemoArgs),
    /// Serve a simulated fleet (Redfish, IPMI + SOL, SSH switches) on loopback, or inject faults into one.
    Sim(SimArgs),
    /// Run the jump-host service: HTTPS API, scheduled backups, sweeps, always-on console logs, faults.
    Serve(crate::cmd::server::ServeArgs),
    /// Local users of `lifeline serve`.
    #[command(subcommand)]
    User(crate::cmd::server::UserCmd),
    /// API tokens for `lifeline serve` (automation, the agent, `--server`).
    #[command(subcommand)]
    Token(crate::cmd::server::TokenCmd),
    /// Fault records opened by the server's rules.
    #[command(subcommand)]
    Fault(crate::cmd::server::FaultCmd),
    /// Recovery runbooks: list, show, check, run; follow runs (status, log, approve, abort, resume).
    #[command(subcommand)]
    Runbook(crate::cmd::runbook::RunbookCmd),
    /// Lifeline's own database: schema status, forward-only migrations, online SQLite backup.
    #[command(subcommand)]
    Db(crate::cmd::db::DbCmd),
    /// Virtual media (Redfish): insert an installer image, boot from it once, eject, show the slots.
    #[command(subcommand)]
    Media(crate::cmd::media::MediaCmd),
    /// BIOS settings (Redfish) against a golden profile per role: show, diff, apply (reset, read back).
    #[command(subcommand)]
    Bios(crate::cmd::bios::BiosCmd),
    /// Firmware rollouts (Redfish UpdateService) in waves under the blast-radius guard: plan, apply.
    #[command(subcommand)]
    Firmware(crate::cmd::firmware::FirmwareCmd),
    /// Find the BMCs that answer on address ranges (RMCP ping, IPMI capabilities, Redfish service root),
    /// identify them (with the inventory's credentials where known) and compare with the inventory.
    Discover(crate::cmd::discover::DiscoverArgs),
    /// The server configuration (`lifeline.toml`): check a file, every problem at once.
    #[command(subcommand)]
    Config(crate::cmd::config_check::ConfigCmd),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    pub action: Option<SimAction>,
    /// Generate N GPU nodes instead of reading the inventory.
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// Generate M switches instead of reading the inventory.
    #[arg(long, value_name = "M")]
    pub switches: Option<usize>,
    /// Add N to the standard ports (443, 623, 22); 0 = standard ports (needs root). Default: standard as
    /// root, else 10000.
    #[arg(long, value_name = "N")]
    pub port_offset: Option<u16>,
    /// Multiply every simulated delay (boot stages, vendor latency); 0.1 boots ten times faster.
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub time_scale: f64,
    /// Keep DIR/<node>/sysfs/… and DIR/<node>/gpus.json current for the verification agent.
    #[arg(long, value_name = "DIR")]
    pub export_node_state: Option<PathBuf>,
    /// Write the endpoints (name, kind, address, port, username, password) as JSON once all listen.
    #[arg(long, value_name = "FILE")]
    pub endpoints_json: Option<PathBuf>,
    /// Where the control API listens (default 127.0.0.1 on a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub control_listen: Option<std::net::SocketAddr>,
    /// Print every endpoint, also for fleets over 64 devices (which get a summary by default).
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Subcommand)]
pub enum SimAction {
    /// Inject FAULT into DEVICE (`bmc-unresponsive`, `bmc-slow=MS`, `udp-loss=PCT`, `tls-cert-change`,
    /// `sol-stuck`, `sessions-full`, `boot-loop`, `gpu-ecc=GPU`, `gpu-xid=GPU:CODE`, `rail-down=HCA`,
    /// `rail-mtu=HCA:MTU`, `pfc-storm=PORT`, `config-change`, `ssh-key-change`, `psu-fail`, `mgmt-down`,
    /// `redfish-down`, `sel-markup`, `os-hang`), or `clear` its faults. DEVICE may list several,
    /// comma-separated (`node-1,node-2`): they are struck at once, as a shared part's loss strikes them.
    Fault {
        /// The simulator's control API (printed by `lifeline sim`, kind `control` in the endpoints JSON).
        #[arg(long, env = "LIFELINE_SIM_CONTROL", value_name = "URL")]
        control: Option<String>,
        /// Read the control URL from a `--endpoints-json` file instead.
        #[arg(long, value_name = "FILE")]
        endpoints: Option<PathBuf>,
        device: String,
        fault: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum InventoryCmd {
    /// Validate inventory files; every problem is printed as FILE:LINE:COL: message.
    /// Exit 0 valid, 1 invalid, 2 usage error (e.g. a file that cannot be read).
    Check {
        /// Files to check (default: the configured inventory).
        files: Vec<PathBuf>,
        /// Treat warnings as errors.
        #[arg(long)]
        strict: bool,
    },
    /// Print the site / rack / device tree with fabrics.
    Show,
    /// Copy the inventory's devices into the store (devices no longer listed are marked removed).
    Sync,
    /// Merge devices from a CSV or a slurm.conf into the inventory and print the result (or `--diff`) for
    /// review; the inventory file is never written. Exit 1 when the merged inventory does not pass `check`.
    Import(crate::cmd::import::ImportArgs),
    /// Read every leaf's LLDP neighbours over SSH and compare them with the rails' `leaf`/`port` in the
    /// inventory: two cables swapped, a NIC on the wrong leaf or port, an unplugged port. Raises (or
    /// resolves) `cabling` faults. Exit 0 clean, 1 a mismatch or a switch that could not be read.
    VerifyCabling,
}

/// Which BMCs: inventory targets and/or ad-hoc `--bmc` URLs.
#[derive(Debug, Args, Clone)]
pub struct BmcSel {
    /// Device names, racks, sites, roles, groups or globs from the inventory (`all` for everything).
    pub targets: Vec<String>,
    /// A BMC not in the inventory: `ipmi://USER@HOST[:PORT]`, `redfish://USER@HOST[:PORT]`, or (plain HTTP,
    /// insecure, audited) `redfish+http://USER@HOST[:PORT]` (repeatable).
    /// The password comes from LIFELINE_BMC_PASSWORD or a prompt, never the command line.
    #[arg(long, value_name = "URL")]
    pub bmc: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BmcArgs {
    #[command(flatten)]
    pub sel: BmcSel,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    #[command(flatten)]
    pub sel: BmcSel,
    /// The presented certificate's fingerprint, as shown (`sha256:` + hex): re-pin only if the BMC
    /// presents exactly this certificate now (one BMC).
    #[arg(long, value_name = "FINGERPRINT")]
    pub fingerprint: Option<lifeline_types::Fingerprint>,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PowerVerb {
    Status,
    On,
    Off,
    Cycle,
    Reset,
    Soft,
}

#[derive(Debug, Args)]
pub struct PowerArgs {
    pub verb: PowerVerb,
    #[command(flatten)]
    pub sel: BmcSel,
    /// Do not ask for confirmation of a destructive action.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How long to wait for the requested state, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct SelArgs {
    #[command(flatten)]
    pub sel: BmcSel,
    /// How many of the newest entries to show.
    #[arg(long, default_value_t = 20)]
    pub newest: usize,
    /// Clear the log (asks for confirmation unless --yes).
    #[arg(long)]
    pub clear: bool,
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub sel: BmcSel,
    /// Newest SEL entries per BMC.
    #[arg(long, default_value_t = 3)]
    pub events: usize,
    /// BMCs visited at once (default: the whole fleet when the open-file limit allows it, raised to its
    /// hard limit; otherwise as many as fit, at most 4,096).
    #[arg(long)]
    pub fanout: Option<usize>,
    /// Time budget per BMC, in seconds (raise it on a lossy OOB link; what was read in time is kept).
    #[arg(long, default_value_t = 30)]
    pub per_bmc_timeout: u64,
}

/// Where nodes are re-admitted.
#[derive(Debug, Args, Clone)]
pub struct SchedulerArgs {
    /// Slurm config for scontrol (default: $SLURM_CONF).
    #[arg(long, env = "SLURM_CONF", value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// Kubernetes API server (uses the in-cluster / kubeconfig credentials of kube-rs when omitted and
    /// --kube is given).
    #[arg(long, value_name = "URL")]
    pub kube_url: Option<String>,
    /// Also act on Kubernetes nodes.
    #[arg(long)]
    pub kube: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// GPU nodes (names, racks, roles, groups, globs).
    #[arg(required = true)]
    pub targets: Vec<String>,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Re-admit nodes whose every check passed (only drains Lifeline set).
    #[arg(long)]
    pub readmit: bool,
    #[command(flatten)]
    pub sched: SchedulerArgs,
}

/// Where a node's in-band report comes from (`verify`, `fault probation-check`).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Check the simulator's exported trees (`lifeline sim --export-node-state DIR`): DIR/<node>/sysfs,
    /// DIR/<node>/proc, DIR/<node>/gpus.json.
    #[arg(long, env = "LIFELINE_NODE_STATE", value_name = "DIR", conflicts_with = "reports")]
    pub node_state: Option<PathBuf>,
    /// Use reports the agent posted: a JSON file (one target) or a directory of `<node>.json`.
    #[arg(long, value_name = "PATH")]
    pub reports: Option<PathBuf>,
    /// Command that runs the agent on a node over SSH (the default source): the policy goes to its stdin.
    #[arg(long, default_value = "lifeline-agent check --policy /dev/stdin --json", value_name = "CMD")]
    pub agent_command: String,
    /// Extra argument for `ssh` (repeatable), e.g. `--ssh-option=-p2222 --ssh-option=-iKEY`.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub ssh_option: Vec<String>,
    /// Counter sampling interval for in-process checks, in ms.
    #[arg(long, value_name = "MS")]
    pub interval_ms: Option<u64>,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    #[arg(required = true)]
    pub targets: Vec<String>,
    /// Why (recorded after the `lifeline:` prefix).
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub sched: SchedulerArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ConsoleArgs {
    #[command(subcommand)]
    pub action: Option<ConsoleCmd>,
    /// Device whose console to attach to.
    pub target: Option<String>,
    /// If another session holds the SOL payload, deactivate it and take over (audited).
    #[arg(long)]
    pub steal: bool,
    /// Watch without typing.
    #[arg(long)]
    pub read_only: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum BootloaderArg {
    Onie,
    Uboot,
    Grub,
    Aboot,
}

#[derive(Debug, Subcommand)]
pub enum ConsoleCmd {
    /// Print a console's log (every byte Lifeline saw, with gaps marked).
    Log {
        target: String,
        /// Start at this time: RFC 3339 (`2026-11-21T03:00:00Z`) or an age (`10m`, `2h`).
        #[arg(long)]
        since: Option<String>,
        /// Keep printing as new output arrives.
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Break a (boot-looping) device into its bootloader and reach the rescue shell, looking at the
    /// screen before every key.
    Rescue {
        target: String,
        #[arg(long, value_enum)]
        bootloader: BootloaderArg,
        #[arg(long)]
        steal: bool,
        /// Seconds to wait for the bootloader to appear.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum BackupCmd {
    /// Back up switch configs now (a new version only when the normalised config changed).
    Run {
        /// Switches, racks, groups or globs (default: every switch).
        targets: Vec<String>,
        /// Switches backed up at once.
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Also keep the raw config (with secrets), encrypted under the data directory's seal key: needed
        /// for a faithful restore.
        /// Kept for compatibility: the sealed raw copy is kept by default.
        #[arg(long, hide = true)]
        keep_raw: bool,
        /// Store only the scrubbed copy (such versions cannot be restored faithfully).
        #[arg(long, conflicts_with = "keep_raw")]
        no_raw: bool,
        /// Per-switch time limit for this run (`90s`, `5m`).
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        timeout: Option<std::time::Duration>,
    },
    /// Versions of one switch.
    History { switch: String },
    /// Print one version: the scrubbed copy, or with `--raw` the sealed copy with its secrets (audited).
    Show {
        switch: String,
        #[arg(long)]
        version: Option<u32>,
        #[arg(long)]
        raw: bool,
    },
    /// Unified diff between two versions (default: the last two; one version: that one against the latest).
    Diff { switch: String, v1: Option<u32>, v2: Option<u32> },
    /// Write every switch's versions to a git repository: one file per switch, one commit per change.
    Export {
        #[arg(long, value_name = "DIR", required = true)]
        git: PathBuf,
    },
    /// Push a stored version back (to the switch itself or to a spare), then re-fetch and verify it.
    Restore {
        switch: String,
        /// Version to restore (default: the latest).
        #[arg(long)]
        version: Option<u32>,
        /// Restore onto this spare switch instead.
        #[arg(long, value_name = "SPARE")]
        to: Option<String>,
        /// Show the diff against the running config and stop.
        #[arg(long)]
        dry_run: bool,
        /// Push the scrubbed config when no raw copy was kept (secrets are lost on the switch!).
        #[arg(long)]
        allow_scrubbed: bool,
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Re-pin a switch's SSH host key after an intended replacement: shows the pinned and the presented
    /// key, then re-pins only what is confirmed (at the prompt, or by `--fingerprint`).
    Trust {
        switch: String,
        /// The presented key's fingerprint, as shown (`sha256:` + hex):
        /// re-pin only if the switch presents exactly this key now.
        #[arg(long, value_name = "FINGERPRINT")]
        fingerprint: Option<lifeline_types::Fingerprint>,
    },
    /// Scrub config files offline: what the rules masked, what the fail-closed fallback masked and why;
    /// exit 1 if the fallback fired.
    ScrubCheck {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// sonic, eos, cumulus, ios or nxos (default: guessed from each file).
        #[arg(long)]
        platform: Option<String>,
    },
    /// The backup schedules of the server config (`[[backup-schedule]]`) and each switch's next run.
    Schedule {
        /// Compute the next runs after this time (RFC 3339; default: now).
        #[arg(long)]
        after: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Seconds between sweeps.
    #[arg(long, default_value_t = 3.0)]
    pub interval: f64,
    /// Stop after this many sweeps (default: until Ctrl-C).
    #[arg(long)]
    pub sweeps: Option<u64>,
    /// Do not inject the scripted faults (GPU ECC, XID, rail down, a stuck BMC) during the demo.
    #[arg(long)]
    pub no_faults: bool,
    /// Simulated time factor (boot stages, vendor latency).
    #[arg(long, default_value_t = 0.05)]
    pub time_scale: f64,
    /// Add N to the standard ports (443, 623, 22); default: standard ports as root, else 10000.
    #[arg(long, value_name = "N")]
    pub port_offset: Option<u16>,
    /// Only the terminal view: do not start the server (API, fault policy) over the simulated fleet.
    #[arg(long)]
    pub no_server: bool,
    /// Where the demo's server listens (plain HTTP, loopback only); default 127.0.0.1:7443, or any free
    /// port when that one is taken.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "no_server")]
    pub listen: Option<String>,
    /// Start N server replicas sharing the work (needs `--database-url postgres://…`).
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "no_server")]
    pub replicas: usize,
}

#[derive(Debug, Subcommand)]
pub enum BmcCmd {
    /// Re-pin a BMC's TLS certificate after an intended replacement: shows the pinned and the presented
    /// certificate, then re-pins only what is confirmed (at the prompt, or by `--fingerprint`).
    Trust(TrustArgs),
    #[command(flatten)]
    Ops(crate::cmd::bmcops::BmcOpsCmd),
    /// BMC accounts: name, enabled, role / IPMI privilege, locked.
    Users(BmcArgs),
    /// Rotate BMC passwords into the sealed store, crash-safely (`--resume` settles an interrupted one).
    Rotate(crate::cmd::accounts::RotateArgs),
    /// Sealed BMC credential generations (states, never secrets unless `--reveal`, which is audited).
    Credentials(crate::cmd::accounts::CredentialsArgs),
    /// Redfish EventService subscriptions to Lifeline's event receiver: create, `--list`, `--remove`.
    Subscribe(crate::cmd::accounts::SubscribeArgs),
}

#[derive(Debug, Subcommand)]
pub enum AuditCmd {
    /// Credential hygiene: vendor default passwords (bounded attempts), IPMI cipher suite 0 / anonymous
    /// login, expired or self-signed certificates — for inventory BMCs only.
    Bmc {
        #[command(flatten)]
        sel: BmcSel,
        /// Failed login attempts allowed per BMC in this run (stays under lockout thresholds).
        #[arg(long, default_value_t = 2)]
        max_attempts: usize,
    },
    /// Newest audit rows first.
    Log {
        /// Only rows about this device.
        #[arg(long)]
        target: Option<String>,
        /// How many rows.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks the whole grammar (duplicate names, conflicting flags) only when asked.
    #[test]
    fn grammar_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
