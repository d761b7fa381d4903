//! `lifeline bios show|diff|apply`: Redfish BIOS attributes against a golden profile per role. Arguments
//! in, engine operation, rendering out.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_engine::Acted;
use lifeline_engine::ops::bios::BiosProfile;
use serde_json::Value;

use crate::args::{BmcSel, Global};
use crate::cmd::bmc::select;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;
use crate::prompt::confirm_bmcs;

/// `lifeline bios …`.
#[derive(Debug, Subcommand)]
pub enum BiosCmd {
    /// Each BMC's BIOS attributes in force, and those pending (applied at the next reset).
    Show(BiosArgs),
    /// Each BMC's drift from the profile of its role (exit 1 when any drifts).
    Diff(BiosArgs),
    /// Stage the drifted attributes, reset each drifted host (confirmed power reset), read them back.
    Apply(BiosApplyArgs),
}

#[derive(Debug, Args)]
pub struct BiosArgs {
    #[command(flatten)]
    pub sel: BmcSel,
    /// The golden profile (TOML: `[attributes]`, `[role.ROLE.attributes]`); default: the configuration's
    /// `[[bios-profile]]` entries.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BiosApplyArgs {
    #[command(flatten)]
    pub a: BiosArgs,
    /// Stage only: leave the host running (the settings apply at its next reset).
    #[arg(long)]
    pub no_reset: bool,
    /// Seconds to wait after the reset for the attributes to read back.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    #[arg(long, short = 'y')]
    pub yes: bool,
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header.iter().copied());
    t
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// `--profile FILE`, else the configuration's `[[bios-profile]]` entries.
fn profile(a: &BiosArgs, l: &lifeline_engine::Lifeline) -> Result<BiosProfile, Exit> {
    match &a.profile {
        Some(p) => Ok(BiosProfile::load(p)?),
        None => BiosProfile::from_config(&l.config)?.ok_or_else(|| {
            Exit::usage(anyhow!(
                "--profile FILE is needed (or [[bios-profile]] entries in the configuration)"
            ))
        }),
    }
}

pub async fn run(g: &Global, c: BiosCmd) -> CmdResult {
    match c {
        BiosCmd::Show(a) => show(g, a).await,
        BiosCmd::Diff(a) => diff(g, a).await,
        BiosCmd::Apply(a) => apply(g, a).await,
    }
}

async fn show(g: &Global, a: BiosArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.bios_show(&sel).await?;
    let failed = rows.iter().any(|r| !r.is_ok());
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "attribute", "in force", "pending"]);
        for r in &rows {
            match &r.result {
                Ok(s) => {
                    for (k, v) in &s.attributes {
                        t.add_row(vec![s.bmc.clone(), k.clone(), text(Some(v)), text(s.pending.get(k))]);
                    }
                }
                Err(e) => {
                    t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
                }
            }
        }
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}

async fn diff(g: &Global, a: BiosArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let p = profile(&a, &l)?;
    let sel = select(&l, &a.sel, false)?;
    let rows = l.bios_diff(&sel, &p).await?;
    let failed = rows.iter().any(|r| r.result.as_ref().map_or(true, |d| !d.drift.is_empty()));
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "role", "attribute", "profile", "in force", "pending"]);
        for r in &rows {
            match &r.result {
                Ok(d) if d.drift.is_empty() => {
                    let role = d.role.clone().unwrap_or_else(|| "-".into());
                    t.add_row(vec![d.bmc.clone(), role, format!("({} checked, no drift)", d.checked)]);
                }
                Ok(d) => {
                    for x in &d.drift {
                        t.add_row(vec![
                            d.bmc.clone(),
                            d.role.clone().unwrap_or_else(|| "-".into()),
                            x.attribute.clone(),
                            text(Some(&x.want)),
                            text(x.current.as_ref()),
                            text(x.pending.as_ref()),
                        ]);
                    }
                }
                Err(e) => {
                    t.add_row(vec![r.target.clone(), String::new(), format!("error: {}", e.chain())]);
                }
            }
        }
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}

async fn apply(g: &Global, a: BiosApplyArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let p = profile(&a.a, &l)?;
    let sel = select(&l, &a.a.sel, false)?;
    let what = if a.no_reset {
        "bios apply --no-reset"
    } else {
        "bios apply (stages settings, resets drifted hosts)"
    };
    confirm_bmcs(what, &sel, a.yes)?;
    let rows = l.bios_apply(&sel, &p, !a.no_reset, Duration::from_secs(a.timeout)).await?;
    let failed = rows
        .iter()
        .any(|r| r.result.as_ref().map_or(true, |x| x.fresh().is_some_and(|x| !x.applied && !a.no_reset)));
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "changed", "reset", "drift after", "result"]);
        for r in &rows {
            match &r.result {
                Ok(Acted::Replayed { request_id, .. }) => {
                    t.add_row(vec![r.target.clone(), format!("replay of request {request_id}")]);
                }
                Ok(x) => {
                    if let Some(x) = x.fresh() {
                        let changed = x.changes.keys().cloned().collect::<Vec<_>>().join(", ");
                        let after =
                            x.drift_after.iter().map(|d| d.attribute.clone()).collect::<Vec<_>>().join(", ");
                        let result = match (x.applied, x.changes.is_empty() && x.reset.is_none()) {
                            (true, true) => "no drift, nothing sent",
                            (true, false) => "applied, read back",
                            (false, _) if a.no_reset => "staged (applies at the next reset)",
                            (false, _) => "NOT applied",
                        };
                        t.add_row(vec![
                            x.bmc.clone(),
                            if changed.is_empty() { "-".into() } else { changed },
                            x.reset.clone().unwrap_or_else(|| "-".into()),
                            if after.is_empty() { "-".into() } else { after },
                            result.into(),
                        ]);
                    }
                }
                Err(e) => {
                    t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
                }
            }
        }
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}
