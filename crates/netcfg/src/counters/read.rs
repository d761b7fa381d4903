//! Reading a switch's counters over SSH: the platform's commands (per port for Cumulus) through the same
//! session code as a backup (pinned host key, exec where the platform allows it, a privileged shell with
//! paging off otherwise), bounded by the device's total time limit. One command that fails costs its
//! counters, named in `failed`; the others are still read.

use std::sync::Arc;

use lifeline_types::DeviceName;

use super::{Snapshot, commands, parse};
use crate::backup::{BackupTarget, ready_shell};
use crate::index::HostKeyPins;
use crate::ssh::{PinPolicy, Session, SshError, Transport};

#[derive(Debug, thiserror::Error)]
pub enum CountersError {
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error("{device}: counters not read within {}", lifeline_types::Human(*after))]
    Timeout { device: DeviceName, after: std::time::Duration },
}

/// What one read found.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub snapshot: Snapshot,
    /// Commands that failed, with why (`show pfcwd stats: exited with status 1: …`).
    pub failed: Vec<String>,
}

/// Runs the platform's counters commands on `target`; `ports` names the ports of the per-port commands
/// (Cumulus), typically the ports the inventory cables to it.
pub async fn read_counters(
    target: &BackupTarget,
    pins: Arc<dyn HostKeyPins>,
    ports: &[String],
) -> Result<Read, CountersError> {
    let total = target.ssh.timeouts.total;
    tokio::time::timeout(total, read_inner(target, pins, ports))
        .await
        .map_err(|_| CountersError::Timeout { device: target.device().clone(), after: total })?
}

async fn read_inner(
    target: &BackupTarget,
    pins: Arc<dyn HostKeyPins>,
    ports: &[String],
) -> Result<Read, CountersError> {
    let driver = target.driver();
    let exec = match target.ssh.transport {
        Transport::Exec => true,
        Transport::Shell => false,
        Transport::Auto => driver.exec_supported(),
    };
    // The command lines to run, each with its format and the port it is about.
    let mut lines = Vec::new();
    for c in commands(target.platform) {
        if c.per_port {
            for p in ports {
                // A port name reaches a command line: only the characters port names use.
                if p.chars().all(|ch| ch.is_ascii_alphanumeric() || "/._-".contains(ch)) {
                    lines.push((c.line.replace("{port}", p), c.format, Some(p.clone())));
                }
            }
        } else {
            lines.push((c.line.to_owned(), c.format, None));
        }
    }
    let session =
        Session::connect(&target.ssh, target.platform_algorithms, pins, PinPolicy::TrustOnFirstUse).await?;
    let mut read = Read::default();
    let mut outputs = Vec::new();
    if exec {
        for (line, format, port) in &lines {
            match session.exec(line, None).await {
                Ok(out) if out.status != 0 => read.failed.push(format!(
                    "{line}: exited with status {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )),
                Ok(out) => outputs.push((
                    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
                    *format,
                    port.clone(),
                )),
                Err(e) => read.failed.push(format!("{line}: {e}")),
            }
        }
    } else {
        let res = async {
            let mut sh = ready_shell(&session, driver.as_ref()).await?;
            for (line, format, port) in &lines {
                outputs.push((sh.run(line).await?, *format, port.clone()));
            }
            sh.exit().await;
            Ok::<_, SshError>(())
        }
        .await;
        if let Err(e) = res {
            session.close().await;
            return Err(e.into());
        }
    }
    session.close().await;
    for (text, format, port) in outputs {
        read.snapshot.merge(parse(format, &text, port.as_deref()));
    }
    Ok(read)
}
