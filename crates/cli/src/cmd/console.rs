//! `lifeline console TARGET`, `lifeline console log`, `lifeline console rescue`: the serial console as a
//! dependable tool — one BMC session, logged, with an explicit steal policy and scripted rescue.

use anyhow::anyhow;
use chrono::Utc;
use lifeline_console::{Bootloader, Detach};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

use crate::args::{BootloaderArg, ConsoleArgs, ConsoleCmd, Global};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

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

/// How a session ended, in words for the audit log.
fn detach_words(d: &Result<Detach, lifeline_console::attach::AttachError>) -> String {
    match d {
        Ok(Detach::Escape) => "escape (~.)".into(),
        Ok(Detach::InputClosed) => "terminal input closed".into(),
        Ok(Detach::ConsoleClosed) => "console closed".into(),
        Err(e) => format!("error: {}", lifeline_engine::error_chain(e)),
    }
}

async fn attach(g: &Global, target: &str, steal: bool, read_only: bool) -> CmdResult {
    let l = lifeline(g)?;
    let session = l.console_attach(target, read_only, steal).await?;
    eprintln!(
        "[lifeline] attached to {target}{} — `~.` leaves, `~?` help",
        if session.stole { " (took over another session)" } else { "" }
    );
    let (session, viewer) = session.split_viewer();
    let detach = lifeline_console::attach_terminal(viewer).await;
    l.console_detach(session, &detach_words(&detach)).await?;
    l.close().await;
    eprintln!("\r\n[lifeline] detached from {target}");
    match detach {
        Ok(_) => Ok(Code::Ok),
        Err(e) => Err(Exit::failed(e)),
    }
}

#[derive(Serialize)]
struct LogLine<'a> {
    ts: chrono::DateTime<Utc>,
    kind: String,
    data: std::borrow::Cow<'a, str>,
}

async fn log(g: &Global, target: &str, since: Option<&str>, follow: bool) -> CmdResult {
    let since = since.map(parse_since).transpose()?;
    let l = lifeline(g)?;
    let mut reader = l.console_log(target, since, follow).await?;
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
                let bytes = if g.json {
                    let line = LogLine {
                        ts: rec.ts,
                        kind: format!("{:?}", rec.kind).to_lowercase(),
                        data: String::from_utf8_lossy(&rec.data),
                    };
                    format!("{}\n", serde_json::to_string(&line)?).into_bytes()
                } else {
                    rec.render()
                };
                out.write_all(&bytes).await.map_err(Exit::io)?;
                out.flush().await.map_err(Exit::io)?;
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
    l.close().await;
    Ok(Code::Ok)
}

async fn rescue(g: &Global, target: &str, bl: BootloaderArg, steal: bool, timeout: u64) -> CmdResult {
    let bootloader = match bl {
        BootloaderArg::Onie => Bootloader::Onie,
        BootloaderArg::Uboot => Bootloader::UBoot,
        BootloaderArg::Grub => Bootloader::Grub,
        BootloaderArg::Aboot => Bootloader::Aboot,
    };
    let l = lifeline(g)?;
    let r = l.console_rescue(target, bootloader, steal, std::time::Duration::from_secs(timeout)).await?;
    l.close().await;
    if g.json {
        print_json(&r)?;
    } else {
        outln!("{}", r.transcript);
        match (&r.prompt, &r.error) {
            (Some(p), _) => outln!(
                "{target}: reached the {} after {} boot cycle(s): {p:?}",
                bootloader.goal(),
                r.attempts.unwrap_or(1)
            ),
            (_, Some(e)) => outln!("{target}: rescue failed: {e}"),
            _ => {}
        }
    }
    Ok(if r.outcome == "ok" { Code::Ok } else { Code::Failed })
}
