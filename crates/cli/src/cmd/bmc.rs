//! `lifeline power|health|sel|sweep|bmc trust|audit bmc`: the operator's hands on the BMCs. Each verb is an
//! engine operation; this module parses, confirms and renders.

use std::io::IsTerminal;
use std::time::Duration;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_bmc::{SweepOptions, SweepRow};
use lifeline_engine::ops::sweep::{Sweep, health_ok};
use lifeline_engine::{Acted, BmcSelection, BmcUrl, Lifeline, Row};
use lifeline_types::PowerAction;

use crate::args::{BmcArgs, BmcCmd, BmcSel, Global, PowerArgs, PowerVerb, SelArgs, SweepArgs};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;
use crate::prompt::{bmc_password, confirm, confirm_bmcs};

pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header.iter().copied());
    t
}

/// The BMCs named on the command line (the password of `--bmc` URLs asked once).
pub fn select(l: &Lifeline, sel: &BmcSel, default_all: bool) -> Result<BmcSelection, Exit> {
    let urls = if sel.bmc.is_empty() {
        Vec::new()
    } else {
        let password = bmc_password()?;
        sel.bmc.iter().map(|u| BmcUrl { url: u.clone(), password: password.clone() }).collect()
    };
    let s = l.select_bmcs(&sel.targets, &urls, default_all)?;
    if !s.skipped.is_empty() {
        eprintln!("note: {} selected device(s) have no BMC: {}", s.skipped.len(), s.skipped.join(", "));
    }
    Ok(s)
}

/// Prints a per-target error row (unless JSON) and says whether it failed.
pub(crate) fn row_error<T>(g: &Global, r: &Row<T>) -> Result<bool, Exit> {
    if let Err(e) = &r.result {
        if !g.json {
            outln!("{}: error: {}", r.target, e.chain());
        }
        return Ok(true);
    }
    Ok(false)
}

/// A duration for people: `850 ms`, `7.2 s`, `3 min 5 s`.
pub fn human_ms(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

pub async fn power(g: &Global, a: PowerArgs) -> CmdResult {
    let action = match a.verb {
        PowerVerb::Status => None,
        PowerVerb::On => Some(PowerAction::On),
        PowerVerb::Off => Some(PowerAction::Off),
        PowerVerb::Cycle => Some(PowerAction::Cycle),
        PowerVerb::Reset => Some(PowerAction::Reset),
        PowerVerb::Soft => Some(PowerAction::Soft),
    };
    let timeout = Duration::from_secs(a.timeout);
    let l = lifeline(g)?.with_bmc_options(|o| {
        o.fanout = 64;
        o.power.timeout = timeout;
    });
    let sel = select(&l, &a.sel, false)?;
    let Some(act) = action else {
        let rows = l.power_status(&sel).await?;
        let mut failed = false;
        let mut t = table(&["bmc", "power"]);
        for r in &rows {
            match &r.result {
                Ok(s) => {
                    t.add_row(vec![s.bmc.clone(), s.power.to_string()]);
                }
                Err(e) => {
                    failed = true;
                    t.add_row(vec![r.target.clone(), format!("error: {}", e.chain())]);
                }
            }
        }
        if g.json {
            print_json(&rows)?
        } else {
            outln!("{t}")
        }
        l.close().await;
        return Ok(verdict(failed));
    };
    if act.is_destructive() {
        confirm_bmcs(&format!("power {act}"), &sel, a.yes)?;
    }
    let rows = l.power(&sel, act).await?;
    crate::out::acted_warnings(&rows);
    let mut failed = false;
    let mut t = table(&["bmc", "before", "observed", "sent", "confirmation", "took", "note"]);
    for r in &rows {
        match &r.result {
            Ok(Acted::Fresh(p) | Acted::Delayed { value: p, .. }) => {
                failed |= !p.confirmed;
                t.add_row(vec![
                    p.bmc.clone(),
                    p.before.to_string(),
                    p.observed.to_string(),
                    if p.action_sent { p.commands.join(", ") } else { "nothing".into() },
                    p.confirmation.describe().to_owned(),
                    human_ms(p.total_ms),
                    p.note.clone().unwrap_or_default(),
                ]);
            }
            Ok(o @ Acted::Replayed { request_id, coalesced, .. }) => {
                let confirmed = lifeline_engine::ops::power::PowerOutcome::confirmed(o);
                failed |= !confirmed;
                let how = if *coalesced { "done by request" } else { "replay of request" };
                t.add_row(vec![
                    r.target.clone(),
                    String::new(),
                    String::new(),
                    "nothing".into(),
                    if confirmed { "confirmed earlier".into() } else { "not confirmed earlier".into() },
                    String::new(),
                    format!("{how} {request_id}"),
                ]);
            }
            Err(e) => {
                failed = true;
                let mut row = vec![r.target.clone(), format!("error: {}", e.chain())];
                row.extend(std::iter::repeat_n(String::new(), 5));
                t.add_row(row);
            }
        }
    }
    if g.json {
        print_json(&rows)?
    } else {
        outln!("{t}")
    }
    l.close().await;
    Ok(verdict(failed))
}

pub async fn health(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    let rows = l.health(&sel).await?;
    let mut failed = false;
    for r in &rows {
        failed |= row_error(g, r)?;
        let Ok(h) = &r.result else { continue };
        failed |= !health_ok(h.health);
        if g.json {
            continue;
        }
        outln!("{} ({}): {}", h.bmc, h.protocol, h.health);
        for r in &h.reasons {
            outln!("  because {r}");
        }
        if let Some(d) = &h.disagreement {
            outln!("  note: {d}");
        }
        let mut t = table(&["chassis", "sensor", "kind", "reading", "health", "state"]);
        for s in &h.sensors {
            // The reading with the precision the BMC gave (1.059 V, not 1.1 V).
            let mut reading = match (s.reading, &s.units) {
                (Some(v), Some(u)) => format!("{v} {u}"),
                (Some(v), None) => format!("{v}"),
                _ => "-".into(),
            };
            if let Some(w) = s.output_watts {
                reading = format!("{reading} (out {w:.0} W)");
            }
            if let Some(l) = &s.line_input {
                reading = format!("{reading} input {l}");
            }
            t.add_row(vec![
                s.chassis.clone().unwrap_or_default(),
                s.name.clone(),
                s.kind.clone(),
                reading,
                s.health.to_string(),
                s.state.clone().unwrap_or_default(),
            ]);
        }
        outln!("{t}");
        for x in &h.gpus {
            let events = if x.driver_events.is_empty() {
                String::new()
            } else {
                format!(" {}", x.driver_events.join(", "))
            };
            let logged = if x.logged_events.is_empty() {
                String::new()
            } else {
                format!("; logged {}", x.logged_summary())
            };
            outln!("  {} {}: {}{events}{logged}", x.role, x.name, x.health);
        }
        for c in &h.conditions {
            let sev = c.severity.map(|s| s.to_string()).unwrap_or_else(|| "?".into());
            let what = c.message.as_deref().or(c.message_id.as_deref()).unwrap_or("");
            outln!("  condition [{sev}] {}: {what}", c.origin);
        }
        for w in &h.warnings {
            outln!("  warning: {w}");
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}

pub async fn sel(g: &Global, a: SelArgs) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let sel = select(&l, &a.sel, false)?;
    if a.clear {
        confirm(&format!("clear the SEL of {}?", sel.names().join(", ")), a.yes)?;
        let rows = l.sel_clear(&sel).await?;
        let mut failed = false;
        for r in &rows {
            failed |= row_error(g, r)?;
            if r.is_ok() && !g.json {
                outln!("{}: SEL cleared", r.target);
            }
        }
        if g.json {
            print_json(&rows)?;
        }
        l.close().await;
        return Ok(verdict(failed));
    }
    let rows = l.sel(&sel, a.newest).await?;
    let mut failed = false;
    for r in &rows {
        failed |= row_error(g, r)?;
        let Ok(log) = &r.result else { continue };
        // A BMC with no event log service cannot say whether anything went wrong: not a clean "0 entries".
        failed |= log.no_log_service;
        if g.json {
            continue;
        }
        if log.no_log_service {
            outln!(
                "{} ({}): no event log service found (no SEL, EventLog or vendor log)",
                log.bmc,
                log.protocol
            );
        } else {
            outln!(
                "{} ({}): {} entries shown{}",
                log.bmc,
                log.protocol,
                log.entries.len(),
                log.total.map(|t| format!(" of {t}")).unwrap_or_default()
            );
        }
        for w in &log.warnings {
            outln!("  warning: {w}");
        }
        if log.entries.is_empty() {
            continue;
        }
        let mut tb = table(&["id", "time", "severity", "log", "sensor", "message"]);
        for e in &log.entries {
            let time = e.time.map(|t| t.to_rfc3339()).or(e.time_note.clone()).unwrap_or_default();
            tb.add_row(vec![
                e.id.clone(),
                time,
                e.severity.to_string(),
                e.log.clone().unwrap_or_default(),
                e.sensor.clone().unwrap_or_default(),
                e.message.clone(),
            ]);
        }
        outln!("{tb}");
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}

/// One table for the whole fleet; also used by the demo's live view.
pub fn sweep_table(rows: &[SweepRow]) -> Table {
    let mut t = table(&["bmc", "address", "proto", "power", "health", "alerts", "newest event", "ms"]);
    for r in rows {
        let newest = r.events.first().map(|e| format!("[{}] {}", e.severity, e.message)).unwrap_or_default();
        let alerts = if r.errors.is_empty() { r.alerts.join("; ") } else { r.errors.join("; ") };
        t.add_row(vec![
            r.name.clone(),
            r.address.clone(),
            r.protocol.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            r.power.map(|p| p.to_string()).unwrap_or_else(|| "?".into()),
            r.health.map(|h| h.to_string()).unwrap_or_else(|| "?".into()),
            truncate(&alerts, 60),
            truncate(&newest, 50),
            r.elapsed_ms.to_string(),
        ]);
    }
    t
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

pub async fn sweep(g: &Global, a: SweepArgs) -> CmdResult {
    let l = lifeline(g)?;
    let sel = select(&l, &a.sel, true)?;
    // Sized to the fleet before the pool is built (the first BMC contact builds it).
    let fanout = a.fanout.unwrap_or_else(|| lifeline_bmc::fanout_for_fleet(sel.bmcs.len())).max(1);
    let l = l.with_bmc_options(|o| o.fanout = fanout);
    let bar = (std::io::stderr().is_terminal() && !g.json).then(|| {
        let b = indicatif::ProgressBar::new(sel.bmcs.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} sweeping [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let opts = SweepOptions {
        events: a.events,
        per_bmc_timeout: Duration::from_secs(a.per_bmc_timeout.max(1)),
        ..SweepOptions::default()
    };
    // Rows are kept as they arrive so that Ctrl-C still shows what was collected.
    let seen = std::sync::Mutex::new(Vec::<SweepRow>::new());
    let run = l.sweep(&sel, &opts, |row, prog| {
        if let Some(b) = &bar {
            b.set_position(prog.done as u64);
            b.set_message(row.name.clone());
        }
        seen.lock().unwrap_or_else(|p| p.into_inner()).push(row.clone());
    });
    let result = tokio::select! {
        r = run => Some(r?),
        _ = tokio::signal::ctrl_c() => None,
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let sweep = match result {
        Some(s) => s,
        None => Sweep::new(seen.into_inner().unwrap_or_else(|p| p.into_inner()), false),
    };
    if !sweep.complete {
        eprintln!("INCOMPLETE: interrupted after {} of {} BMCs", sweep.rows.len(), sel.bmcs.len());
    }
    if g.json {
        print_json(&sweep.rows)?;
    } else {
        outln!("{}", sweep_table(&sweep.rows));
        outln!("{} BMCs, {} unreachable, failing or critical", sweep.rows.len(), sweep.failing);
        for r in sweep.rows.iter().filter(|r| r.hint.is_some()) {
            outln!("{}: {}", r.name, r.hint.as_deref().unwrap_or_default());
        }
    }
    l.close().await;
    Ok(verdict(sweep.failing > 0 || !sweep.complete))
}

pub async fn bmc(g: &Global, c: BmcCmd) -> CmdResult {
    match c {
        BmcCmd::Ops(c) => crate::cmd::bmcops::bmc(g, c).await,
        BmcCmd::Users(a) => crate::cmd::accounts::users(g, a).await,
        BmcCmd::Rotate(a) => crate::cmd::accounts::rotate(g, a).await,
        BmcCmd::Credentials(a) => crate::cmd::accounts::credentials(g, a).await,
        BmcCmd::Subscribe(a) => crate::cmd::accounts::subscribe(g, a).await,
        BmcCmd::Trust(a) => crate::cmd::trust::bmc(g, a).await,
    }
}

pub async fn hygiene(g: &Global, sel: BmcSel, max_attempts: usize) -> CmdResult {
    if !sel.bmc.is_empty() {
        return Err(Exit::usage(anyhow::anyhow!(
            "`audit bmc` tries default passwords and therefore only runs against inventory BMCs, not --bmc URLs"
        )));
    }
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 32);
    let s = select(&l, &sel, true)?;
    let rows = l.bmc_hygiene(&s, max_attempts).await?;
    let bad = rows.iter().filter(|r| r.worst() != lifeline_types::Health::Ok).count();
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "verdict", "attempts", "findings"]);
        for row in &rows {
            let findings: Vec<String> = row
                .findings
                .iter()
                .map(|f| {
                    serde_json::to_value(f)
                        .map(|v| v["message"].as_str().unwrap_or("").to_owned())
                        .unwrap_or_default()
                })
                .collect();
            let mut f = findings.join("; ");
            if !row.errors.is_empty() {
                f = format!("{f} errors: {}", row.errors.join("; "));
            }
            t.add_row(vec![
                row.bmc.clone(),
                row.worst().to_string(),
                format!("{} ({} failed)", row.attempts.len(), row.failed_attempts),
                f,
            ]);
        }
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(bad > 0))
}
