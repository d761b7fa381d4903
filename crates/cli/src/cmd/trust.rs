//! `lifeline bmc trust` and `lifeline backup trust`: re-pinning is never "whatever is there now". Each
//! device's pinned and presented fingerprints are shown first; a re-pin then needs a confirmation that
//! carries the presented fingerprint — typed `y` at a prompt that showed it, or `--fingerprint` given
//! outright (scripts). Without a terminal and without `--fingerprint` nothing is re-pinned (exit 1), and
//! the engine refuses a certificate or key that changed between the look and the confirmation.

use std::io::IsTerminal;

use anyhow::anyhow;
use lifeline_engine::Lifeline;
use lifeline_engine::ops::trust::TrustView;
use lifeline_types::Fingerprint;

use crate::args::{Global, TrustArgs};
use crate::cmd::bmc::{row_error, select};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit, verdict};
use crate::outln;

/// What the operator decided about one device, after it was shown.
enum Decision {
    /// Re-pin, if this is what is presented when the engine looks again.
    Repin(Fingerprint),
    /// Already pinned to what is presented.
    Unchanged,
    /// No terminal to ask on and no `--fingerprint` (said how to confirm).
    NotConfirmed,
}

fn confirmation(g: &Global, v: &TrustView, given: Option<Fingerprint>) -> Result<Decision, Exit> {
    if !g.json {
        let pinned = v.pinned.map_or_else(|| "nothing".to_owned(), |p| p.to_string());
        outln!("{}: pinned    {pinned}", v.device);
        outln!("{}: presented {}", v.device, v.presented);
        if let Some(inv) = v.inventory_pin {
            outln!("{}: inventory {inv} (the inventory pin wins; edit it to change)", v.device);
        }
    }
    if let Some(fp) = given {
        return Ok(Decision::Repin(fp));
    }
    if !v.changes {
        if !g.json {
            outln!("{}: pin unchanged", v.device);
        }
        return Ok(Decision::Unchanged);
    }
    if g.json || !std::io::stdin().is_terminal() {
        eprintln!(
            "{}: not re-pinned: confirm with --fingerprint {} (check it out of band first)",
            v.device, v.presented
        );
        return Ok(Decision::NotConfirmed);
    }
    eprint!("re-pin {} to {}? [y/N] ", v.device, v.presented);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(Exit::internal)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(Decision::Repin(v.presented))
    } else {
        Err(Exit::failed(anyhow!("{}: not confirmed; nothing was re-pinned", v.device)))
    }
}

fn said(g: &Global, device: &str, previous: Option<Fingerprint>, current: Fingerprint) -> Result<(), Exit> {
    if g.json {
        return Ok(());
    }
    match previous {
        Some(prev) if prev != current => outln!("{device}: re-pinned {current} (was {prev})"),
        Some(_) => outln!("{device}: pin unchanged {current}"),
        None => outln!("{device}: pinned {current}"),
    }
    Ok(())
}

/// `lifeline bmc trust SEL [--fingerprint FP]`.
pub async fn bmc(g: &Global, a: TrustArgs) -> CmdResult {
    let l = lifeline(g)?;
    let sel = select(&l, &a.sel, false)?;
    if a.fingerprint.is_some() && sel.bmcs.len() != 1 {
        return Err(Exit::usage(anyhow!(
            "--fingerprint confirms one BMC's certificate; the selection has {} BMCs ({})",
            sel.bmcs.len(),
            sel.names().join(", ")
        )));
    }
    let views = l.bmc_trust_view(&sel).await?;
    let mut failed = false;
    let mut out = Vec::new();
    for (b, r) in sel.bmcs.iter().zip(&views) {
        failed |= row_error(g, r)?;
        let Ok(v) = &r.result else { continue };
        let expected = match confirmation(g, v, a.fingerprint)? {
            Decision::Repin(fp) => fp,
            Decision::Unchanged => continue,
            Decision::NotConfirmed => {
                failed = true;
                out.push(serde_json::json!({ "bmc": v.device, "outcome": "not-confirmed" }));
                continue;
            }
        };
        match l.bmc_trust(b, expected).await {
            Ok(t) => {
                said(g, &t.bmc, t.previous, t.current)?;
                out.push(serde_json::json!({ "bmc": t.bmc, "outcome": "ok", "detail": t }));
            }
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: error: {}", v.device, e.chain());
                }
                out.push(serde_json::json!({ "bmc": v.device, "outcome": "error", "error": e.report() }));
            }
        }
    }
    if g.json {
        print_json(&serde_json::json!({ "views": views, "results": out }))?;
    }
    l.close().await;
    Ok(verdict(failed))
}

/// `lifeline backup trust SWITCH [--fingerprint FP]` (the caller closes `l`).
pub async fn switch(
    g: &Global,
    l: &Lifeline,
    switch: &str,
    given: Option<Fingerprint>,
) -> Result<Code, Exit> {
    let v = l.switch_trust_view(switch).await?;
    let expected = match confirmation(g, &v, given)? {
        Decision::Repin(fp) => fp,
        d => {
            let (outcome, code) = if matches!(d, Decision::Unchanged) {
                ("unchanged", Code::Ok)
            } else {
                ("not-confirmed", Code::Failed)
            };
            if g.json {
                print_json(&serde_json::json!({ "switch": switch, "outcome": outcome, "view": v }))?;
            }
            return Ok(code);
        }
    };
    let r = l.backup_trust(switch, expected).await?;
    said(g, switch, r.previous, r.current)?;
    if g.json {
        print_json(&serde_json::json!({ "switch": switch, "outcome": "ok", "view": v, "detail": r }))?;
    }
    Ok(Code::Ok)
}
