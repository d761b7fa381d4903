//! `lifeline-agent`: runs the in-band checks on a GPU node and prints a table (people) or JSON (machines).
//!
//! It exists as its own small binary so it can be copied to a node and run over SSH after an OOB recovery
//! without the server's dependencies. Exit codes are the contract with the jump host: 0 pass, 1 fail,
//! 2 error (including usage errors), so `lifeline verify` can decide without parsing text.

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
    match cli.command {
        Command::Check(args) => match check(args) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("lifeline-agent: error: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

fn check(args: CheckArgs) -> anyhow::Result<u8> {
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
    if args.json {
        println!("{}", report.to_json_pretty());
    } else {
        print!("{}", report.render_table());
        println!("\nreport {} ({} ms)", report.digest, report.duration_us / 1000);
    }
    Ok(report.verdict.exit_code() as u8)
}
