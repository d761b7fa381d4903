//! `lifeline-agent`: runs the in-band checks on a GPU node and prints a table (people) or JSON (machines).
//!
//! It exists as its own small binary so it can be copied to a node and run over SSH after an OOB recovery
//! without the server's dependencies. Exit codes are the contract with the jump host: 0 pass, 1 fail,
//! 2 error (including usage errors), so `lifeline verify` can decide without parsing text.
//!
//! Two unattended modes feed the server, so an in-band failure becomes a fault like any other:
//! `watch` checks every `--interval` and posts each report ([`post`]); `health-check` is a Slurm
//! `HealthCheckProgram` (NHC-style: drain on failure with a `lifeline:` reason, resume what it drained;
//! [`slurm`]), and posts too when given `--server`. Each report carries what lldpd hears on the node's NICs
//! ([`lldp`]) for the server's cabling check.

mod lldp;
mod post;
mod slurm;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use lifeline_verify::{GpuSource, Options, Policy, Roots, error_chain};

#[derive(Parser)]
#[command(name = "lifeline-agent", version, about = "In-band node verification for Lifeline")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check RDMA rails, GPUs and host settings against the expectations.
    Check(CheckArgs),
    /// Check every --interval and post each report to `lifeline serve` (token from $LIFELINE_TOKEN or
    /// --token-file, never an argument).
    Watch(WatchArgs),
    /// Slurm HealthCheckProgram: exit non-zero and drain the node (reason `lifeline: …`) when failing;
    /// resume it when it passes again and the drain was ours.
    HealthCheck(HealthArgs),
}

#[derive(Args)]
struct ServerArgs {
    /// `lifeline serve` URL, e.g. https://jump:7443.
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// File holding the API token (when $LIFELINE_TOKEN is unset; also $LIFELINE_TOKEN_FILE).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The server certificate's SHA-256 fingerprint, as `lifeline serve` prints it (https only; also
    /// $LIFELINE_SERVER_FINGERPRINT).
    #[arg(long, value_name = "SHA256")]
    server_fingerprint: Option<String>,
}

#[derive(Args)]
struct WatchArgs {
    #[command(flatten)]
    check: CheckArgs,
    #[command(flatten)]
    server: ServerArgs,
    /// Time between checks (e.g. 60s, 5m).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    interval: Duration,
    /// Stop after this many reports (default: run until killed).
    #[arg(long)]
    count: Option<u64>,
}

#[derive(Args)]
struct HealthArgs {
    #[command(flatten)]
    check: CheckArgs,
    #[command(flatten)]
    server: ServerArgs,
    /// The Slurm node name (default: --node, $SLURMD_NODENAME, or the host name).
    #[arg(long)]
    slurm_node: Option<String>,
    /// The `scontrol` to run.
    #[arg(long, default_value = "scontrol")]
    scontrol: PathBuf,
    /// Only report: never drain or resume.
    #[arg(long)]
    no_drain: bool,
}

#[derive(Args)]
struct CheckArgs {
    /// Fleet inventory (TOML); with --node.
    #[arg(long, requires = "node", conflicts_with = "policy")]
    inventory: Option<PathBuf>,
    /// This node's name in the inventory.
    #[arg(long, requires = "inventory")]
    node: Option<String>,
    /// Policy file (TOML) instead of the inventory.
    #[arg(long, required_unless_present = "inventory")]
    policy: Option<PathBuf>,
    /// Stand-in for /sys (e.g. a simulator export `DIR/<node>/sysfs`).
    #[arg(long, default_value = "/sys")]
    sysfs_root: PathBuf,
    /// Stand-in for /proc (default: /proc, or `<sysfs-root>/../proc` when --sysfs-root is given).
    #[arg(long)]
    proc_root: Option<PathBuf>,
    /// Directory of recorded `ethtool -S <if>` outputs (default: `<sysfs-root>/../ethtool` when
    /// --sysfs-root is given; on a live node `ethtool -S` is run).
    #[arg(long)]
    ethtool_dir: Option<PathBuf>,
    /// Recorded GPU state (`gpus.json`) instead of NVML.
    #[arg(long)]
    gpu_snapshot: Option<PathBuf>,
    /// Kernel log for XIDs since boot.
    #[arg(long, default_value = "/dev/kmsg")]
    kmsg: PathBuf,
    /// Counter sampling interval in ms (overrides the policy).
    #[arg(long)]
    interval_ms: Option<u64>,
    /// Recorded `lldpcli -f json show neighbors details` output instead of running lldpcli (default: a
    /// recorded tree's `<sysfs-root>/../lldp.json` when present; on a live node lldpcli is run).
    #[arg(long, value_name = "FILE", conflicts_with = "no_lldp")]
    lldp_json: Option<PathBuf>,
    /// Do not read the NICs' LLDP neighbours.
    #[arg(long)]
    no_lldp: bool,
    /// Skip the ibverbs checks (only present when built with the `verbs` feature).
    #[arg(long)]
    no_verbs: bool,
    /// Print the JSON report (schema lifeline.verify/v1) instead of the table.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // --help / --version are not errors.
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    let res = match cli.command {
        Command::Check(args) => check(args),
        Command::Watch(args) => watch(args),
        Command::HealthCheck(args) => health_check(args),
    };
    match res {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("lifeline-agent: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn check(args: CheckArgs) -> anyhow::Result<u8> {
    let (report, lldp) = run_checks(&args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report_json(&report, lldp.as_ref()))?);
    } else {
        print!("{}", report.render_table());
        if let Some(l) = &lldp {
            println!("{}", l.summary());
        }
        println!("\nreport {} ({} ms)", report.digest, report.duration_us / 1000);
    }
    Ok(report.verdict.exit_code() as u8)
}

/// The report as printed and posted: the verify report, with the node's LLDP read under `lldp`.
fn report_json(report: &lifeline_verify::Report, lldp: Option<&lldp::LldpRead>) -> serde_json::Value {
    let mut v = serde_json::to_value(report).unwrap_or(serde_json::Value::Null);
    if let (Some(l), Some(m)) = (lldp, v.as_object_mut()) {
        m.insert("lldp".into(), serde_json::to_value(l).unwrap_or(serde_json::Value::Null));
    }
    v
}

fn server(a: &ServerArgs) -> anyhow::Result<Option<post::Server>> {
    let Some(url) = &a.server else { return Ok(None) };
    let token = post::token(a.token_file.as_deref()).map_err(|e| anyhow::anyhow!(error_chain(&e)))?;
    let fp = a.server_fingerprint.clone().or_else(|| std::env::var("LIFELINE_SERVER_FINGERPRINT").ok());
    Ok(Some(post::Server::new(url, token, fp).map_err(|e| anyhow::anyhow!(error_chain(&e)))?))
}

/// Posts one report: `{node, passed, report}` (the report carrying `lldp`).
fn send(
    srv: &post::Server,
    report: &lifeline_verify::Report,
    lldp: Option<&lldp::LldpRead>,
) -> Result<(), post::PostError> {
    let body = serde_json::json!({
        "node": report.node,
        "passed": report.verdict == lifeline_verify::Verdict::Pass,
        "report": report_json(report, lldp),
    });
    srv.post_json("/api/v1/agent/reports", &body).map(drop)
}

fn failing(report: &lifeline_verify::Report) -> Vec<String> {
    report
        .checks
        .iter()
        .filter(|c| matches!(c.status, lifeline_verify::Status::Fail | lifeline_verify::Status::Error))
        .map(|c| format!("{} {}", c.id, c.subject))
        .collect()
}

fn watch(args: WatchArgs) -> anyhow::Result<u8> {
    let srv = server(&args.server)?.ok_or_else(|| anyhow::anyhow!("watch needs --server URL"))?;
    let mut n = 0u64;
    loop {
        n += 1;
        let (report, lldp) = run_checks(&args.check)?;
        let bad = failing(&report);
        let sent = match send(&srv, &report, lldp.as_ref()) {
            Ok(()) => "posted".to_owned(),
            // The next round posts again; the server keeps the newest.
            Err(e) => format!("not posted: {}", error_chain(&e)),
        };
        println!(
            "{} {} {} ({} failing) {sent}",
            report.started_at,
            report.node,
            report.verdict.as_str(),
            bad.len()
        );
        if args.count.is_some_and(|c| n >= c) {
            return Ok(0);
        }
        std::thread::sleep(args.interval);
    }
}

fn health_check(args: HealthArgs) -> anyhow::Result<u8> {
    let srv = server(&args.server)?;
    let (report, lldp) = run_checks(&args.check)?;
    let passed = report.verdict == lifeline_verify::Verdict::Pass;
    if let Some(srv) = &srv
        && let Err(e) = send(srv, &report, lldp.as_ref())
    {
        // Slurm's verdict does not depend on the server being reachable.
        eprintln!("lifeline-agent: report not posted: {}", error_chain(&e));
    }
    let node = args
        .slurm_node
        .clone()
        .or_else(|| args.check.node.clone())
        .or_else(|| std::env::var("SLURMD_NODENAME").ok())
        .unwrap_or_else(|| report.node.clone());
    let bad = failing(&report);
    if !args.no_drain {
        let sc = slurm::Scontrol { program: &args.scontrol };
        let state = sc.node(&node).map_err(|e| anyhow::anyhow!(error_chain(&e)))?;
        if !passed && !state.drained() {
            sc.drain(&node, &slurm::reason(&bad)).map_err(|e| anyhow::anyhow!(error_chain(&e)))?;
        } else if passed && state.drained_by_lifeline() {
            sc.resume(&node).map_err(|e| anyhow::anyhow!(error_chain(&e)))?;
        }
    }
    if passed {
        Ok(0)
    } else {
        eprintln!("{}", slurm::reason(&bad));
        Ok(1)
    }
}

fn run_checks(args: &CheckArgs) -> anyhow::Result<(lifeline_verify::Report, Option<lldp::LldpRead>)> {
    let policy = match (&args.inventory, &args.node, &args.policy) {
        (Some(inv), Some(node), None) => {
            let (inventory, _warnings) = lifeline_inventory::load(inv)
                .with_context(|| format!("loading inventory {}", inv.display()))?;
            Policy::from_inventory(&inventory, node).map_err(|e| anyhow::anyhow!(error_chain(&e)))?
        }
        (None, None, Some(p)) => Policy::from_file(p).map_err(|e| anyhow::anyhow!(error_chain(&e)))?,
        _ => anyhow::bail!("give either --inventory FILE --node NAME or --policy FILE"),
    };
    let live = args.sysfs_root == std::path::Path::new("/sys");
    let sibling = |name: &str| args.sysfs_root.parent().map(|p| p.join(name));
    let proc = args.proc_root.clone().unwrap_or_else(|| {
        if live { PathBuf::from("/proc") } else { sibling("proc").unwrap_or_else(|| PathBuf::from("/proc")) }
    });
    let ethtool = args.ethtool_dir.clone().or_else(|| if live { None } else { sibling("ethtool") });
    let opts = Options {
        roots: Roots { sysfs: args.sysfs_root.clone(), proc, ethtool },
        gpu: match &args.gpu_snapshot {
            Some(p) => GpuSource::Snapshot(p.clone()),
            None => GpuSource::Nvml { kmsg: args.kmsg.clone() },
        },
        interval: args.interval_ms.map(Duration::from_millis),
        // A recorded tree is laid out as DIR/<node>/sysfs: name the report after it, not after this host.
        node: args.node.clone().or_else(|| {
            if live {
                None
            } else {
                args.sysfs_root.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned())
            }
        }),
        verbs: !args.no_verbs,
    };
    let report = lifeline_verify::run(&policy, &opts);
    let lldp = match (&args.lldp_json, args.no_lldp) {
        (_, true) => None,
        (Some(f), false) => Some(lldp::read_file(f)),
        (None, false) if live => Some(lldp::read_live()),
        (None, false) => sibling("lldp.json").filter(|p| p.exists()).map(|p| lldp::read_file(&p)),
    };
    Ok((report, lldp))
}
