//! `lifeline power|health|sel|sweep|bmc trust|audit bmc`: the operator's hands on the BMCs.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_bmc::{BmcOptions, BmcPool, HygieneOptions, SweepOptions, SweepRow, TlsPolicy};
use lifeline_store::Store;
use lifeline_types::{Health, PowerAction};
use serde_json::json;

use crate::adapters::{StoreAudit, StoreMemory, StorePins};
use crate::args::{BmcArgs, BmcCmd, Global, PowerArgs, PowerVerb, SelArgs, SweepArgs};
use crate::cmd::{actor, print_json};
use crate::config::open_store;
use crate::exit::{CmdResult, Code, Exit};
use crate::targets::{Resolved, confirm, resolve};

pub fn pool(store: &Store, fanout: usize) -> BmcPool {
    let opts = BmcOptions {
        fanout,
        tls: TlsPolicy::Pin(Arc::new(StorePins(store.clone()))),
        ..BmcOptions::default()
    };
    let audit = Arc::new(StoreAudit { store: store.clone(), actor: actor() });
    BmcPool::with_memory(opts, audit, Arc::new(StoreMemory(store.clone())))
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header.iter().copied());
    t
}

fn note_skipped(r: &Resolved) {
    if !r.skipped.is_empty() {
        eprintln!("note: {} selected device(s) have no BMC: {}", r.skipped.len(), r.skipped.join(", "));
    }
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    lifeline_bmc::error_chain(e)
}

/// One BMC's failure in a per-BMC listing: printed (unless JSON) and kept for the JSON output.
fn report_error(
    g: &Global,
    bmc: &str,
    e: &(dyn std::error::Error + 'static),
    out: &mut Vec<serde_json::Value>,
) {
    let msg = chain(e);
    if !g.json {
        println!("{bmc}: error: {msg}");
    }
    out.push(json!({ "bmc": bmc, "error": msg }));
}

pub async fn power(g: &Global, a: PowerArgs) -> CmdResult {
    let r = resolve(g, &a.sel, false)?;
    note_skipped(&r);
    let action = match a.verb {
        PowerVerb::Status => None,
        PowerVerb::On => Some(PowerAction::On),
        PowerVerb::Off => Some(PowerAction::Off),
        PowerVerb::Cycle => Some(PowerAction::Cycle),
        PowerVerb::Reset => Some(PowerAction::Reset),
        PowerVerb::Soft => Some(PowerAction::Soft),
    };
    if let Some(act) = action
        && act.is_destructive()
    {
        let names: Vec<&str> = r.targets.iter().map(|t| t.name.as_str()).collect();
        confirm(&format!("power {act} {} BMC(s): {}?", names.len(), names.join(", ")), a.yes)?;
    }
    let store = open_store(g).await?;
    let mut opts_pool = pool(&store, 64);
    if action.is_some() {
        let mut o = opts_pool.options().clone();
        o.power.timeout = Duration::from_secs(a.timeout);
        opts_pool = BmcPool::with_memory(
            o,
            Arc::new(StoreAudit { store: store.clone(), actor: actor() }),
            Arc::new(StoreMemory(store.clone())),
        );
    }
    let p = opts_pool;
    let mut set = tokio::task::JoinSet::new();
    for (i, t) in r.targets.iter().cloned().enumerate() {
        let bmc = p.bmc(t);
        set.spawn(async move {
            let res = match action {
                None => bmc.power_state().await.map(|s| json!({ "bmc": bmc.name(), "power": s })),
                Some(act) => bmc.power(act, Some(uuid::Uuid::new_v4().to_string())).await.map(|r| json!(r)),
            };
            (i, bmc.name().to_owned(), res)
        });
    }
    let mut rows = vec![None; r.targets.len()];
    while let Some(j) = set.join_next().await {
        let (i, name, res) = j.map_err(Exit::from)?;
        rows[i] = Some((name, res.map_err(|e| chain(&e))));
    }
    let rows: Vec<_> = rows.into_iter().flatten().collect();
    let mut failed = false;
    let mut out = Vec::new();
    let mut t = table(match action {
        None => &["bmc", "power"],
        Some(_) => &["bmc", "before", "requested", "observed", "sent", "confirmed", "ms"],
    });
    for (name, res) in &rows {
        match res {
            Ok(v) => {
                let ok = action.is_none() || v["confirmed"] == true;
                failed |= !ok;
                out.push(v.clone());
                match action {
                    None => t.add_row(vec![name.clone(), v["power"].as_str().unwrap_or("?").to_owned()]),
                    Some(_) => t.add_row(vec![
                        name.clone(),
                        v["before"].as_str().unwrap_or("?").to_owned(),
                        v["requested"].as_str().unwrap_or("?").to_owned(),
                        v["observed"].as_str().unwrap_or("?").to_owned(),
                        v["action_sent"].to_string(),
                        v["confirmed"].to_string(),
                        v["total_ms"].to_string(),
                    ]),
                };
            }
            Err(e) => {
                failed = true;
                out.push(json!({ "bmc": name, "error": e }));
                let mut row = vec![name.clone(), format!("error: {e}")];
                if action.is_some() {
                    row.extend(std::iter::repeat_n(String::new(), 5));
                }
                t.add_row(row);
            }
        }
    }
    if g.json {
        print_json(&out)?
    } else {
        println!("{t}")
    }
    store.close().await;
    Ok(if failed { Code::Failed } else { Code::Ok })
}

pub async fn health(g: &Global, a: BmcArgs) -> CmdResult {
    let r = resolve(g, &a.sel, false)?;
    note_skipped(&r);
    let store = open_store(g).await?;
    let p = pool(&store, 64);
    let mut out = Vec::new();
    let mut failed = false;
    for t in r.targets {
        let bmc = p.bmc(t);
        match bmc.health().await {
            Ok(h) => {
                let _ = store.observe(bmc.name(), "health", &json!(h)).await;
                failed |= matches!(h.health, Health::Critical);
                if !g.json {
                    println!("{} ({}): {}", h.bmc, h.protocol, h.health);
                    let mut t = table(&["sensor", "kind", "reading", "health", "state"]);
                    for s in &h.sensors {
                        let reading = match (s.reading, &s.units) {
                            (Some(v), Some(u)) => format!("{v:.1} {u}"),
                            (Some(v), None) => format!("{v:.1}"),
                            _ => "-".into(),
                        };
                        t.add_row(vec![
                            s.name.clone(),
                            s.kind.clone(),
                            reading,
                            s.health.to_string(),
                            s.state.clone().unwrap_or_default(),
                        ]);
                    }
                    println!("{t}");
                    for w in &h.warnings {
                        println!("  warning: {w}");
                    }
                }
                out.push(json!(h));
            }
            Err(e) => {
                failed = true;
                report_error(g, bmc.name(), &e, &mut out);
            }
        }
    }
    if g.json {
        print_json(&out)?;
    }
    store.close().await;
    Ok(if failed { Code::Failed } else { Code::Ok })
}

pub async fn sel(g: &Global, a: SelArgs) -> CmdResult {
    let r = resolve(g, &a.sel, false)?;
    if a.clear {
        let names: Vec<&str> = r.targets.iter().map(|t| t.name.as_str()).collect();
        confirm(&format!("clear the SEL of {}?", names.join(", ")), a.yes)?;
    }
    let store = open_store(g).await?;
    let p = pool(&store, 64);
    let mut out = Vec::new();
    let mut failed = false;
    for t in r.targets {
        let bmc = p.bmc(t);
        let res = if a.clear {
            bmc.clear_events().await.map(|_| None)
        } else {
            bmc.events(a.newest).await.map(Some)
        };
        match res {
            Ok(Some(log)) => {
                if !g.json {
                    println!(
                        "{} ({}): {} entries shown{}",
                        log.bmc,
                        log.protocol,
                        log.entries.len(),
                        log.total.map(|t| format!(" of {t}")).unwrap_or_default()
                    );
                    let mut tb = table(&["id", "time", "severity", "sensor", "message"]);
                    for e in &log.entries {
                        let time = e.time.map(|t| t.to_rfc3339()).or(e.time_note.clone()).unwrap_or_default();
                        tb.add_row(vec![
                            e.id.clone(),
                            time,
                            e.severity.to_string(),
                            e.sensor.clone().unwrap_or_default(),
                            e.message.clone(),
                        ]);
                    }
                    println!("{tb}");
                }
                out.push(json!(log));
            }
            Ok(None) => {
                if !g.json {
                    println!("{}: SEL cleared", bmc.name());
                }
                out.push(json!({ "bmc": bmc.name(), "cleared": true }));
            }
            Err(e) => {
                failed = true;
                report_error(g, bmc.name(), &e, &mut out);
            }
        }
    }
    if g.json {
        print_json(&out)?;
    }
    store.close().await;
    Ok(if failed { Code::Failed } else { Code::Ok })
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
    let r = resolve(g, &a.sel, true)?;
    let store = open_store(g).await?;
    let p = pool(&store, a.fanout.max(1));
    let bar = if std::io::stderr().is_terminal() && !g.json {
        let b = indicatif::ProgressBar::new(r.targets.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} sweeping [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let opts = SweepOptions {
        events: a.events,
        per_bmc_timeout: Duration::from_secs(a.per_bmc_timeout.max(1)),
        ..SweepOptions::default()
    };
    let rows = p
        .sweep(r.targets, &opts, |row, prog| {
            if let Some(b) = &bar {
                b.set_position(prog.done as u64);
                b.set_message(row.name.clone());
            }
        })
        .await;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    for row in &rows {
        let _ = store.observe(&row.name, "sweep", &json!(row)).await;
    }
    let failed = rows.iter().filter(|r| !r.ok()).count();
    if g.json {
        print_json(&rows)?;
    } else {
        println!("{}", sweep_table(&rows));
        println!("{} BMCs, {} unreachable or failing", rows.len(), failed);
    }
    store.close().await;
    Ok(if failed > 0 { Code::Failed } else { Code::Ok })
}

pub async fn bmc(g: &Global, c: BmcCmd) -> CmdResult {
    match c {
        BmcCmd::Trust(a) => {
            let r = resolve(g, &a.sel, false)?;
            let store = open_store(g).await?;
            let pins = StorePins(store.clone());
            let mut failed = false;
            let mut out = Vec::new();
            for t in &r.targets {
                let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
                let res = lifeline_redfish::trust(
                    &rt,
                    &pins,
                    t.tls_pin,
                    &lifeline_redfish::ClientOptions::default(),
                )
                .await;
                let detail = match &res {
                    Ok(o) => json!({ "previous": o.previous, "current": o.current }),
                    Err(e) => json!({ "error": chain(e) }),
                };
                store
                    .audit(&lifeline_store::AuditEntry {
                        actor: actor(),
                        action: "bmc.trust".into(),
                        target: t.name.clone(),
                        outcome: if res.is_ok() { "ok".into() } else { "failed".into() },
                        detail: detail.clone(),
                        request_id: None,
                    })
                    .await?;
                match &res {
                    Ok(o) if !g.json => match o.previous {
                        Some(prev) if prev != o.current => {
                            println!("{}: re-pinned {} (was {prev})", t.name, o.current)
                        }
                        Some(_) => println!("{}: pin unchanged {}", t.name, o.current),
                        None => println!("{}: pinned {}", t.name, o.current),
                    },
                    Err(e) if !g.json => println!("{}: error: {}", t.name, chain(e)),
                    _ => {}
                }
                failed |= res.is_err();
                out.push(json!({ "bmc": t.name, "result": detail }));
            }
            if g.json {
                print_json(&out)?;
            }
            store.close().await;
            Ok(if failed { Code::Failed } else { Code::Ok })
        }
    }
}

pub async fn hygiene(g: &Global, sel: crate::args::BmcSel, max_attempts: usize) -> CmdResult {
    if !sel.bmc.is_empty() {
        return Err(Exit::usage(anyhow::anyhow!(
            "`audit bmc` tries default passwords and therefore only runs against inventory BMCs, not --bmc URLs"
        )));
    }
    let r = resolve(g, &sel, true)?;
    let store = open_store(g).await?;
    let p = pool(&store, 32);
    let opts = HygieneOptions { max_failures_per_bmc: max_attempts, ..HygieneOptions::default() };
    let rows = p.hygiene_audit(r.targets, &opts).await;
    let bad = rows.iter().filter(|r| r.worst() != Health::Ok).count();
    for row in &rows {
        store
            .audit(&lifeline_store::AuditEntry {
                actor: actor(),
                action: "audit.bmc".into(),
                target: row.bmc.clone(),
                outcome: row.worst().to_string(),
                detail: json!({ "attempts": row.attempts.len(), "failed_attempts": row.failed_attempts, "findings": row.findings }),
                request_id: None,
            })
            .await?;
    }
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
        println!("{t}");
    }
    store.close().await;
    Ok(if bad > 0 { Code::Failed } else { Code::Ok })
}
