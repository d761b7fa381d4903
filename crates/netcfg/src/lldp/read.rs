//! Reading a switch's LLDP neighbours over SSH: the platform's command through the same session code
//! as a backup (pinned host key, exec where the platform allows it, a privileged shell with paging off
//! otherwise), bounded by the device's total time limit.

use std::sync::Arc;

use lifeline_types::DeviceName;

use super::{Neighbor, command, parse};
use crate::backup::{BackupTarget, ready_shell};
use crate::index::HostKeyPins;
use crate::ssh::{PinPolicy, Session, SshError, Transport};

#[derive(Debug, thiserror::Error)]
pub enum LldpError {
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error("{device}: `{command}` exited with status {status}: {stderr}")]
    Status { device: DeviceName, command: String, status: u32, stderr: String },
    #[error("{device}: LLDP neighbours not read within {}", lifeline_types::Human(*after))]
    Timeout { device: DeviceName, after: std::time::Duration },
}

/// The command's raw output (for the corpus and the operator's eyes) and its neighbours.
#[derive(Debug, Clone)]
pub struct Read {
    pub command: &'static str,
    pub output: String,
    pub neighbors: Vec<Neighbor>,
}

/// Runs the platform's LLDP command on `target` and parses what it prints.
pub async fn read_neighbors(target: &BackupTarget, pins: Arc<dyn HostKeyPins>) -> Result<Read, LldpError> {
    let total = target.ssh.timeouts.total;
    tokio::time::timeout(total, read_inner(target, pins))
        .await
        .map_err(|_| LldpError::Timeout { device: target.device().clone(), after: total })?
}

async fn read_inner(target: &BackupTarget, pins: Arc<dyn HostKeyPins>) -> Result<Read, LldpError> {
    let (cmd, format) = command(target.platform);
    let driver = target.driver();
    let exec = match target.ssh.transport {
        Transport::Exec => true,
        Transport::Shell => false,
        Transport::Auto => driver.exec_supported(),
    };
    let session =
        Session::connect(&target.ssh, target.platform_algorithms, pins, PinPolicy::TrustOnFirstUse).await?;
    let res = if exec {
        match session.exec(cmd, None).await {
            Ok(out) if out.status != 0 => Err(LldpError::Status {
                device: target.device().clone(),
                command: cmd.to_owned(),
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            }),
            Ok(out) => Ok(String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")),
            Err(e) => Err(e.into()),
        }
    } else {
        async {
            let mut sh = ready_shell(&session, driver.as_ref()).await?;
            let out = sh.run(cmd).await?;
            sh.exit().await;
            Ok::<_, SshError>(out)
        }
        .await
        .map_err(LldpError::from)
    };
    session.close().await;
    let output = res?;
    let neighbors = parse(format, &output);
    Ok(Read { command: cmd, output, neighbors })
}
