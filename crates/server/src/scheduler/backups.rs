//! Scheduled switch backups: every `[[backup-schedule]]` entry, per switch, at its cron slot plus the
//! switch's stable jitter, with retries and backoff. The newest slot started and the newest slot finished
//! are kept in the store per (switch, cron), so a restart after downtime runs a missed slot once — not once
//! per missed slot —, a slot the server was killed in the middle of (or stopped during its backoff) runs
//! again once on restart (a backup is idempotent: the same config stores no second version), and a first
//! start does not run slots from before it.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lifeline_engine::EngineError;
use lifeline_netcfg::schedule::{RetryPolicy, Schedule};

use crate::state::AppState;

/// Consecutive failures per switch (for the `backup-failed` fault rule).
#[derive(Debug, Default)]
pub struct BackupScheduler {
    failures: HashMap<String, u32>,
    /// Base delay between retries (tests shorten it).
    pub retry_base: Option<Duration>,
}

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

/// The newest slot whose run ended (ok or out of retries); behind the started one after a crash.
fn done_key(job: &str) -> String {
    format!("{job}:done")
}

impl BackupScheduler {
    /// Runs whatever is due at the clock's now; returns how many switches were backed up (ok or not).
    pub async fn tick(&mut self, s: &AppState) -> Result<usize, EngineError> {
        let now = s.clock.now();
        let due = self.due(s, now).await?;
        let n = due.len();
        for d in due {
            self.run(s, d).await;
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
                let Some(started) = s.store.schedule_last(&job).await? else {
                    // First sight of this job: start counting from now.
                    s.store.schedule_mark(&job, now.timestamp_millis()).await?;
                    s.store.schedule_mark(&done_key(&job), now.timestamp_millis()).await?;
                    continue;
                };
                // No `done` mark (a data dir from before it existed) counts as finished.
                let done = s.store.schedule_last(&done_key(&job)).await?.unwrap_or(started);
                let Some(last) = DateTime::from_timestamp_millis(started) else { continue };
                let Ok(mut slot) = sched.next_run(last, &name) else { continue };
                if slot > now {
                    if done < started {
                        // Interrupted mid-run (killed, or stopped during a retry's backoff): once more.
                        tracing::info!(switch = %name, slot = %last, "resuming an interrupted scheduled backup");
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

    async fn run(&mut self, s: &AppState, d: Due) {
        // Marked started before running and done after: a crash in between runs the slot once more on
        // restart (`due`), never once per missed slot.
        if let Err(e) = s.store.schedule_mark(&d.job, d.slot.timestamp_millis()).await {
            tracing::warn!(switch = %d.switch, "cannot record the backup slot; not running it: {e}");
            return;
        }
        let l = s.engine_as("scheduler");
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
                    // Not marked done: the next start runs this slot again.
                    _ = s.shutdown.cancelled() => return,
                }
            }
            let res = match l.select_switches(std::slice::from_ref(&d.switch)) {
                Ok(t) => l.backup_run(t, &Default::default(), |_| {}).await,
                Err(e) => Err(e),
            };
            let res =
                res.and_then(|rows| rows.into_iter().next().map(|r| r.result.map(|_| ())).unwrap_or(Ok(())));
            match res {
                Ok(()) => {
                    self.mark_done(s, &d).await;
                    s.metrics.backups.inc(&[("trigger", "schedule"), ("result", "ok")]);
                    self.failures.remove(&d.switch);
                    let _ = crate::faults::resolve(s, "backup-failed", &d.switch).await;
                    tracing::info!(switch = %d.switch, slot = %d.slot, "scheduled backup done");
                    return;
                }
                Err(e) => {
                    tracing::warn!(switch = %d.switch, attempt, "scheduled backup failed: {}", e.chain());
                    last_err = Some(e);
                }
            }
        }
        self.mark_done(s, &d).await;
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
    }
}

impl BackupScheduler {
    async fn mark_done(&self, s: &AppState, d: &Due) {
        if let Err(e) = s.store.schedule_mark(&done_key(&d.job), d.slot.timestamp_millis()).await {
            // The slot runs once more after a restart: a repeat, not a loss.
            tracing::warn!(switch = %d.switch, "cannot record the backup slot as done: {e}");
        }
    }
}
