//! `lifeline backup …`: switch configuration backup, history, diff, git export, restore, host-key trust.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::anyhow;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use lifeline_inventory::{Device, Inventory, credentials};
use lifeline_netcfg::{
    AlgorithmProfile, BackupContext, BackupOutcome, BackupTarget, BlobStore, SshAuth, SshTarget, Timeouts,
    Transport, VersionIndex,
};
use lifeline_store::Store;
use lifeline_types::DeviceName;
use serde_json::json;

use crate::args::{BackupCmd, Global};
use crate::cmd::{audit, inventory, print_json};
use crate::config::{data_dir, open_store};
use crate::exit::{CmdResult, Code, Exit};
use crate::netcfg_store::{SealedFiles, StoreIndex};

fn context(store: &Store, data: &std::path::Path, keep_raw: bool) -> BackupContext {
    let index = Arc::new(StoreIndex(store.clone()));
    let sealed = SealedFiles::new(data);
    BackupContext {
        pins: index.clone(),
        index,
        blobs: BlobStore::new(data.join("configs")),
        // Reading sealed copies is always possible; writing them only when asked.
        raw: if keep_raw || data.join("seal.key").exists() { Some(Arc::new(sealed)) } else { None },
    }
}

/// The SSH side of a switch from the inventory, with its password resolved.
fn target(d: &Device) -> Result<BackupTarget, String> {
    let sw = d.switch.as_ref().ok_or_else(|| format!("`{}` is not a switch", d.name))?;
    let m = d.management.as_ref().ok_or_else(|| format!("`{}` has no management address", d.name))?;
    let password = credentials::resolve(&m.credential)
        .map_err(|e| format!("`{}`: credential `{}`: {e}", d.name, m.credential))?;
    let ssh = SshTarget {
        device: d.name.clone(),
        host: m.address.to_string(),
        port: m.port.unwrap_or(22),
        username: m.username.clone(),
        auth: SshAuth::Password(password),
        enable_password: None,
        algorithms: m.legacy_ssh.then_some(AlgorithmProfile::LEGACY),
        transport: Transport::Auto,
        timeouts: Timeouts::default(),
    };
    Ok(BackupTarget::new(ssh, sw.platform))
}

/// Resolves switch targets, checking every credential before any switch is contacted.
fn switches(inv: &Inventory, names: &[String]) -> Result<Vec<BackupTarget>, Exit> {
    let names = if names.is_empty() { vec!["switch".to_owned()] } else { names.to_vec() };
    let devices = lifeline_inventory::select(inv, &names).map_err(Exit::usage)?;
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for d in devices.into_iter().filter(|d| d.switch.is_some()) {
        match target(d) {
            Ok(t) => out.push(t),
            Err(e) => problems.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(Exit::usage(anyhow!("no switch was contacted because:\n  {}", problems.join("\n  "))));
    }
    if out.is_empty() {
        return Err(Exit::usage(anyhow!("no switch among the targets")));
    }
    Ok(out)
}

fn one_switch(inv: &Inventory, name: &str) -> Result<BackupTarget, Exit> {
    let d = inv.device(name).ok_or_else(|| Exit::usage(anyhow!("no device `{name}` in the inventory")))?;
    target(d).map_err(|e| Exit::usage(anyhow!(e)))
}

fn device_name(name: &str) -> Result<DeviceName, Exit> {
    DeviceName::new(name).map_err(Exit::usage)
}

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
    let data = data_dir(g)?;
    match cmd {
        BackupCmd::Run { targets, concurrency, keep_raw } => {
            let inv = inventory::load(g)?;
            let ts = switches(&inv, &targets)?;
            let store = open_store(g).await?;
            let ctx = context(&store, &data, keep_raw);
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
            let progress = bar.clone();
            let results = lifeline_netcfg::backup_all(&ctx, ts, concurrency.max(1), move |r| {
                if let Some(b) = &progress {
                    b.inc(1);
                    b.set_message(r.device.to_string());
                }
            })
            .await;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let mut failed = 0;
            let mut out = Vec::new();
            let mut t = Table::new();
            t.load_preset(UTF8_FULL_CONDENSED).set_header(vec!["switch", "platform", "result", "ms"]);
            for r in &results {
                let (result, outcome, detail) = match &r.outcome {
                    Ok(BackupOutcome::Unchanged { version }) => {
                        (format!("unchanged (v{version})"), "unchanged", json!({ "version": version }))
                    }
                    Ok(BackupOutcome::NewVersion { version, blob, previous }) => (
                        format!(
                            "new version v{version}{}",
                            previous.map(|p| format!(" (was v{p})")).unwrap_or_default()
                        ),
                        "ok",
                        json!({ "version": version, "blob": blob.as_str(), "previous": previous }),
                    ),
                    Err(e) => {
                        failed += 1;
                        (format!("FAILED: {}", e.chain()), "failed", json!({ "error": e.chain() }))
                    }
                };
                audit(&store, "backup.run", r.device.as_str(), outcome, detail.clone()).await?;
                t.add_row(vec![
                    r.device.to_string(),
                    r.platform.to_string(),
                    result,
                    r.elapsed.as_millis().to_string(),
                ]);
                out.push(json!({ "switch": r.device, "platform": r.platform, "outcome": outcome, "detail": detail, "ms": r.elapsed.as_millis() }));
            }
            if g.json {
                print_json(&out)?;
            } else {
                println!("{t}");
                println!("{} switches, {} failed", results.len(), failed);
            }
            store.close().await;
            Ok(if failed > 0 { Code::Failed } else { Code::Ok })
        }
        BackupCmd::History { switch } => {
            let store = open_store(g).await?;
            let dev = device_name(&switch)?;
            let versions = StoreIndex(store.clone()).list(&dev).await.map_err(Exit::from)?;
            if versions.is_empty() {
                store.close().await;
                return Err(Exit::usage(anyhow!(
                    "no backups of `{switch}` yet (run `lifeline backup run {switch}`)"
                )));
            }
            if g.json {
                print_json(&versions)?;
            } else {
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED)
                    .set_header(vec!["version", "taken", "platform", "bytes", "raw kept", "blob"]);
                for v in &versions {
                    t.add_row(vec![
                        format!("v{}", v.version),
                        v.taken_at.to_rfc3339(),
                        v.platform.to_string(),
                        v.size.to_string(),
                        if v.raw_sealed { "sealed".into() } else { "no".into() },
                        v.blob.as_str()[..12].to_owned(),
                    ]);
                }
                println!("{t}");
            }
            store.close().await;
            Ok(Code::Ok)
        }
        BackupCmd::Diff { switch, v1, v2 } => {
            let store = open_store(g).await?;
            let ctx = context(&store, &data, false);
            let dev = device_name(&switch)?;
            let versions = ctx.index.list(&dev).await.map_err(Exit::from)?;
            let latest = versions
                .last()
                .map(|v| v.version)
                .ok_or_else(|| Exit::usage(anyhow!("no backups of `{switch}` yet")))?;
            let (a, b) = match (v1, v2) {
                (Some(a), Some(b)) => (a, b),
                (Some(a), None) => (a, latest),
                (None, _) => (latest.saturating_sub(1).max(1), latest),
            };
            let load = |v: u32| {
                let ctx = &ctx;
                let dev = &dev;
                async move { lifeline_netcfg::restore::load_version(ctx, dev, Some(v)).await.map_err(Exit::usage) }
            };
            let (old, new) = (load(a).await?, load(b).await?);
            let diff = lifeline_netcfg::diff::unified(
                &old.normalised,
                &new.normalised,
                &format!("{switch} v{a}"),
                &format!("{switch} v{b}"),
            );
            if g.json {
                print_json(
                    &json!({ "switch": switch, "from": a, "to": b, "diff": diff, "hunks": lifeline_netcfg::diff::hunks(&old.normalised, &new.normalised) }),
                )?;
            } else if diff.is_empty() {
                println!("{switch}: v{a} and v{b} are identical");
            } else {
                print!("{}", colour_diff(&diff));
            }
            store.close().await;
            Ok(Code::Ok)
        }
        BackupCmd::Export { git } => {
            let store = open_store(g).await?;
            let ctx = context(&store, &data, false);
            let n = lifeline_netcfg::git_export::export_git(&git, ctx.index.as_ref(), &ctx.blobs)
                .await
                .map_err(Exit::failed)?;
            audit(&store, "backup.export", "fleet", "ok", json!({ "dir": git, "commits": n })).await?;
            if g.json {
                print_json(&json!({ "dir": git, "commits": n }))?;
            } else {
                println!("{}: {n} new commit(s)", git.display());
            }
            store.close().await;
            Ok(Code::Ok)
        }
        BackupCmd::Restore { switch, version, to, dry_run, allow_scrubbed, yes } => {
            let inv = inventory::load(g)?;
            let dest_name = to.clone().unwrap_or_else(|| switch.clone());
            let dest = one_switch(&inv, &dest_name)?;
            let store = open_store(g).await?;
            let ctx = context(&store, &data, false);
            let dev = device_name(&switch)?;
            let v = lifeline_netcfg::restore::load_version(&ctx, &dev, version).await.map_err(Exit::usage)?;
            let preview = lifeline_netcfg::restore::preview(&ctx, &dest, &v).await.map_err(Exit::failed)?;
            if !g.json {
                if preview.is_empty() {
                    println!("{dest_name}: running config already equals {switch} v{}", v.record.version);
                } else {
                    println!("{dest_name}: changes to apply (running → {switch} v{}):", v.record.version);
                    print!("{}", colour_diff(&preview));
                }
            }
            if dry_run {
                if g.json {
                    print_json(
                        &json!({ "switch": switch, "to": dest_name, "version": v.record.version, "dry_run": true, "diff": preview }),
                    )?;
                }
                store.close().await;
                return Ok(Code::Ok);
            }
            crate::targets::confirm(
                &format!("restore {switch} v{} onto {dest_name}?", v.record.version),
                yes,
            )?;
            let opts = lifeline_netcfg::restore::RestoreOptions {
                dry_run: false,
                allow_scrubbed,
                verify_within: Some(std::time::Duration::from_secs(120)),
            };
            audit(
                &store,
                "backup.restore",
                &dest_name,
                "started",
                json!({ "from": switch, "version": v.record.version }),
            )
            .await?;
            let res = lifeline_netcfg::restore::restore(&ctx, &dest, &v, opts).await;
            let (code, outcome, detail) = match &res {
                Ok(r) => (
                    if r.verified { Code::Ok } else { Code::Failed },
                    if r.verified { "ok" } else { "unverified" },
                    json!({ "from": switch, "version": r.version, "applied": r.applied, "verified": r.verified, "steps": r.steps }),
                ),
                Err(e) => (
                    Code::Failed,
                    "failed",
                    json!({ "from": switch, "error": lifeline_verify::error_chain(e) }),
                ),
            };
            audit(&store, "backup.restore", &dest_name, outcome, detail.clone()).await?;
            if g.json {
                print_json(
                    &json!({ "switch": switch, "to": dest_name, "outcome": outcome, "detail": detail }),
                )?;
            } else {
                match &res {
                    Ok(r) => println!(
                        "{dest_name}: restored {switch} v{}: applied={}, verified={}",
                        r.version, r.applied, r.verified
                    ),
                    Err(e) => println!("{dest_name}: restore failed: {}", lifeline_verify::error_chain(e)),
                }
            }
            store.close().await;
            Ok(code)
        }
        BackupCmd::Schedule { after } => schedule(g, after.as_deref()),
        BackupCmd::Trust { switch } => {
            let inv = inventory::load(g)?;
            let t = one_switch(&inv, &switch)?;
            let store = open_store(g).await?;
            let pins = Arc::new(StoreIndex(store.clone()));
            let res = lifeline_netcfg::backup::trust(&t, pins).await;
            let (outcome, detail) = match &res {
                Ok((prev, cur)) => ("ok", json!({ "previous": prev, "current": cur })),
                Err(e) => ("failed", json!({ "error": e.chain() })),
            };
            audit(&store, "backup.trust", &switch, outcome, detail.clone()).await?;
            if g.json {
                print_json(&json!({ "switch": switch, "outcome": outcome, "detail": detail }))?;
            } else {
                match &res {
                    Ok((Some(p), c)) if p != c => println!("{switch}: re-pinned {c} (was {p})"),
                    Ok((Some(_), c)) => println!("{switch}: pin unchanged {c}"),
                    Ok((None, c)) => println!("{switch}: pinned {c}"),
                    Err(e) => println!("{switch}: error: {}", e.chain()),
                }
            }
            store.close().await;
            Ok(if res.is_ok() { Code::Ok } else { Code::Failed })
        }
    }
}

/// Checks every `[[backup-schedule]]` entry (all problems at once, with the config file's line) and prints
/// when each switch runs next. The server's scheduler uses the same parsing.
fn schedule(g: &Global, after: Option<&str>) -> CmdResult {
    let Some((path, text)) = crate::config::server_config_text(g)? else {
        return Err(Exit::usage(anyhow!(
            "no server config: pass --config FILE (with [[backup-schedule]] entries)"
        )));
    };
    let (_, cfg) = crate::config::server_config(g)?;
    let inv = inventory::load(g)?;
    let line = |off: usize| text[..off.min(text.len())].matches('\n').count() + 1;
    let mut problems = Vec::new();
    let mut rows = Vec::new();
    let now = match after {
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map_err(|e| {
                Exit::usage(anyhow!("--after `{t}`: {e} (expected RFC 3339, e.g. 2026-11-21T03:00:00Z)"))
            })?
            .with_timezone(&chrono::Utc),
        None => chrono::Utc::now(),
    };
    // Whole seconds, so the same question always gets the same answer.
    let now = chrono::DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
    for entry in &cfg.backup_schedule {
        let at = line(entry.span().start);
        let e = entry.get_ref();
        let jitter = match e.jitter.as_deref().map(humantime::parse_duration).transpose() {
            Ok(j) => j.unwrap_or_default(),
            Err(err) => {
                problems.push(format!(
                    "{}:{at}: jitter `{}`: {err}",
                    path.display(),
                    e.jitter.as_deref().unwrap_or("")
                ));
                Default::default()
            }
        };
        let sched = match lifeline_netcfg::schedule::Schedule::parse(&e.cron, jitter) {
            Ok(s) => s,
            Err(err) => {
                problems.push(format!("{}:{at}: {err}", path.display()));
                continue;
            }
        };
        let devices = match lifeline_inventory::select(&inv, &e.targets) {
            Ok(d) => d,
            Err(err) => {
                problems.push(format!("{}:{at}: {err}", path.display()));
                continue;
            }
        };
        for d in devices.into_iter().filter(|d| d.switch.is_some()) {
            match sched.next_run(now, d.name.as_str()) {
                Ok(next) => {
                    rows.push(json!({ "switch": d.name, "cron": e.cron, "next": next, "retries": e.retries }))
                }
                Err(err) => problems.push(format!("{}:{at}: {err}", path.display())),
            }
        }
    }
    if !problems.is_empty() {
        return Err(Exit::usage(anyhow!("{}", problems.join("\n"))));
    }
    if g.json {
        print_json(&rows)?;
    } else {
        for r in &rows {
            println!(
                "{:<20} {:<14} next {}",
                r["switch"].as_str().unwrap_or(""),
                r["cron"].as_str().unwrap_or(""),
                r["next"].as_str().unwrap_or("")
            );
        }
    }
    Ok(Code::Ok)
}
