//! Switch counters on a schedule (`[server] switch-counters-interval`): every switch of the inventory is
//! read over SSH, a few at once, each within its timeout, and the engine's [`CounterWatch`] turns the rise
//! since the previous read into evidence. The server only schedules and records: each piece of evidence
//! is the switch's own fault of that kind (`switch-link-flap`, … on the switch, resolved by a read in
//! which that kind rose nowhere) and goes to the fault correlation, which attaches it to the rail faults
//! of the nodes cabled to its ports (docs/faults.md).
//!
//! Every replica reads every switch (reads change nothing on the switch); each feeds its own correlator.

use std::time::Duration;

use lifeline_engine::correlate::Topology;
use lifeline_engine::switch_evidence::PortEvidence;
use lifeline_engine::switch_evidence::counters::CounterWatch;
use tokio::sync::mpsc;

use crate::state::AppState;

/// The configured interval; `None` when off (the default, `0s`) or unparsable (reported as a problem).
pub fn interval(s: &AppState) -> Option<Duration> {
    let text = s.base.config.config.server.switch_counters_interval.clone()?;
    match humantime::parse_duration(&text) {
        Ok(d) if d.is_zero() => None,
        Ok(d) => Some(d.max(Duration::from_secs(1))),
        Err(e) => {
            s.problem(
                "switch counters",
                &format!("[server] switch-counters-interval `{text}`: {e}; not read"),
            );
            None
        }
    }
}

fn timeout(s: &AppState) -> Duration {
    s.base
        .config
        .config
        .server
        .switch_counters_timeout
        .as_deref()
        .and_then(|t| humantime::parse_duration(t).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(Duration::from_secs(30))
}

pub async fn run_every(s: AppState, every: Duration, evidence: mpsc::Sender<PortEvidence>) {
    let mut watch = CounterWatch::default();
    loop {
        if let Err(e) = read_once(&s, &mut watch, &evidence).await {
            tracing::warn!("switch counters: {}", e.chain());
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = s.shutdown.cancelled() => break,
        }
    }
}

async fn read_once(
    s: &AppState,
    watch: &mut CounterWatch,
    evidence: &mpsc::Sender<PortEvidence>,
) -> Result<(), lifeline_engine::EngineError> {
    let inv = s.base.inventory()?;
    let topology = Topology::from_inventory(&inv);
    let switches: Vec<String> =
        inv.devices.iter().filter(|d| d.switch.is_some()).map(|d| d.name.to_string()).collect();
    if switches.is_empty() {
        return Ok(());
    }
    let concurrency = s.base.config.config.server.switch_counters_concurrency.unwrap_or(8).max(1);
    let reads = s
        .engine_as("scheduler")
        .read_switch_counters(&switches, |sw| topology.leaf_ports(sw), concurrency, timeout(s))
        .await?;
    let unresolved = crate::faults::unresolved(s).await?;
    for r in reads {
        let read = match r.result {
            Ok(read) => read,
            Err(e) => {
                // No read is no evidence either way; the backups' own fault rule reports a switch that
                // cannot be reached.
                tracing::warn!(switch = %r.switch, "switch counters not read: {}", e.chain());
                continue;
            }
        };
        if !read.failed.is_empty() {
            tracing::debug!(switch = %r.switch, failed = ?read.failed, "some counters commands failed");
        }
        let v = watch.read(&r.switch, read.snapshot, r.at_ms);
        for kind in v.quiet {
            if unresolved.contains(&(kind.to_owned(), r.switch.clone())) {
                crate::faults::resolve(s, kind, &r.switch).await?;
            }
        }
        for e in v.evidence {
            let detail = serde_json::json!({
                "source": "switch-counters", "ports": e.ports, "detail": e.detail,
            });
            crate::faults::raise(s, &e.kind, &e.switch, "warning", &e.message, detail).await?;
            // The correlation may be off (console logging disabled): the fault stands alone then.
            let _ = evidence.try_send(e);
        }
    }
    Ok(())
}
