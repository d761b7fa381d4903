//! `lifeline boot`, `bmc reset`, `bmc info`, `sdr`, `fru`: the BMC operations an operator coming from
//! ipmitool or redfishtool reaches for. Each is an engine operation; this module parses and renders.

use std::time::Duration;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_bmc::{BootMode, BootReport, BootRequest, BootSettings, BootTarget};
use lifeline_engine::Acted;
use lifeline_engine::ops::bmc_info::group_by_version;
use lifeline_engine::ops::bmc_reset::BmcResetArgs;

use crate::args::{BmcArgs, BmcSel, Global};
use crate::cmd::bmc::{human_ms, select};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;
use crate::prompt::confirm_bmcs;

/// `lifeline bmc reset|info`.
#[derive(Debug, Subcommand)]
pub enum BmcOpsCmd {
    /// Reset the BMC itself (IPMI Cold/Warm Reset, Redfish Manager.Reset), confirmed by it answering again.
    Reset(BmcResetCli),
    /// BMC and BIOS firmware versions, model, serial and the BMC's MAC; `--group-by version` shows drift.
    Info(BmcInfoCli),
}

#[derive(Debug, Args)]
pub struct BmcResetCli {
    #[command(flatten)]
    pub sel: BmcSel,
    /// Warm Reset (Redfish GracefulRestart) instead of Cold Reset (ForceRestart).
    #[arg(long)]
    pub warm: bool,
    /// Seconds the BMC may take to answer again.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    #[arg(long, short = 'y')]
    pub yes: bool,
}

#[derive(Debug, Args)]
pub struct BmcInfoCli {
    #[command(flatten)]
    pub sel: BmcSel,
    /// `version`: one row per (model, BMC firmware, BIOS) with the BMCs that run it.
    #[arg(long, value_name = "version")]
    pub group_by: Option<GroupBy>,
    /// The GPUs, NVSwitches and GPU baseboards each BMC lists (Redfish), with their health, out of band.
    #[arg(long, conflicts_with = "group_by")]
    pub gpus: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum GroupBy {
    Version,
}

/// `lifeline boot TARGET... DEVICE` / `lifeline boot show TARGET...`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BootArgs {
    #[command(subcommand)]
    pub show: Option<BootShowCmd>,
    /// Targets, then the device: pxe, disk, bios, cdrom, usb (or none to clear the override).
    #[arg(value_name = "TARGET... DEVICE")]
    pub words: Vec<String>,
    /// A BMC not in the inventory (see `power --help`).
    #[arg(long, value_name = "URL")]
    pub bmc: Vec<String>,
    /// The next boot only (the default).
    #[arg(long, conflicts_with = "persistent")]
    pub once: bool,
    /// Every boot from now on.
    #[arg(long)]
    pub persistent: bool,
    #[arg(long, conflicts_with = "legacy")]
    pub uefi: bool,
    #[arg(long)]
    pub legacy: bool,
}

#[derive(Debug, Subcommand)]
pub enum BootShowCmd {
    /// The boot override as each BMC reports it.
    Show(BmcArgs),
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header.iter().copied());
    t
}

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_else(|| "-".into())
}

fn settings_cells(s: &BootSettings) -> [String; 3] {
    let target = s.target.map(|t| t.to_string()).unwrap_or_else(|| "?".into());
    let mode = s.mode.map(|m| format!("{m:?}").to_lowercase()).unwrap_or_else(|| "-".into());
    [format!("{target} ({})", s.bmc_value), s.enabled.clone(), mode]
}

fn parse_device(w: &str) -> Option<BootTarget> {
    Some(match w {
        "pxe" => BootTarget::Pxe,
        "disk" | "hdd" => BootTarget::Disk,
        "bios" | "setup" => BootTarget::Bios,
        "cdrom" | "cd" => BootTarget::Cdrom,
        "usb" => BootTarget::Usb,
        "none" => BootTarget::None,
        _ => return None,
    })
}

pub async fn boot(g: &Global, a: BootArgs) -> CmdResult {
    if let Some(BootShowCmd::Show(s)) = a.show {
        return boot_show(g, s).await;
    }
    let Some((last, targets)) = a.words.split_last() else {
        return Err(Exit::usage(anyhow!(
            "usage: lifeline boot TARGET... pxe|disk|bios|cdrom|usb, or boot show TARGET..."
        )));
    };
    let Some(target) = parse_device(last) else {
        return Err(Exit::usage(anyhow!(
            "`{last}` is not a boot device (pxe, disk, bios, cdrom, usb, none)"
        )));
    };
    let mode = match (a.uefi, a.legacy) {
        (true, _) => Some(BootMode::Uefi),
        (_, true) => Some(BootMode::Legacy),
        _ => None,
    };
    let req = BootRequest { target, persistent: a.persistent, mode };
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &BmcSel { targets: targets.to_vec(), bmc: a.bmc }, false)?;
    let rows = l.boot_set(&sel, req).await?;
    let mut failed = false;
    let mut t = table(&["bmc", "before", "now", "enabled", "mode", "result"]);
    let mut notes = Vec::new();
    for r in &rows {
        match &r.result {
            Ok(Acted::Fresh(p) | Acted::Delayed { value: p, .. }) => {
                failed |= !p.applied();
                t.add_row(report_row(p));
                notes.extend(p.differences.iter().map(|d| format!("{}: {d}", p.bmc)));
            }
            Ok(Acted::Replayed { request_id, .. }) => {
                t.add_row(vec![
                    r.target.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("replay of request {request_id}"),
                ]);
            }
            Err(e) => {
                failed = true;
                t.add_row(vec![
                    r.target.clone(),
                    format!("error: {}", e.chain()),
                    String::new(),
                    String::new(),
                    String::new(),
                    "failed".into(),
                ]);
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    } else {
        outln!("{t}");
        for n in notes {
            outln!("  note: {n}");
        }
    }
    l.close().await;
    Ok(verdict(failed))
}

fn report_row(p: &BootReport) -> Vec<String> {
    let [before, _, _] = settings_cells(&p.before);
    let [now, enabled, mode] = settings_cells(&p.now);
    let result = match p.confirmation {
        lifeline_bmc::BootConfirmation::Confirmed => "confirmed",
        lifeline_bmc::BootConfirmation::DeviceOnly => "device confirmed (see note)",
        lifeline_bmc::BootConfirmation::NotApplied => "NOT applied",
    };
    vec![p.bmc.clone(), before, now, enabled, mode, result.into()]
}

async fn boot_show(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.boot_show(&sel).await?;
    let mut failed = false;
    let mut t = table(&["bmc", "protocol", "device", "enabled", "mode", "raw / allowed"]);
    for r in &rows {
        match &r.result {
            Ok(s) => {
                let [dev, en, mode] = settings_cells(&s.settings);
                let extra = s
                    .settings
                    .raw
                    .clone()
                    .or_else(|| s.settings.allowed.as_ref().map(|a| a.join(",")))
                    .unwrap_or_default();
                t.add_row(vec![s.bmc.clone(), s.protocol.to_string(), dev, en, mode, extra]);
            }
            Err(e) => {
                failed = true;
                t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    } else {
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}

pub async fn bmc(g: &Global, c: BmcOpsCmd) -> CmdResult {
    match c {
        BmcOpsCmd::Reset(a) => reset(g, a).await,
        BmcOpsCmd::Info(a) => info(g, a).await,
    }
}

async fn reset(g: &Global, a: BmcResetCli) -> CmdResult {
    let l = lifeline(g)?;
    let sel = select(&l, &a.sel, false)?;
    let kind = if a.warm { "bmc reset --warm" } else { "bmc reset" };
    confirm_bmcs(kind, &sel, a.yes)?;
    let args = BmcResetArgs { warm: a.warm, protocol: None, wait: Duration::from_secs(a.timeout) };
    let rows = l.bmc_reset_all(&sel, args).await?;
    let mut failed = false;
    let mut t = table(&["bmc", "protocol", "sent", "acknowledged", "answering again", "note"]);
    for r in &rows {
        match &r.result {
            Ok(Acted::Fresh(x) | Acted::Delayed { value: x, .. }) => {
                failed |= !x.answering;
                let back = match x.answered_after_ms {
                    Some(ms) => format!("yes, after {}", human_ms(ms)),
                    None => format!("NO within {} s", a.timeout),
                };
                let note = match (&x.last_error, x.went_away) {
                    (Some(e), _) if !x.answering => e.clone(),
                    (_, true) => "went away, came back".into(),
                    _ => "never seen going away".into(),
                };
                t.add_row(vec![
                    x.bmc.clone(),
                    x.protocol.to_string(),
                    x.sent.clone(),
                    yes_no(x.acknowledged),
                    back,
                    note,
                ]);
            }
            Ok(Acted::Replayed { request_id, .. }) => {
                t.add_row(vec![
                    r.target.clone(),
                    String::new(),
                    "nothing".into(),
                    String::new(),
                    String::new(),
                    format!("replay of request {request_id}"),
                ]);
            }
            Err(e) => {
                failed = true;
                t.add_row(vec![
                    r.target.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("error: {}", e.chain()),
                ]);
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    } else {
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no (lost with the restart?)".into() }
}

async fn info(g: &Global, a: BmcInfoCli) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    if a.gpus {
        return gpus(g, &l, &sel).await;
    }
    let rows = l.bmc_info(&sel).await?;
    let failed = rows.iter().any(|r| !r.is_ok());
    if let Some(GroupBy::Version) = a.group_by {
        let groups = group_by_version(&rows);
        if g.json {
            print_json(&groups)?;
        } else {
            let mut t = table(&["model", "bmc firmware", "bios", "count", "bmcs"]);
            for gr in &groups {
                t.add_row(vec![
                    opt(&gr.model),
                    opt(&gr.bmc_firmware),
                    opt(&gr.bios_version),
                    gr.bmcs.len().to_string(),
                    gr.bmcs.join(", "),
                ]);
            }
            outln!("{t}");
            for r in rows.iter().filter(|r| !r.is_ok()) {
                if let Err(e) = &r.result {
                    outln!("{}: error: {}", r.target, e.chain());
                }
            }
        }
        l.close().await;
        return Ok(verdict(failed));
    }
    if g.json {
        print_json(&rows)?;
        l.close().await;
        return Ok(verdict(failed));
    }
    let mut t =
        table(&["bmc", "protocol", "bmc firmware", "bios", "manufacturer", "model", "serial", "bmc mac"]);
    let mut notes = Vec::new();
    for r in &rows {
        match &r.result {
            Ok(i) => {
                let proto = i.protocol.map(|p| p.to_string()).unwrap_or_default();
                t.add_row(vec![
                    i.bmc.clone(),
                    proto,
                    opt(&i.bmc_firmware),
                    opt(&i.bios_version),
                    opt(&i.manufacturer),
                    opt(&i.model),
                    opt(&i.serial),
                    opt(&i.bmc_mac),
                ]);
                for f in &i.firmware {
                    notes.push(format!(
                        "{}: firmware {} {}",
                        i.bmc,
                        f.name.as_deref().unwrap_or(&f.id),
                        f.version.as_deref().unwrap_or("-")
                    ));
                }
                notes.extend(i.warnings.iter().map(|w| format!("{}: warning: {w}", i.bmc)));
            }
            Err(e) => {
                t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
            }
        }
    }
    outln!("{t}");
    for n in notes {
        outln!("  {n}");
    }
    l.close().await;
    Ok(verdict(failed))
}

/// `lifeline sdr TARGET...`: every sensor as `ipmitool sdr elist` lists it.
pub async fn sdr(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.sdr(&sel).await?;
    let mut failed = false;
    for r in &rows {
        match &r.result {
            Ok(s) if !g.json => {
                outln!("{} ({})", s.bmc, s.protocol);
                let mut t = table(&["sensor", "kind", "status", "reading"]);
                for x in &s.sensors {
                    let reading = match (x.reading, &x.units) {
                        (Some(v), Some(u)) => format!("{v:.2} {u}"),
                        (Some(v), None) => format!("{v:.2}"),
                        (None, _) => x.state.clone().unwrap_or_else(|| "no reading".into()),
                    };
                    t.add_row(vec![x.name.clone(), x.kind.clone(), x.status.to_owned(), reading]);
                }
                outln!("{t}");
                for w in &s.warnings {
                    outln!("  warning: {w}");
                }
            }
            Ok(_) => {}
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: error: {}", r.target, e.chain());
                }
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}

/// `lifeline fru TARGET...`: the FRU fields as `ipmitool fru print` shows them.
pub async fn fru(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.fru(&sel).await?;
    let mut failed = false;
    for r in &rows {
        match &r.result {
            Ok(f) => {
                // No field at all: nothing to identify the hardware by (ipmitool exits 1 there too).
                failed |= f.fields.is_empty();
                if g.json {
                    continue;
                }
                outln!("{} ({}):", f.bmc, f.protocol);
                for (k, v) in &f.fields {
                    outln!(" {k:<22}: {v}");
                }
                for w in &f.warnings {
                    outln!("  warning: {w}");
                }
            }
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: error: {}", r.target, e.chain());
                }
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}

/// `bmc info --gpus`: the health read's GPU view, one row per GPU.
async fn gpus(g: &Global, l: &lifeline_engine::Lifeline, sel: &lifeline_engine::BmcSelection) -> CmdResult {
    let rows = l.health(sel).await?;
    let failed = rows.iter().any(|r| !r.is_ok());
    if g.json {
        let out: Vec<_> = rows
            .iter()
            .map(|r| match &r.result {
                Ok(h) => serde_json::json!({ "target": r.target, "gpus": h.gpus }),
                Err(e) => serde_json::json!({ "target": r.target, "error": e.chain() }),
            })
            .collect();
        print_json(&out)?;
        l.close().await;
        return Ok(verdict(failed));
    }
    let mut t = table(&[
        "bmc",
        "gpu",
        "role",
        "model",
        "health",
        "state",
        "firmware",
        "ecc uncorr",
        "events",
        "logged",
    ]);
    for r in &rows {
        match &r.result {
            Ok(h) if h.gpus.is_empty() => {
                t.add_row(vec![h.bmc.clone(), "(none listed)".into()]);
            }
            Ok(h) => {
                for x in &h.gpus {
                    t.add_row(vec![
                        h.bmc.clone(),
                        x.name.clone(),
                        x.role.to_string(),
                        opt(&x.detail.model),
                        x.health.to_string(),
                        opt(&x.state),
                        opt(&x.detail.firmware_version),
                        x.detail.ecc_uncorrectable.map(|n| n.to_string()).unwrap_or_default(),
                        x.driver_events.join(", "),
                        x.logged_summary(),
                    ]);
                }
            }
            Err(e) => {
                t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
            }
        }
    }
    outln!("{t}");
    l.close().await;
    Ok(verdict(failed))
}
