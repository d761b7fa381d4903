//! `lifeline backup …`: switch configuration backup, history, diff, git export, restore, host-key trust,
//! schedules. The work is the engine's; this module renders it.

use std::io::IsTerminal;

use anyhow::anyhow;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_engine::Acted;
use lifeline_engine::ops::backup::BackupOptions;

use crate::args::{BackupCmd, Global};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit, verdict};
use crate::out;
use crate::outln;
use crate::prompt::confirm;

fn colour_diff(diff: &str) -> String {
    if !std::io::stdout().is_terminal() {
        return diff.to_owned();
    }
    diff.lines()
        .map(|l| {
            if l.starts_with("+++") || l.starts_with("---") {
                format!("\x1b[1m{l}\x1b[0m")
            } else if l.starts_with('+') {
                format!("\x1b[32m{l}\x1b[0m")
            } else if l.starts_with('-') {
                format!("\x1b[31m{l}\x1b[0m")
            } else if l.starts_with("@@") {
                format!("\x1b[36m{l}\x1b[0m")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

pub async fn run(g: &Global, cmd: BackupCmd) -> CmdResult {
    if let BackupCmd::ScrubCheck { files, platform } = &cmd {
        return crate::cmd::scrub_check::run(g, files, platform.as_deref());
    }
    let l = lifeline(g)?;
    let code = match cmd {
        BackupCmd::Run { targets, concurrency, keep_raw: _, no_raw, timeout } => {
            let ts = l.select_switches(&targets)?;
            let bar = (std::io::stderr().is_terminal() && !g.json).then(|| {
                let b = indicatif::ProgressBar::new(ts.len() as u64);
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{spinner} backing up [{bar:30}] {pos}/{len} {msg}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                b
            });
            let opts = BackupOptions { concurrency: concurrency.max(1), seal_raw: !no_raw, timeout };
            let rows = l
                .backup_run(ts, &opts, |name| {
                    if let Some(b) = &bar {
                        b.inc(1);
                        b.set_message(name.to_owned());
                    }
                })
                .await?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let failed = rows.iter().filter(|r| !r.is_ok()).count();
            if g.json {
                print_json(&rows)?;
            } else {
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED)
                    .set_header(vec!["switch", "platform", "result", "raw", "took"]);
                for r in &rows {
                    match &r.result {
                        Ok(Acted::Fresh(b) | Acted::Delayed { value: b, .. }) => {
                            let d = &b.detail;
                            let result = if b.outcome == "ok" {
                                format!(
                                    "new version v{}{}",
                                    d.version,
                                    d.previous.map(|p| format!(" (was v{p})")).unwrap_or_default()
                                )
                            } else {
                                format!("unchanged (v{})", d.version)
                            };
                            t.add_row(vec![
                                b.switch.clone(),
                                b.platform.to_string(),
                                result,
                                if d.raw_sealed { "sealed".into() } else { "scrubbed only".into() },
                                crate::cmd::bmc::human_ms(b.ms),
                            ]);
                        }
                        Ok(Acted::Replayed { request_id, .. }) => {
                            t.add_row(vec![
                                r.target.clone(),
                                String::new(),
                                format!("done by request {request_id}"),
                                String::new(),
                                String::new(),
                            ]);
                        }
                        Err(e) => {
                            t.add_row(vec![
                                r.target.clone(),
                                String::new(),
                                format!("FAILED: {}", e.chain()),
                                String::new(),
                                String::new(),
                            ]);
                        }
                    }
                }
                outln!("{t}");
                outln!("{} switches, {failed} failed", rows.len());
            }
            verdict(failed > 0)
        }
        BackupCmd::History { switch } => {
            let versions = l.backup_history(&switch).await?;
            if g.json {
                print_json(&versions)?;
            } else {
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED)
                    .set_header(vec!["version", "taken", "platform", "bytes", "raw kept", "sha256"]);
                for v in &versions {
                    t.add_row(vec![
                        format!("v{}", v.version),
                        v.taken_at.to_rfc3339(),
                        v.platform.to_string(),
                        v.size.to_string(),
                        if v.raw_sealed { "sealed".into() } else { "no".into() },
                        v.sha256.chars().take(12).collect(),
                    ]);
                }
                outln!("{t}");
            }
            Code::Ok
        }
        BackupCmd::Show { switch, version, raw } => {
            let v = l.backup_show(&switch, version, raw).await?;
            if g.json {
                print_json(&v)?;
            } else {
                out::text(&v.text)?;
                if !v.text.ends_with('\n') {
                    outln!();
                }
            }
            Code::Ok
        }
        BackupCmd::Diff { switch, v1, v2 } => {
            let d = l.backup_diff(&switch, v1, v2).await?;
            if g.json {
                print_json(&d)?;
            } else if d.diff.is_empty() {
                outln!("{switch}: v{} and v{} are identical", d.from, d.to);
            } else {
                out::text(&colour_diff(&d.diff))?;
            }
            Code::Ok
        }
        BackupCmd::Export { git } => {
            let n = l.backup_export(&git).await?;
            if g.json {
                print_json(&serde_json::json!({ "dir": git, "commits": n }))?;
            } else {
                outln!("{}: {n} new commit(s)", git.display());
            }
            Code::Ok
        }
        BackupCmd::Restore { switch, version, to, dry_run, allow_scrubbed, yes } => {
            let preview = l.backup_restore(&switch, version, to.as_deref(), true, allow_scrubbed).await?;
            let Acted::Fresh(p) = &preview else {
                return Err(Exit::internal(anyhow!("a dry run is never a replay")));
            };
            if !g.json {
                if p.diff.is_empty() {
                    outln!("{}: running config already equals {switch} v{}", p.to, p.version);
                } else {
                    outln!("{}: changes to apply (running → {switch} v{}):", p.to, p.version);
                    out::text(&colour_diff(&p.diff))?;
                }
                if !p.raw {
                    outln!("note: pushing the scrubbed copy (--allow-scrubbed): secrets become `<removed>`");
                }
            }
            if dry_run {
                if g.json {
                    print_json(p)?;
                }
                l.close().await;
                return Ok(Code::Ok);
            }
            confirm(&format!("restore {switch} v{} onto {}?", p.version, p.to), yes)?;
            let r = l.backup_restore(&switch, Some(p.version), to.as_deref(), false, allow_scrubbed).await?;
            let ok = match &r {
                Acted::Fresh(r) | Acted::Delayed { value: r, .. } => r.verified,
                Acted::Replayed { outcome, .. } => outcome["verified"] == true,
            };
            if g.json {
                print_json(
                    &serde_json::json!({ "switch": switch, "to": p.to, "outcome": if ok { "ok" } else { "unverified" }, "detail": r }),
                )?;
            } else if let Acted::Fresh(r) = &r {
                outln!(
                    "{}: restored {switch} v{}: applied={}, verified={}",
                    r.to,
                    r.version,
                    r.applied,
                    r.verified
                );
            } else {
                outln!("{}: already restored by an earlier request", p.to);
            }
            verdict(!ok)
        }
        BackupCmd::Schedule { after } => {
            let now = match after.as_deref() {
                Some(t) => chrono::DateTime::parse_from_rfc3339(t)
                    .map_err(|e| {
                        Exit::usage(anyhow!(
                            "--after `{t}`: {e} (expected RFC 3339, e.g. 2026-11-21T03:00:00Z)"
                        ))
                    })?
                    .with_timezone(&chrono::Utc),
                None => chrono::Utc::now(),
            };
            let rows = l.backup_schedule(now)?;
            if g.json {
                print_json(&rows)?;
            } else {
                for r in &rows {
                    outln!("{:<20} {:<14} next {}", r.switch, r.cron, r.next.to_rfc3339());
                }
            }
            Code::Ok
        }
        BackupCmd::ScrubCheck { .. } => unreachable!("handled before the store is opened"),
        BackupCmd::Trust { switch, fingerprint } => {
            crate::cmd::trust::switch(g, &l, &switch, fingerprint).await?
        }
    };
    l.close().await;
    Ok(code)
}
