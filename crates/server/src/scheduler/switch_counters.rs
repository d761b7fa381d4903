//! Switch counters on a schedule (`[server] switch-counters-interval`): every switch of the inventory is
//! read over SSH, a few at once, each within its timeout, and the engine's [`CounterWatch`] turns the rise
//! since the previous read into evidence (past the `[server]` thresholds). The server only schedules and
//! records: each piece of evidence is the switch's own fault of that kind (`switch-link-flap`, … on the
//! switch, resolved by a read in which that kind rose nowhere) and goes to the fault correlation, which
//! attaches it to the rail faults of the nodes cabled to its ports (docs/faults.md).
//!
//! Once per switch per interval across replicas: the intervals are slots on the clock (`slot_ms` a
//! multiple of the interval), and each switch's slot is a unit of work claimed in the store
//! (`slot:counters:SWITCH@SLOT_MS`, the claim scheduled backups use, [`crate::replica`]) and marked done
//! once; a replica that loses the claim does not read. Each read is kept as a `switch-counters`
//! observation, so the next read — whichever replica wins its slot — is compared with the switch's
//! previous read, not with the last one this replica happened to make. A slot whose reader died is not
//! read again: the next slot's read compares with the last read kept.

use std::collections::HashMap;
use std::time::Duration;

use lifeline_engine::correlate::Topology;
use lifeline_engine::switch_evidence::PortEvidence;
use lifeline_engine::switch_evidence::counters::{CounterWatch, thresholds};
use tokio::sync::mpsc;

use crate::replica::WorkLease;
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

/// The unit of work of one switch's read in one interval (claimed once, done once).
pub fn slot_key(switch: &str, slot_ms: i64) -> String {
    format!("slot:counters:{switch}@{slot_ms}")
}

/// The observation kind of a kept read.
pub const OBSERVATION: &str = lifeline_engine::ops::correlation::SWITCH_COUNTERS;

/// How long done slots and reads are kept (each switch's newest read always stays: the next baseline).
const RETENTION_MS: i64 = 3_600_000;

pub async fn run_every(s: AppState, every: Duration, evidence: mpsc::Sender<PortEvidence>) {
    let every_ms = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    let mut watch = CounterWatch::new(thresholds(&s.base.config.config.server));
    let mut pruned: Option<std::time::Instant> = None;
    loop {
        let now = now_ms();
        let slot = now - now.rem_euclid(every_ms);
        if let Err(e) = read_once(&s, &mut watch, &evidence, slot).await {
            tracing::warn!("switch counters: {}", e.chain());
        }
        if pruned.is_none_or(|t| t.elapsed() >= Duration::from_secs(3600)) {
            pruned = Some(std::time::Instant::now());
            prune(&s).await;
        }
        // To the next slot's start (every replica wakes about then; the claim decides who reads).
        let next = slot + every_ms - now_ms();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(u64::try_from(next).unwrap_or(0))) => {}
            _ = s.shutdown.cancelled() => break,
        }
    }
}

async fn prune(s: &AppState) {
    let before = now_ms() - RETENTION_MS;
    if let Err(e) = s.base.correlation_slots_prune("slot:counters:", before).await {
        tracing::warn!("pruning old switch counters slots: {}", e.chain());
    }
    if let Err(e) = s.base.correlation_prune(OBSERVATION, before).await {
        tracing::warn!("pruning old switch counters reads: {}", e.chain());
    }
}

fn now_ms() -> i64 {
    lifeline_engine::ops::runs::now_ms()
}

/// Claims this slot of every switch it can; the switches this replica reads, with their leases.
async fn claim(s: &AppState, switches: Vec<String>, slot: i64) -> HashMap<String, WorkLease> {
    let mut mine = HashMap::new();
    for sw in switches {
        match s.replica.claim(&slot_key(&sw, slot)).await {
            Ok(Some(lease)) => {
                mine.insert(sw, lease);
            }
            // Another replica reads it, or has read it.
            Ok(None) => {}
            Err(e) => tracing::warn!(switch = %sw, "cannot claim the counters slot; not reading: {e}"),
        }
    }
    mine
}

/// Sets the switch's baseline in `watch` to its previous read, whichever replica made it; none kept:
/// this read is a first read. A store that does not answer leaves this replica's own last read.
async fn previous(s: &AppState, watch: &mut CounterWatch, switch: &str) {
    match s.base.switch_counters_previous(switch).await {
        Ok(o) => match o.and_then(|o| serde_json::from_value(o.get("snapshot")?.clone()).ok()) {
            Some(before) => watch.baseline(switch, before),
            None => watch.forget(switch),
        },
        Err(e) => tracing::warn!(
            %switch,
            "previous counters read not loaded (comparing with this replica's): {}",
            e.chain()
        ),
    }
}

async fn read_once(
    s: &AppState,
    watch: &mut CounterWatch,
    evidence: &mpsc::Sender<PortEvidence>,
    slot: i64,
) -> Result<(), lifeline_engine::EngineError> {
    let inv = s.base.inventory()?;
    let topology = Topology::from_inventory(&inv);
    let switches: Vec<String> =
        inv.devices.iter().filter(|d| d.switch.is_some()).map(|d| d.name.to_string()).collect();
    if switches.is_empty() {
        return Ok(());
    }
    let mut leases = claim(s, switches, slot).await;
    if leases.is_empty() {
        return Ok(());
    }
    let mine: Vec<String> = leases.keys().cloned().collect();
    let concurrency = s.base.config.config.server.switch_counters_concurrency.unwrap_or(8).max(1);
    let reads = s
        .engine_as("scheduler")
        .read_switch_counters(&mine, |sw| topology.leaf_ports(sw), concurrency, timeout(s))
        .await?;
    let unresolved = crate::faults::unresolved(s).await?;
    for r in reads {
        let Some(lease) = leases.remove(&r.switch) else { continue };
        let read = match r.result {
            Ok(read) => read,
            Err(e) => {
                // No read is no evidence either way; the backups' own fault rule reports a switch that
                // cannot be reached.
                tracing::warn!(switch = %r.switch, "switch counters not read: {}", e.chain());
                lease.finish("failed").await;
                continue;
            }
        };
        if !read.failed.is_empty() {
            tracing::debug!(switch = %r.switch, failed = ?read.failed, "some counters commands failed");
        }
        if !lease.still_held().await {
            // Paused past the claim's expiry: another replica may read this slot; this read is not kept.
            tracing::warn!(switch = %r.switch, "the counters slot was taken over; this read is dropped");
            continue;
        }
        previous(s, watch, &r.switch).await;
        let kept = serde_json::json!({
            "slot": slot, "replica": s.replica.id(), "snapshot": read.snapshot, "failed": read.failed,
        });
        if let Err(e) = s.base.switch_counters_keep(&r.switch, &kept).await {
            tracing::warn!(switch = %r.switch, "counters read not kept: {}", e.chain());
        }
        lease.finish("ok").await;
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
