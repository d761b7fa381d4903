//! Scheduled switch backups: every `[[backup-schedule]]` entry, per switch, at its cron slot plus the
//! switch's stable jitter, with retries and backoff. The newest slot started is kept per (switch, cron),
//! and each slot is a unit of work claimed in the store (`slot:JOB@SLOT_MS`, see [`crate::replica`]) and
//! marked done once, so:
//! - with several replicas on one database, each slot is run by exactly one of them;
//! - a restart after downtime runs a missed slot once — not once per missed slot —, and a first start
//!   does not run slots from before it;
//! - a slot whose runner died in the middle (killed, or stopped during its backoff) is taken over once:
//!   at once by a restart on the same host (the holder's process is gone), after the claim's expiry by
//!   another replica; its interrupted run is audited. A backup is idempotent (the same config stores no
//!   second version), so a slot finished by the dead runner just before it died repeats nothing;
//! - a replica paused past the claim's expiry finds the slot taken at its next attempt (the fencing check)
//!   and can no longer mark it done.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use lifeline_engine::ops::runs::now_ms;
use lifeline_engine::{EngineError, Outcome};
use lifeline_netcfg::schedule::{RetryPolicy, Schedule};
use lifeline_types::AuditAction;

use crate::state::AppState;

/// Consecutive failures per switch (for the `backup-failed` fault rule).
#[derive(Debug, Default)]
pub struct BackupScheduler {
    failures: HashMap<String, u32>,
    /// Base delay between retries (tests shorten it).
    pub retry_base: Option<Duration>,
    pruned: Option<Instant>,
    /// Where a new version whose diff touches a port's MTU, PFC, QoS or LAG is sent, as evidence for the
    /// fault correlation (none: not compared).
    pub evidence: Option<tokio::sync::mpsc::Sender<lifeline_engine::switch_evidence::PortEvidence>>,
}

/// How long finished slots are kept in the store (for `exactly once` audits), pruned hourly.
const SLOT_RETENTION_MS: i64 = 30 * 24 * 3_600_000;

/// One switch's due run.
#[derive(Debug, Clone)]
struct Due {
    job: String,
    switch: String,
    slot: DateTime<Utc>,
    retries: u32,
}

fn job_key(switch: &str, cron: &str) -> String {
    format!("backup:{switch}:{cron}")
}

/// The unit of work of one slot of one job (claimed once, done once).
pub fn slot_key(job: &str, slot_ms: i64) -> String {
    format!("slot:{job}@{slot_ms}")
}

impl BackupScheduler {
    /// Runs whatever is due at the clock's now and not claimed by another replica; returns how many
    /// switches this replica backed up (ok or not).
    pub async fn tick(&mut self, s: &AppState) -> Result<usize, EngineError> {
        let now = s.clock.now();
        let due = self.due(s, now).await?;
        let mut n = 0;
        for d in due {
            n += usize::from(self.run(s, d).await);
        }
        if self.pruned.is_none_or(|t| t.elapsed() >= Duration::from_secs(3600)) {
            self.pruned = Some(Instant::now());
            let before = now_ms() - SLOT_RETENTION_MS;
            if let Err(e) = s.base.prune_done_work("slot:backup:", before).await {
                tracing::warn!("pruning old backup slots: {}", e.chain());
            }
        }
        Ok(n)
    }

    async fn due(&self, s: &AppState, now: DateTime<Utc>) -> Result<Vec<Due>, EngineError> {
        let cfg = &s.base.config.config;
        if cfg.backup_schedule.is_empty() {
            return Ok(Vec::new());
        }
        let inv = s.base.inventory()?;
        let mut out = Vec::new();
        for entry in &cfg.backup_schedule {
            let e = entry.get_ref();
            let jitter = e
                .jitter
                .as_deref()
                .map(humantime::parse_duration)
                .transpose()
                .ok()
                .flatten()
                .unwrap_or_default();
            let Ok(sched) = Schedule::parse(&e.cron, jitter) else { continue };
            let Ok(devices) = lifeline_inventory::select(&inv, &e.targets) else { continue };
            for d in devices.into_iter().filter(|d| d.switch.is_some()) {
                let name = d.name.to_string();
                let job = job_key(&name, &e.cron);
                let Some(started) = s.base.schedule_last(&job).await? else {
                    // First sight of this job: start counting from now (the first replica's mark stays).
                    s.base.schedule_init(&job, now.timestamp_millis()).await?;
                    continue;
                };
                let Some(last) = DateTime::from_timestamp_millis(started) else { continue };
                let Ok(mut slot) = sched.next_run(last, &name) else { continue };
                if slot > now {
                    // The newest slot claimed but not done: its runner died or is still at it (then the
                    // claim in `run` fails and nothing happens).
                    if s.base
                        .work_record(&slot_key(&job, started))
                        .await?
                        .is_some_and(|w| w.done_at_ms.is_none())
                    {
                        out.push(Due { job, switch: name, slot: last, retries: e.retries.max(1) });
                    }
                    continue;
                }
                // Collapse every missed slot into the newest one.
                for _ in 0..100_000 {
                    match sched.next_run(slot, &name) {
                        Ok(n) if n <= now => slot = n,
                        _ => break,
                    }
                }
                out.push(Due { job, switch: name, slot, retries: e.retries.max(1) });
            }
        }
        Ok(out)
    }

    /// Runs one due slot if this replica wins its claim; whether it ran.
    async fn run(&mut self, s: &AppState, d: Due) -> bool {
        let key = slot_key(&d.job, d.slot.timestamp_millis());
        let lease = match s.replica.claim(&key).await {
            Ok(Some(l)) => l,
            // Another replica runs it, or it is done.
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(switch = %d.switch, "cannot claim the backup slot; not running it: {e}");
                return false;
            }
        };
        let l = s.engine_as("scheduler");
        if let Some(prev) = lease.previous() {
            tracing::info!(switch = %d.switch, slot = %d.slot, holder = %prev.holder, "taking over an interrupted scheduled backup");
            let detail = serde_json::json!({
                "slot": d.slot, "holder": prev.holder, "fence": prev.fence,
                "note": "the replica running this slot stopped before finishing; the slot is run again once",
            });
            let audited = match l.audit().await {
                Ok(audit) => {
                    audit.record(AuditAction::BackupSlot, &d.switch, Outcome::Interrupted, None, detail).await
                }
                Err(e) => Err(e),
            };
            if let Err(e) = audited {
                tracing::warn!(switch = %d.switch, "cannot audit the interrupted slot: {}", e.chain());
            }
        }
        // Claimed before marked started: a crash in between leaves a claim that expires, never a started
        // slot nobody holds.
        if let Err(e) = s.base.schedule_advance(&d.job, d.slot.timestamp_millis()).await {
            tracing::warn!(switch = %d.switch, "cannot record the backup slot; not running it: {}", e.chain());
            lease.release().await;
            return false;
        }
        let policy = RetryPolicy {
            attempts: d.retries,
            base: self.retry_base.unwrap_or(Duration::from_secs(30)),
            ..RetryPolicy::default()
        };
        let mut last_err = None;
        for attempt in 1..=d.retries {
            if let Some(wait) = policy.delay_before(attempt, &d.switch) {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    // Not marked done: the claim expires (or its holder is seen dead on restart) and the
                    // slot runs again once.
                    _ = s.shutdown.cancelled() => return true,
                }
            }
            if !lease.still_held().await {
                tracing::warn!(switch = %d.switch, slot = %d.slot, "the backup slot was taken over by another replica; stopping");
                return true;
            }
            let res = match l.select_switches(std::slice::from_ref(&d.switch)) {
                Ok(t) => l.backup_run(t, &Default::default(), |_| {}).await,
                Err(e) => Err(e),
            };
            // The new version's number, when this backup made one.
            let res = res.and_then(|rows| {
                rows.into_iter()
                    .next()
                    .map(|r| {
                        r.result.map(|a| match a {
                            lifeline_engine::Acted::Fresh(b)
                            | lifeline_engine::Acted::Delayed { value: b, .. } => {
                                (b.outcome == "ok").then_some(b.detail.version)
                            }
                            lifeline_engine::Acted::Replayed { .. } => None,
                        })
                    })
                    .unwrap_or(Ok(None))
            });
            match res {
                Ok(version) => {
                    if let (Some(v), Some(tx)) = (version, &self.evidence) {
                        self.config_change(&l, &d.switch, v, tx).await;
                    }
                    mark_done(lease, &d, "ok").await;
                    s.metrics.backups.inc(&[("trigger", "schedule"), ("result", "ok")]);
                    self.failures.remove(&d.switch);
                    let _ = crate::faults::resolve(s, "backup-failed", &d.switch).await;
                    tracing::info!(switch = %d.switch, slot = %d.slot, "scheduled backup done");
                    return true;
                }
                Err(e) => {
                    tracing::warn!(switch = %d.switch, attempt, "scheduled backup failed: {}", e.chain());
                    last_err = Some(e);
                }
            }
        }
        mark_done(lease, &d, "failed").await;
        s.metrics.backups.inc(&[("trigger", "schedule"), ("result", "failed")]);
        let n = self.failures.entry(d.switch.clone()).or_default();
        *n += 1;
        let threshold = s.base.config.config.server.backup_failures_fault.unwrap_or(3).max(1);
        if *n >= threshold {
            let msg = format!(
                "{n} scheduled backups in a row failed: {}",
                last_err.map(|e| e.chain()).unwrap_or_default()
            );
            let _ = crate::faults::raise(
                s,
                "backup-failed",
                &d.switch,
                "warning",
                &msg,
                serde_json::json!({ "failures": *n }),
            )
            .await;
        }
        true
    }
}

impl BackupScheduler {
    /// A scheduler whose new versions are compared with the previous ones for the correlation.
    pub fn with_evidence(
        tx: tokio::sync::mpsc::Sender<lifeline_engine::switch_evidence::PortEvidence>,
    ) -> Self {
        BackupScheduler { evidence: Some(tx), ..Default::default() }
    }

    /// Compares a new version with the one before it (the engine's classifier) and hands a change to a
    /// port's MTU, PFC, QoS or LAG to the correlation.
    async fn config_change(
        &self,
        l: &lifeline_engine::Lifeline,
        switch: &str,
        version: u32,
        tx: &tokio::sync::mpsc::Sender<lifeline_engine::switch_evidence::PortEvidence>,
    ) {
        match l.config_change_evidence(switch, version).await {
            Ok(Some(e)) => {
                tracing::info!(%switch, version, "config change on ports: {}", e.message);
                let _ = tx.try_send(e);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(%switch, version, "cannot compare the new version: {}", e.chain()),
        }
    }
}

async fn mark_done(lease: crate::replica::WorkLease, d: &Due, outcome: &str) {
    if !lease.finish(outcome).await {
        // Fenced out (paused past the expiry) or the store failed: the slot's new holder decides.
        tracing::warn!(switch = %d.switch, slot = %d.slot, "could not mark the backup slot done (taken over?)");
    }
}
