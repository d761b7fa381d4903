//! `lifeline firmware plan|apply`: firmware rollouts in waves under the blast-radius guard. `plan` reads
//! each BMC's components and writes a plan (JSON) to review; `apply PLAN` runs it (or resumes it after a
//! crash). Arguments in, engine operation, rendering out (`docs/firmware.md`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_bmc::firmware::{Component, FirmwareImage};
use lifeline_engine::ops::firmware::{ApplyOptions, Change, FirmwarePlan, PlanRequest, RolloutReport};

use crate::args::{BmcSel, Global};
use crate::cmd::bmc::select;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;
use crate::prompt::confirm_bmcs;

/// `lifeline firmware …`.
#[derive(Debug, Subcommand)]
pub enum FirmwareCmd {
    /// Read each BMC's firmware components and plan a rollout in waves (a canary first); `--json` prints
    /// the plan document, `--out FILE` writes it for `firmware apply`.
    Plan(PlanArgs),
    /// Apply a plan (or resume one that was interrupted): wave by wave, stopping after the first wave with
    /// a failure; success is the new version read back from each BMC.
    Apply(ApplyArgs),
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub sel: BmcSel,
    /// Which firmware: bmc, bios, nic or gpu.
    #[arg(long, value_name = "KIND")]
    pub component: Component,
    /// The image: a file (pushed, streamed) or an http(s) URL (the BMC pulls it with SimpleUpdate).
    #[arg(long, value_name = "FILE|URL")]
    pub image: Option<String>,
    /// The version the image carries: what must read back for an update to count.
    #[arg(long, value_name = "V")]
    pub version: String,
    /// Plan downgrades (and versions that cannot be compared) instead of refusing them.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Write the plan here (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The plan file `firmware plan --out` wrote.
    pub plan: PathBuf,
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Seconds between task monitor polls.
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub poll: f64,
    /// Seconds an update's task may run; also how long the new version may take to read back.
    #[arg(long, value_name = "S", default_value_t = 1800)]
    pub timeout: u64,
}

pub async fn run(g: &Global, c: FirmwareCmd) -> CmdResult {
    match c {
        FirmwareCmd::Plan(a) => plan(g, a).await,
        FirmwareCmd::Apply(a) => apply(g, a).await,
    }
}

fn image(s: &str) -> Result<FirmwareImage, Exit> {
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let authority =
            s.split_once("://").map_or("", |(_, r)| r.split(['/', '?', '#']).next().unwrap_or(""));
        if authority.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) || s.len() > 1024 {
            return Err(Exit::usage(anyhow!(
                "--image {s}: not a URL with a host (no spaces, at most 1024 bytes)"
            )));
        }
        if authority.contains('@') {
            return Err(Exit::usage(anyhow!(
                "--image {s}: no user:password@ in the URL (a BMC shows the URL to anyone who can read it)"
            )));
        }
        return Ok(FirmwareImage::Url(s.to_owned()));
    }
    if s.contains("://") {
        return Err(Exit::usage(anyhow!("--image {s}: a file, or an http(s) URL")));
    }
    let p = std::path::absolute(s).map_err(|e| Exit::usage(anyhow!("--image {s}: {e}")))?;
    Ok(FirmwareImage::File(p))
}

fn change(c: Change) -> &'static str {
    match c {
        Change::Update => "update",
        Change::Same => "same",
        Change::Downgrade => "downgrade",
        Change::Refused => "REFUSED",
        Change::Skipped => "skipped",
    }
}

async fn plan(g: &Global, a: PlanArgs) -> CmdResult {
    let image = a.image.as_deref().map(image).transpose()?;
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let req =
        PlanRequest { component: a.component, version: a.version, image, allow_downgrade: a.allow_downgrade };
    let p = l.firmware_plan(&sel, req).await?;
    l.close().await;
    if let Some(out) = &a.out {
        let text = serde_json::to_string_pretty(&p).map_err(|e| Exit::failed(anyhow!(e)))?;
        std::fs::write(out, text + "\n")
            .map_err(|e| Exit::failed(anyhow!("writing {}: {e}", out.display())))?;
    }
    if g.json {
        print_json(&p)?;
    } else {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED).set_header(["bmc", "rack", "current", "change", "wave", "note"]);
        for x in &p.targets {
            t.add_row(vec![
                x.bmc.clone(),
                x.rack.clone().unwrap_or_default(),
                x.current.clone().unwrap_or_else(|| "-".into()),
                change(x.change).into(),
                x.wave.map_or("-".into(), |w| if w == 0 { "0 (canary)".into() } else { w.to_string() }),
                x.note.clone().unwrap_or_default(),
            ]);
        }
        outln!("plan {}: {} to {}", p.id, p.component.as_str(), p.version);
        outln!("{t}");
        outln!(
            "{} wave(s) (limits: {} per wave, {} per rack, {} per domain){}",
            p.waves.len(),
            p.limits.per_wave,
            p.limits.per_rack,
            p.limits.per_domain,
            a.out.as_ref().map_or(String::new(), |o| format!("; written to {}", o.display()))
        );
    }
    let refused = p.targets.iter().any(|t| matches!(t.change, Change::Refused | Change::Skipped));
    Ok(verdict(refused))
}

fn render(r: &RolloutReport) -> Result<(), Exit> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(["wave", "bmc", "state", "before", "after", "detail"]);
    for x in &r.targets {
        t.add_row(vec![
            x.wave.to_string(),
            x.bmc.clone(),
            x.state.clone(),
            x.before.clone().unwrap_or_default(),
            x.after.clone().unwrap_or_default(),
            x.detail.clone().unwrap_or_default(),
        ]);
    }
    outln!(
        "rollout {} ({} to {}): {}{}",
        r.rollout,
        r.component.as_str(),
        r.version,
        r.state,
        if r.resumed { " (resumed)" } else { "" }
    );
    outln!("{t}");
    for f in &r.failed {
        outln!("  failed: {f}");
    }
    Ok(())
}

async fn apply(g: &Global, a: ApplyArgs) -> CmdResult {
    let p = FirmwarePlan::load(&a.plan)?;
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = l.select_bmcs(&p.waves.concat(), &[], false)?;
    confirm_bmcs(&format!("firmware apply ({} to {})", p.component.as_str(), p.version), &sel, a.yes)?;
    let opts = ApplyOptions {
        poll: Duration::from_secs_f64(a.poll.clamp(0.05, 60.0)),
        task_timeout: Duration::from_secs(a.timeout),
        confirm_timeout: Duration::from_secs(a.timeout),
        ..ApplyOptions::default()
    };
    let r = l.firmware_apply(&p, opts).await?;
    l.close().await;
    if g.json {
        print_json(&r)?;
    } else {
        render(&r)?;
    }
    Ok(verdict(r.state != "done"))
}
