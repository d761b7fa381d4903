//! `lifeline media insert|eject|show`: Redfish virtual media, for reinstalling a node whose OS is broken
//! and whose PXE path is not there. Arguments in, engine operation, rendering out.

use anyhow::anyhow;
use clap::{Args, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_bmc::media::MediaUrl;
use lifeline_bmc::{ImageCredentials, MediaReport, MediaRequest, MediaSlot};
use lifeline_engine::Acted;

use crate::args::{BmcArgs, BmcSel, Global};
use crate::cmd::bmc::select;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;
use crate::prompt::confirm_bmcs;

#[path = "media_serve.rs"]
mod serve;

/// `lifeline media …`.
#[derive(Debug, Subcommand)]
pub enum MediaCmd {
    /// Insert an image (http, https, nfs, smb URL, or `--serve FILE` from this host) into each BMC's
    /// virtual CD, read back; `--boot-once` also sets the next boot (only) to the CD.
    Insert(MediaInsertArgs),
    /// Eject whatever media each BMC holds, read back.
    Eject(BmcArgs),
    /// Each BMC's virtual media slots: image, inserted, write protection, what it offers.
    Show(BmcArgs),
}

#[derive(Debug, Args)]
pub struct MediaInsertArgs {
    /// Targets, then the image URL (no URL with `--serve`).
    #[arg(value_name = "TARGET... URL", required = true)]
    pub words: Vec<String>,
    /// Serve FILE from this host (`[image-server]` in the config: HTTPS on the OOB address, a token per
    /// BMC) and insert its URL; keeps serving until the tokens expire or Ctrl-C.
    #[arg(long, value_name = "FILE")]
    pub serve: Option<std::path::PathBuf>,
    /// A BMC not in the inventory (see `power --help`).
    #[arg(long, value_name = "URL")]
    pub bmc: Vec<String>,
    /// Then boot the host from the CD at its next boot (once; the override is read back).
    #[arg(long)]
    pub boot_once: bool,
    /// Insert the image writable (default: write-protected).
    #[arg(long)]
    pub writable: bool,
    /// The image server's user; the password comes from LIFELINE_IMAGE_PASSWORD, never the command line.
    #[arg(long, value_name = "USER")]
    pub image_user: Option<String>,
    #[arg(long, short = 'y')]
    pub yes: bool,
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header.iter().copied());
    t
}

fn yes_no(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => "-".into(),
    }
}

fn slot_cells(s: &MediaSlot) -> [String; 3] {
    [s.id.clone(), s.image.clone().unwrap_or_else(|| "-".into()), yes_no(s.inserted)]
}

pub async fn run(g: &Global, c: MediaCmd) -> CmdResult {
    match c {
        MediaCmd::Insert(a) => insert(g, a).await,
        MediaCmd::Eject(a) => eject(g, a).await,
        MediaCmd::Show(a) => show(g, a).await,
    }
}

async fn insert(g: &Global, a: MediaInsertArgs) -> CmdResult {
    if let Some(file) = a.serve.clone() {
        return serve::insert_served(g, a, &file).await;
    }
    let Some((url, targets)) = a.words.split_last() else {
        return Err(Exit::usage(anyhow!("usage: lifeline media insert TARGET... URL")));
    };
    let image = MediaUrl::parse(url).map_err(|e| Exit::usage(anyhow!("{e}")))?;
    if targets.is_empty() && a.bmc.is_empty() {
        return Err(Exit::usage(anyhow!("usage: lifeline media insert TARGET... URL (no target given)")));
    }
    let credentials = image_credentials(a.image_user)?;
    let req = MediaRequest { image, boot_once: a.boot_once, write_protected: !a.writable, credentials };
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &BmcSel { targets: targets.to_vec(), bmc: a.bmc }, false)?;
    let what = if a.boot_once { "media insert --boot-once" } else { "media insert" };
    confirm_bmcs(what, &sel, a.yes)?;
    let rows = l.media_insert(&sel, req).await?;
    render_acts(g, &rows)?;
    l.close().await;
    Ok(verdict(any_failed(&rows)))
}

fn image_credentials(user: Option<String>) -> Result<Option<ImageCredentials>, Exit> {
    match user {
        Some(username) => {
            let password = std::env::var("LIFELINE_IMAGE_PASSWORD").map_err(|_| {
                Exit::usage(anyhow!("--image-user needs the password in LIFELINE_IMAGE_PASSWORD"))
            })?;
            Ok(Some(ImageCredentials { username, password }))
        }
        None => Ok(None),
    }
}

fn any_failed(rows: &[lifeline_engine::ops::Row<Acted<MediaReport>>]) -> bool {
    rows.iter().any(|r| r.result.as_ref().map_or(true, |a| a.fresh().is_some_and(|x| !x.confirmed)))
}

async fn eject(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.media_eject(&sel).await?;
    render_acts(g, &rows)?;
    l.close().await;
    Ok(verdict(any_failed(&rows)))
}

fn report_row(x: &MediaReport) -> Vec<String> {
    let slot = x.slot.clone().unwrap_or_else(|| "-".into());
    let now = x.now.as_ref().map(|s| slot_cells(s)[1].clone()).unwrap_or_else(|| "-".into());
    let boot = match &x.boot {
        Some(b) => format!("{} ({})", b.now.bmc_value, b.now.enabled),
        None => "-".into(),
    };
    let result = match (x.confirmed, x.sent.is_empty()) {
        (true, true) => "confirmed (nothing to send)",
        (true, false) => "confirmed",
        (false, _) => "NOT confirmed",
    };
    vec![x.bmc.clone(), x.action.into(), slot, now, boot, result.into()]
}

pub(crate) fn render_acts(
    g: &Global,
    rows: &[lifeline_engine::ops::Row<Acted<MediaReport>>],
) -> Result<(), Exit> {
    if g.json {
        return print_json(&rows);
    }
    let mut t = table(&["bmc", "action", "slot", "image now", "next boot", "result"]);
    let mut notes = Vec::new();
    for r in rows {
        match &r.result {
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
            Ok(a) => {
                if let Some(x) = a.fresh() {
                    t.add_row(report_row(x));
                    notes.extend(x.differences.iter().map(|d| format!("{}: {d}", x.bmc)));
                }
                notes.extend(a.warning().map(|w| format!("{}: {w}", r.target)));
            }
            Err(e) => {
                t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
            }
        }
    }
    outln!("{t}");
    for n in notes {
        outln!("  note: {n}");
    }
    Ok(())
}

async fn show(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.media_show(&sel).await?;
    let failed = rows.iter().any(|r| !r.is_ok());
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "where", "slot", "image", "inserted", "write-protected", "types"]);
        for r in &rows {
            match &r.result {
                Ok(s) => {
                    for m in &s.slots {
                        let [id, image, inserted] = slot_cells(m);
                        t.add_row(vec![
                            s.bmc.clone(),
                            s.collection.owner.into(),
                            id,
                            image,
                            inserted,
                            yes_no(m.write_protected),
                            m.media_types.join(","),
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
