//! Waiting for a state: a power state, a BMC answering (on a given protocol), a TCP port or an SSH server
//! answering, a scheduler's view of a node. Runbooks wait between acting and checking; every wait has a
//! deadline and polls at an interval, and its result says what was last observed (evidence for a timeout).

use std::time::{Duration, Instant};

use lifeline_types::{BmcProtocol, PowerState};
use serde::Serialize;
use tokio::io::AsyncReadExt;

use crate::context::Lifeline;
use crate::error::{EngineError, Result, error_chain};
use crate::targets::SelectedBmc;

/// How a wait ended.
#[derive(Debug, Clone, Serialize)]
pub struct Waited {
    /// What was waited for, in words (`power on`, `ssh 127.20.0.1:22`).
    pub what: String,
    pub reached: bool,
    /// The last thing observed (a state, an error).
    pub observed: String,
    pub waited_ms: u64,
    pub polls: u32,
}

/// Polls `probe` until it answers `Ok(true)` or `timeout` passes. `probe` returns what it saw.
async fn poll<F, Fut>(what: String, timeout: Duration, interval: Duration, mut probe: F) -> Waited
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (bool, String)>,
{
    let start = Instant::now();
    let mut polls = 0;
    loop {
        polls += 1;
        let left = timeout.saturating_sub(start.elapsed());
        let (reached, observed) =
            match tokio::time::timeout(left.max(Duration::from_millis(1)), probe()).await {
                Ok(r) => r,
                Err(_) => (false, "no answer before the deadline".into()),
            };
        if reached || start.elapsed() + interval > timeout {
            let waited_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            return Waited { what, reached, observed, waited_ms, polls };
        }
        tokio::time::sleep(interval).await;
    }
}

impl Lifeline {
    /// Waits until the BMC reports `want`.
    pub async fn wait_power(
        &self,
        bmc: &SelectedBmc,
        want: PowerState,
        timeout: Duration,
        interval: Duration,
    ) -> Result<Waited> {
        let pool = self.bmc_pool().await?;
        let h = pool.bmc(bmc.target.clone());
        Ok(poll(format!("power {want}"), timeout, interval, || async {
            match h.power_state().await {
                Ok(s) => (s == want, s.to_string()),
                Err(e) => (false, error_chain(&e)),
            }
        })
        .await)
    }

    /// Waits until the BMC answers (reads its power state) on `protocol`, or on the one it is configured
    /// with when `None`.
    pub async fn wait_bmc(
        &self,
        bmc: &SelectedBmc,
        protocol: Option<BmcProtocol>,
        timeout: Duration,
        interval: Duration,
    ) -> Result<Waited> {
        let pool = self.bmc_pool().await?;
        let mut t = bmc.target.clone();
        if let Some(p) = protocol {
            t.protocol = p;
        }
        let h = pool.bmc(t);
        let what = match protocol {
            Some(p) => format!("BMC answering over {p}"),
            None => "BMC answering".to_owned(),
        };
        Ok(poll(what, timeout, interval, || async {
            match h.power_state().await {
                Ok(s) => (true, format!("answered (power {s})")),
                Err(e) => (false, error_chain(&e)),
            }
        })
        .await)
    }
}

/// Waits until `addr` (`host:port`) accepts a TCP connection; with `ssh`, until it also sends an SSH
/// identification line (`SSH-2.0-…`), which a port forwarded to nothing or a half-booted host does not.
pub async fn wait_tcp(addr: &str, ssh: bool, timeout: Duration, interval: Duration) -> Result<Waited> {
    if !addr.contains(':') {
        return Err(EngineError::bad_argument(format!("`{addr}` is not HOST:PORT")));
    }
    let what = if ssh { format!("ssh {addr}") } else { format!("tcp {addr}") };
    Ok(poll(what, timeout, interval, || async move {
        let connect =
            tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr)).await;
        let mut s = match connect {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return (false, e.to_string()),
            Err(_) => return (false, "connect timed out".into()),
        };
        if !ssh {
            return (true, "connected".into());
        }
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await {
            Ok(Ok(n)) if buf[..n].starts_with(b"SSH-") => {
                (true, String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_owned())
            }
            Ok(Ok(n)) => (false, format!("no SSH banner ({n} bytes)")),
            Ok(Err(e)) => (false, e.to_string()),
            Err(_) => (false, "no SSH banner within 5 s".into()),
        }
    })
    .await)
}

/// A node's scheduler state to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerState {
    /// The controller answers about the node at all (`scontrol ping`-like).
    Responding,
    /// Drained (by anyone).
    Drained,
    /// Drained with Lifeline's own mark.
    DrainedByLifeline,
    /// In service (not drained or down).
    InService,
}

/// Waits until Slurm (the `slurm.conf` given) reports `node` in `want`.
pub async fn wait_slurm(
    conf: &std::path::Path,
    node: &str,
    want: SchedulerState,
    timeout: Duration,
    interval: Duration,
) -> Result<Waited> {
    let slurm = lifeline_readmit::slurm::Slurm::new(lifeline_readmit::slurm::SlurmConfig::new(conf));
    let what = format!(
        "slurm: {node} {}",
        serde_json::to_value(want).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    );
    Ok(poll(what, timeout, interval, || async {
        match slurm.node(node).await {
            Ok(n) => {
                let ok = match want {
                    SchedulerState::Responding => true,
                    SchedulerState::Drained => n.drained(),
                    SchedulerState::DrainedByLifeline => n.drained_by_lifeline(),
                    SchedulerState::InService => n.in_service(),
                };
                (ok, n.describe())
            }
            Err(e) => (false, error_chain(&e)),
        }
    })
    .await)
}

/// Whether a node's in-band agent answers with its OS up, from the report source the verification uses:
/// the exported state's GPU snapshot says the host is up (`NodeState`), the written report says so
/// (`Reports`), or SSH on the node's frontend address sends its banner (`Ssh`). Returns what it saw.
pub async fn agent_up(
    d: &lifeline_inventory::Device,
    source: &crate::ops::readmit::ReportSource,
) -> (bool, String) {
    use crate::ops::readmit::ReportSource;
    let name = d.name.to_string();
    let host_up_in = |file: std::path::PathBuf| async move {
        match tokio::fs::read_to_string(&file).await {
            Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => {
                    let up =
                        v.get("host_up").or_else(|| v.pointer("/gpus/host_up")).and_then(|u| u.as_bool());
                    match up {
                        Some(true) => (true, format!("agent: host up ({})", file.display())),
                        Some(false) => (false, format!("agent: host down ({})", file.display())),
                        None => (false, format!("agent: {} says nothing of the host", file.display())),
                    }
                }
                Err(e) => (false, format!("agent: {}: {e}", file.display())),
            },
            Err(e) => (false, format!("agent: {}: {e}", file.display())),
        }
    };
    match source {
        ReportSource::NodeState { dir, .. } => host_up_in(dir.join(&name).join("gpus.json")).await,
        ReportSource::Reports(p) => {
            host_up_in(if p.is_dir() { p.join(format!("{name}.json")) } else { p.clone() }).await
        }
        ReportSource::Ssh { .. } => {
            let Some(addr) = d.frontend.as_ref().and_then(|f| f.address.as_ref()) else {
                return (false, format!("agent: `{name}` has no frontend address"));
            };
            let w =
                wait_tcp(&format!("{addr}:22"), true, Duration::from_secs(6), Duration::from_secs(1)).await;
            match w {
                Ok(w) => (w.reached, format!("agent: {} ({})", w.what, w.observed)),
                Err(e) => (false, format!("agent: {}", error_chain(&e))),
            }
        }
    }
}
