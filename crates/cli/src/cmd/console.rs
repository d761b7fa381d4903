//! `lifeline console TARGET`, `lifeline console log`, `lifeline console rescue`: the serial console as a
//! dependable tool — one BMC session, logged, with an explicit steal policy and scripted rescue.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use lifeline_console::{
    AttachOptions, Bootloader, ConsoleLogIndex, ConsoleManager, Expect, LogFileEntry, LogReader,
    ManagerConfig, RescueOptions, SolTransport, WriteMode,
};
use lifeline_inventory::{Device, credentials};
use lifeline_store::{ConsoleLogRow, Store};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::args::{BootloaderArg, ConsoleArgs, ConsoleCmd, Global};
use crate::cmd::{actor, audit, inventory, print_json};
use crate::config::{data_dir, open_store};
use crate::exit::{CmdResult, Code, Exit};

/// Console log files indexed in the store (the bytes stay under the data directory).
#[derive(Debug, Clone)]
pub struct StoreLogIndex(pub Store);

fn row(e: &LogFileEntry) -> ConsoleLogRow {
    ConsoleLogRow {
        console: e.console.clone(),
        seq: i64::try_from(e.seq).unwrap_or(i64::MAX),
        path: e.path.display().to_string(),
        first_ms: e.first_ts.timestamp_millis(),
        last_ms: e.last_ts.map(|t| t.timestamp_millis()),
        bytes: i64::try_from(e.bytes).unwrap_or(i64::MAX),
        closed: e.closed,
    }
}

#[async_trait]
impl ConsoleLogIndex for StoreLogIndex {
    async fn file_opened(&self, entry: &LogFileEntry) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_upsert(&row(entry)).await?)
    }
    async fn file_closed(&self, entry: &LogFileEntry) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_upsert(&row(entry)).await?)
    }
    async fn file_removed(&self, console: &str, seq: u64) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_removed(console, i64::try_from(seq).unwrap_or(i64::MAX)).await?)
    }
    async fn files(&self, console: &str) -> Result<Vec<LogFileEntry>, lifeline_console::log::IndexError> {
        let rows = self.0.console_logs(console).await?;
        Ok(rows
            .into_iter()
            .map(|r| LogFileEntry {
                console: r.console,
                seq: u64::try_from(r.seq).unwrap_or(0),
                path: r.path.into(),
                first_ts: Utc.timestamp_millis_opt(r.first_ms).single().unwrap_or_default(),
                last_ts: r.last_ms.and_then(|m| Utc.timestamp_millis_opt(m).single()),
                bytes: u64::try_from(r.bytes).unwrap_or(0),
                closed: r.closed,
            })
            .collect())
    }
}

/// The SOL endpoint of a device's BMC (IPMI port: the inventory's when the BMC speaks IPMI, else 623).
async fn sol_transport(d: &Device) -> Result<SolTransport, Exit> {
    let b = d
        .bmc
        .as_ref()
        .ok_or_else(|| Exit::usage(anyhow!("`{}` has no BMC: no serial-over-LAN console", d.name)))?;
    let password = credentials::resolve(&b.credential)
        .map_err(|e| Exit::usage(anyhow!("`{}`: credential `{}`: {e}", d.name, b.credential)))?;
    let port = match b.protocol {
        lifeline_types::BmcProtocol::Ipmi => b.port.unwrap_or(623),
        _ => 623,
    };
    let host = b.address.to_string();
    let addr: SocketAddr = tokio::net::lookup_host((host.as_str(), port))
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| Exit::usage(anyhow!("cannot resolve BMC address `{host}` of `{}`", d.name)))?;
    let cfg = lifeline_ipmi::ClientConfig::new(b.username.clone(), password);
    Ok(SolTransport::new(d.name.to_string(), addr, cfg))
}

async fn manager(g: &Global, store: &Store) -> Result<ConsoleManager, Exit> {
    let cfg = ManagerConfig::new(data_dir(g)?);
    ConsoleManager::new(cfg, Arc::new(StoreLogIndex(store.clone()))).map_err(Exit::failed)
}

fn parse_since(s: &str) -> Result<chrono::DateTime<Utc>, Exit> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    let age = humantime::parse_duration(s).map_err(|_| {
        Exit::usage(anyhow!("--since `{s}`: expected RFC 3339 (2026-11-21T03:00:00Z) or an age (10m, 2h)"))
    })?;
    Ok(Utc::now() - chrono::Duration::from_std(age).map_err(Exit::usage)?)
}

pub async fn run(g: &Global, a: ConsoleArgs) -> CmdResult {
    match a.action {
        Some(ConsoleCmd::Log { target, since, follow }) => log(g, &target, since.as_deref(), follow).await,
        Some(ConsoleCmd::Rescue { target, bootloader, steal, timeout }) => {
            rescue(g, &target, bootloader, steal, timeout).await
        }
        None => {
            let target =
                a.target.ok_or_else(|| Exit::usage(anyhow!("name a device: lifeline console TARGET")))?;
            attach(g, &target, a.steal, a.read_only).await
        }
    }
}

async fn attach(g: &Global, target: &str, steal: bool, read_only: bool) -> CmdResult {
    let inv = inventory::load(g)?;
    let d =
        inv.device(target).ok_or_else(|| Exit::usage(anyhow!("no device `{target}` in the inventory")))?;
    let transport = sol_transport(d).await?;
    let store = open_store(g).await?;
    let m = manager(g, &store).await?;
    m.add(target, Arc::new(transport)).map_err(Exit::failed)?;
    let who = actor();
    let mode = if read_only { WriteMode::ReadOnly } else { WriteMode::Write };
    let attached = m.attach(target, AttachOptions { who: who.clone(), mode, steal }).await;
    let (viewer, report) = match attached {
        Ok(v) => v,
        Err(e) => {
            let msg = lifeline_verify::error_chain(&e);
            audit(&store, "console.attach", target, "failed", json!({ "error": msg })).await?;
            m.shutdown().await;
            store.close().await;
            let hint = if msg.contains("already active") || msg.contains("busy") {
                "\nanother session holds this console; `--steal` deactivates it and takes over (audited)"
            } else {
                ""
            };
            return Err(Exit::failed(anyhow!("{msg}{hint}")));
        }
    };
    let stole = report.as_ref().is_some_and(|r| r.stole);
    audit(
        &store,
        if stole { "console.steal" } else { "console.attach" },
        target,
        "ok",
        json!({ "stole": stole, "mode": format!("{mode:?}") }),
    )
    .await?;
    eprintln!(
        "[lifeline] attached to {target}{} — `~.` leaves, `~?` help",
        if stole { " (took over another session)" } else { "" }
    );
    let detach = lifeline_console::attach_terminal(viewer).await;
    m.shutdown().await;
    audit(&store, "console.detach", target, "ok", json!({ "how": format!("{detach:?}") })).await?;
    store.close().await;
    eprintln!("\r\n[lifeline] detached from {target}");
    match detach {
        Ok(_) => Ok(Code::Ok),
        Err(e) => Err(Exit::failed(e)),
    }
}

async fn log(g: &Global, target: &str, since: Option<&str>, follow: bool) -> CmdResult {
    let since = since.map(parse_since).transpose()?;
    let store = open_store(g).await?;
    let mut reader = LogReader::new(Arc::new(StoreLogIndex(store.clone())), target, since, follow);
    let mut out = tokio::io::stdout();
    let mut n = 0usize;
    loop {
        let next = tokio::select! {
            r = reader.next() => r,
            _ = tokio::signal::ctrl_c() => None,
        };
        match next {
            Some(Ok(rec)) => {
                n += 1;
                if g.json {
                    let line = json!({ "ts": rec.ts, "kind": format!("{:?}", rec.kind).to_lowercase(), "data": String::from_utf8_lossy(&rec.data) });
                    out.write_all(format!("{line}\n").as_bytes()).await?;
                } else {
                    out.write_all(&rec.render()).await?;
                }
                out.flush().await?;
            }
            Some(Err(e)) => return Err(Exit::failed(e)),
            None => break,
        }
    }
    if n == 0 && !follow {
        eprintln!(
            "no console log for `{target}`{}",
            since.map(|s| format!(" since {s}")).unwrap_or_default()
        );
    }
    store.close().await;
    Ok(Code::Ok)
}

async fn rescue(g: &Global, target: &str, bl: BootloaderArg, steal: bool, timeout: u64) -> CmdResult {
    let inv = inventory::load(g)?;
    let d =
        inv.device(target).ok_or_else(|| Exit::usage(anyhow!("no device `{target}` in the inventory")))?;
    let transport = sol_transport(d).await?;
    let store = open_store(g).await?;
    let m = manager(g, &store).await?;
    m.add(target, Arc::new(transport)).map_err(Exit::failed)?;
    let (viewer, report) = m
        .attach(target, AttachOptions { who: actor(), mode: WriteMode::Write, steal })
        .await
        .map_err(Exit::failed)?;
    if report.as_ref().is_some_and(|r| r.stole) {
        audit(&store, "console.steal", target, "ok", json!({ "for": "rescue" })).await?;
    }
    let bootloader = match bl {
        BootloaderArg::Onie => Bootloader::Onie,
        BootloaderArg::Uboot => Bootloader::UBoot,
        BootloaderArg::Grub => Bootloader::Grub,
        BootloaderArg::Aboot => Bootloader::Aboot,
    };
    let opts =
        RescueOptions { wait_for_bootloader: Duration::from_secs(timeout), ..RescueOptions::default() };
    audit(&store, "console.rescue", target, "started", json!({ "bootloader": format!("{bootloader:?}") }))
        .await?;
    let mut e = Expect::new(target, viewer);
    let res = lifeline_console::break_into_rescue(&mut e, bootloader, &opts).await;
    let transcript = e.transcript_text();
    let (code, outcome, detail) = match &res {
        Ok(r) => (
            Code::Ok,
            "ok",
            json!({ "bootloader": format!("{:?}", r.bootloader), "attempts": r.attempts, "prompt": r.prompt }),
        ),
        Err(err) => (Code::Failed, "failed", json!({ "error": lifeline_verify::error_chain(err) })),
    };
    audit(&store, "console.rescue", target, outcome, detail.clone()).await?;
    m.shutdown().await;
    store.close().await;
    if g.json {
        print_json(
            &json!({ "target": target, "outcome": outcome, "detail": detail, "transcript": transcript }),
        )?;
    } else {
        println!("{transcript}");
        match &res {
            Ok(r) => println!(
                "{target}: reached the {} after {} boot cycle(s): {:?}",
                bootloader.goal(),
                r.attempts,
                r.prompt
            ),
            Err(err) => println!("{target}: rescue failed: {}", lifeline_verify::error_chain(err)),
        }
    }
    Ok(code)
}
