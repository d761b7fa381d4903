//! `lifeline discover CIDR… [--protocol ipmi|redfish|both] [--json] [--diff]`: the BMCs that answer on
//! address ranges, identified, and compared with the inventory. The scan is the engine's
//! (`Lifeline::discover`); this is arguments and rendering.

use std::time::Duration;

use clap::{Args, ValueEnum};
use ipnet::IpNet;
use lifeline_engine::discover::Spec;
use serde_json::json;

use crate::args::Global;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Protocols {
    Ipmi,
    Redfish,
    Both,
}

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// Address ranges (`10.250.0.0/16`, `10.250.1.7/32`); at most 131,072 addresses in all.
    #[arg(required = true, value_name = "CIDR")]
    pub ranges: Vec<IpNet>,
    /// Which protocols to ask.
    #[arg(long, value_enum, default_value_t = Protocols::Both)]
    pub protocol: Protocols,
    /// Compare with the inventory: BMCs that answer and are not in it, inventory BMCs in the ranges that
    /// do not answer. Exit 1 when they differ.
    #[arg(long)]
    pub diff: bool,
    /// IPMI (RMCP) port.
    #[arg(long, default_value_t = 623)]
    pub ipmi_port: u16,
    /// Redfish port.
    #[arg(long, default_value_t = 443)]
    pub redfish_port: u16,
    /// Redfish over plain HTTP (emulators on an isolated network).
    #[arg(long)]
    pub http: bool,
    /// Presence pings and new Redfish connections per second.
    #[arg(long, default_value_t = 500)]
    pub rate: u32,
    /// Probes in flight at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// How long one address may take to answer, in seconds.
    #[arg(long, default_value_t = 2.0)]
    pub timeout: f64,
    /// Do not read identities with the inventory's credentials (anonymous answers only).
    #[arg(long)]
    pub no_identify: bool,
    /// Identify the BMCs the inventory lacks too, logging in with this credential reference as the
    /// inventory writes one (`env:VAR`, `file:PATH`, `sealed:NAME`; never a password); with --username.
    #[arg(long, value_name = "REF", requires = "username")]
    pub credentials: Option<lifeline_types::CredentialRef>,
    /// The user --credentials logs in as.
    #[arg(long, value_name = "USER", requires = "credentials")]
    pub username: Option<String>,
}

pub async fn run(g: &Global, a: DiscoverArgs) -> CmdResult {
    if !(a.timeout > 0.0 && a.timeout <= 60.0) {
        return Err(Exit::usage(anyhow::anyhow!("--timeout must be between 0 and 60 seconds")));
    }
    let spec = Spec {
        ranges: a.ranges.clone(),
        ipmi: a.protocol != Protocols::Redfish,
        redfish: a.protocol != Protocols::Ipmi,
        ipmi_port: a.ipmi_port,
        redfish_port: a.redfish_port,
        redfish_tls: !a.http,
        concurrency: a.concurrency.max(1),
        rate: a.rate.max(1),
        timeout: Duration::from_secs_f64(a.timeout),
        identify: !a.no_identify,
        unknown: a.credentials.clone().zip(a.username.clone()).map(|(credential, username)| {
            lifeline_engine::discover::UnknownCredentials { username, credential }
        }),
    };
    let l = lifeline(g)?;
    let report = l.discover(&spec).await?;
    let differs = !report.not_in_inventory.is_empty() || !report.not_answering.is_empty();
    if g.json {
        if a.diff {
            print_json(&json!({ "summary": report.summary(), "report": report }))?;
        } else {
            print_json(&report.found)?;
        }
    } else {
        for f in &report.found {
            let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            outln!(
                "{:<16} {:<8} {:<12} {:<24} {:<16} {:<18} {:<14} {}",
                f.address.to_string(),
                f.protocol,
                dash(&f.vendor),
                dash(&f.model),
                dash(&f.serial),
                dash(&f.bmc_mac),
                dash(&f.firmware),
                f.device.clone().unwrap_or_else(|| "(not in inventory)".into())
            );
        }
        if a.diff {
            for ip in &report.not_in_inventory {
                outln!("+ {ip}: answers, not in the inventory");
            }
            for d in &report.not_answering {
                outln!("- {d}: in the inventory, does not answer");
            }
        }
        outln!("{} ({} ms)", report.summary(), report.wall_ms);
    }
    Ok(if a.diff && differs { Code::Failed } else { Code::Ok })
}
