//! `lifeline inventory import --csv FILE | --slurm-conf FILE [--diff]`: devices from a source the operator
//! has, merged into the configured inventory (or a new one) and printed for review. The inventory file is
//! never written. Reading and merging are `lifeline_inventory::import`'s; this is arguments and output.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use clap::{ArgGroup, Args};
use lifeline_inventory::Severity;
use lifeline_inventory::import::{self, Imported, Options};
use serde_json::json;

use crate::args::Global;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["csv", "slurm_conf", "netbox"])))]
pub struct ImportArgs {
    /// A CSV of devices (header `name,bmc,protocol,role,rack`; optional `site,model,gpus,gpu-model,groups,
    /// description`; `bmc` as HOST[:PORT]).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// A slurm.conf: its NodeName lines with GPU Gres become gpu-node devices (Features become groups).
    #[arg(long, value_name = "FILE")]
    pub slurm_conf: Option<PathBuf>,
    /// A NetBox (base URL): every device of `/api/dcim/devices/` whose role is a server role (slugs with
    /// `gpu`, `dgx`, `hgx` → gpu-node; `head`, `login`, `control` → head-node; `storage` →
    /// storage-server; or `--netbox-role`); the BMC from its OOB IP, GPUs from the custom fields
    /// `gpu_count` and `gpu_model`. The API token is read from $NETBOX_TOKEN, never an argument.
    #[arg(long, value_name = "URL")]
    pub netbox: Option<String>,
    /// Map a NetBox role slug to a Lifeline role (`SLUG=gpu-node`); repeatable.
    #[arg(long, value_name = "SLUG=ROLE")]
    pub netbox_role: Vec<String>,
    /// Print a unified diff against the current inventory instead of the merged file.
    #[arg(long)]
    pub diff: bool,
    /// Start a new inventory even when one is configured.
    #[arg(long)]
    pub fresh: bool,
    /// `[cluster] name` of a new inventory.
    #[arg(long, default_value = "imported")]
    pub cluster: String,
    /// Site of racks the inventory does not have yet.
    #[arg(long, default_value = "site1")]
    pub site: String,
    /// Rack of new devices whose source names none (slurm.conf).
    #[arg(long, default_value = "unracked")]
    pub rack: String,
    /// BMC address of new devices whose source names none; `{name}` is the device name
    /// (e.g. `{name}-bmc.oob.example`).
    #[arg(long, value_name = "TEMPLATE")]
    pub bmc_host: Option<String>,
    /// `[defaults.bmc] username` of a new inventory.
    #[arg(long, default_value = "admin")]
    pub bmc_username: String,
    /// `[defaults.bmc] credential` reference of a new inventory (`env:NAME`, `file:PATH`, `sealed:`).
    #[arg(long, default_value = "env:LIFELINE_BMC_PASSWORD")]
    pub bmc_credential: String,
}

pub async fn run(g: &Global, a: ImportArgs) -> CmdResult {
    let (source, devices) = match &a.netbox {
        Some(url) => read_netbox(url, &a.netbox_role).await?,
        None => read_source(&a)?,
    };
    let current_path = if a.fresh {
        None
    } else {
        let l = lifeline(g)?;
        l.paths.inventory.clone()
    };
    let current = match &current_path {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("reading the current inventory {}", p.display()))
                .map_err(Exit::usage)?,
        ),
        None => None,
    };
    let opts = Options {
        cluster: a.cluster.clone(),
        site: a.site.clone(),
        rack: a.rack.clone(),
        bmc_host: a.bmc_host.clone(),
        bmc_username: a.bmc_username.clone(),
        bmc_credential: a.bmc_credential.clone(),
    };
    let m = import::merge(current.as_deref(), &devices, &opts).map_err(Exit::usage)?;
    let errors = m.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
    if g.json {
        print_json(&json!({
            "source": source,
            "inventory": current_path,
            "added": m.added, "updated": m.updated, "unchanged": m.unchanged,
            "not_in_source": m.not_in_source, "racks_added": m.racks_added,
            "diagnostics": m.diagnostics,
            "text": m.text,
        }))?;
    } else {
        if a.diff {
            let name = current_path.as_ref().map_or("(new)".to_owned(), |p| p.display().to_string());
            crate::out::text(&import::diff(current.as_deref().unwrap_or(""), &m.text, &name))?;
        } else {
            crate::out::text(&m.text)?;
        }
        // The summary and the checker's findings go to stderr, so stdout is the file alone.
        eprintln!(
            "{source}: {} added, {} updated, {} unchanged; {} inventory device(s) not in the source (kept){}",
            m.added.len(),
            m.updated.len(),
            m.unchanged,
            m.not_in_source.len(),
            if m.racks_added.is_empty() {
                String::new()
            } else {
                format!("; racks added: {}", m.racks_added.join(", "))
            }
        );
        for d in &m.diagnostics {
            eprintln!("{d}");
        }
        if errors > 0 {
            eprintln!(
                "the merged inventory has {errors} error(s): fix the source or the options before using it"
            );
        }
    }
    Ok(if errors > 0 { Code::Failed } else { Code::Ok })
}

async fn read_netbox(url: &str, roles: &[String]) -> Result<(String, Vec<Imported>), Exit> {
    let mut map = Vec::new();
    for r in roles {
        let (slug, role) = r
            .split_once('=')
            .ok_or_else(|| Exit::usage(anyhow!("--netbox-role `{r}`: expected SLUG=ROLE")))?;
        let role = role.parse().map_err(|e| Exit::usage(anyhow!("--netbox-role `{r}`: {e}")))?;
        map.push((slug.to_owned(), role));
    }
    let src = lifeline_engine::netbox::Source {
        url: url.to_owned(),
        token: std::env::var("NETBOX_TOKEN").ok().filter(|t| !t.is_empty()),
        ..Default::default()
    };
    let got = lifeline_engine::netbox::fetch_devices(&src, &import::netbox::RoleMap(map)).await?;
    eprintln!(
        "{url}: {} page(s){}; {} server(s), {} device(s) of other roles not imported",
        got.pages,
        if got.retried > 0 {
            format!(", {} request(s) retried (rate limit)", got.retried)
        } else {
            String::new()
        },
        got.devices.len(),
        got.skipped.len()
    );
    Ok((url.to_owned(), got.devices))
}

fn read_source(a: &ImportArgs) -> Result<(String, Vec<Imported>), Exit> {
    let (path, is_csv) = match (&a.csv, &a.slurm_conf) {
        (Some(p), None) => (p, true),
        (None, Some(p)) => (p, false),
        _ => return Err(Exit::usage(anyhow!("give one of --csv or --slurm-conf"))),
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {}", path.display()))
        .map_err(Exit::usage)?;
    let (devices, problems) = if is_csv {
        import::csv::parse(&text)
    } else {
        let (nodes, problems) = import::slurm::parse(&text);
        let skipped = nodes.iter().filter(|n| n.gpus == 0).count();
        if skipped > 0 {
            eprintln!("{}: {skipped} node(s) without GPU Gres not imported", path.display());
        }
        (import::slurm::gpu_nodes(&nodes), problems)
    };
    if !problems.is_empty() {
        let listing: Vec<String> =
            problems.iter().map(|p| format!("{}:{}: {}", path.display(), p.line, p.message)).collect();
        return Err(Exit::failed(anyhow!(
            "{} problem(s) in the source:\n{}",
            problems.len(),
            listing.join("\n")
        )));
    }
    Ok((path.display().to_string(), devices))
}
