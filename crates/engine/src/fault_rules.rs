//! The sweep fault rules, once: which faults one swept BMC shows and which it proves gone. The server's
//! fault intake raises and resolves records with them, and a runbook's `fault-cleared` post-condition
//! evaluates the same rule on a fresh observation, so "recovered" means what "faulted" meant.

pub mod cabling;
pub mod console;

use std::time::Duration;

use chrono::{DateTime, Utc};
use lifeline_bmc::{EventEntry, SweepOptions, SweepRow};
use lifeline_types::Health;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};

pub const BMC_UNREACHABLE: &str = "bmc-unreachable";
pub const HEALTH_CRITICAL: &str = "health-critical";
pub const SEL_CRITICAL: &str = "sel-critical";
/// The BMC lists fewer GPUs than the inventory expects.
pub const GPU_MISSING: &str = "gpu-missing";
/// Raised from the in-band agent's report, not from a sweep.
pub const AGENT_REPORT: &str = "agent-report";

/// One fault a sweep row shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: &'static str,
    pub severity: &'static str,
    pub message: String,
    pub detail: serde_json::Value,
}

/// What one swept BMC says about the sweep rules.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SweepVerdict {
    /// Faults it shows.
    pub raise: Vec<Finding>,
    /// Kinds it proves gone (a clean read of the same evidence).
    pub clear: Vec<&'static str>,
}

/// The sweep rules for one row. `events_since`: only event-log entries from then on count (a
/// re-observation after a recovery must not see the entry that started it; entries without a time are
/// counted, since their age is unknown).
pub fn sweep_verdict(row: &SweepRow, events_since: Option<DateTime<Utc>>) -> SweepVerdict {
    let mut v = SweepVerdict::default();
    if row.ok() {
        v.clear.push(BMC_UNREACHABLE);
    } else if row.power.is_none() && row.health.is_none() {
        v.raise.push(Finding {
            kind: BMC_UNREACHABLE,
            severity: "critical",
            message: row.errors.join("; "),
            detail: serde_json::json!({ "errors": row.errors }),
        });
    }
    match row.health {
        Some(Health::Critical) => {
            let message =
                if row.alerts.is_empty() { "health critical".to_owned() } else { row.alerts.join("; ") };
            v.raise.push(Finding {
                kind: HEALTH_CRITICAL,
                severity: "critical",
                message,
                detail: serde_json::json!({ "alerts": row.alerts }),
            });
        }
        Some(_) => v.clear.push(HEALTH_CRITICAL),
        None => {}
    }
    // Judged only when the GPUs were read and the BMC lists any (see `GpuCount::compare`).
    match row.gpus {
        Some(c) if c.missing() > 0 => v.raise.push(Finding {
            kind: GPU_MISSING,
            severity: "critical",
            message: c.reason().unwrap_or_default(),
            detail: serde_json::json!({ "expected": c.expected, "listed": c.listed }),
        }),
        Some(_) => v.clear.push(GPU_MISSING),
        None => {}
    }
    // With per-log marks the rules see every entry since the last read (however many arrived), else the
    // newest entries the sweep shows.
    let seen = row.window.as_ref().map_or(&row.events, |w| &w.entries);
    let critical: Vec<&EventEntry> = seen
        .iter()
        .filter(|e| e.severity == Health::Critical)
        .filter(|e| match (events_since, e.time) {
            (Some(since), Some(t)) => t >= since,
            _ => true,
        })
        .collect();
    match critical.first() {
        Some(e) => v.raise.push(Finding {
            kind: SEL_CRITICAL,
            severity: "critical",
            message: e.message.clone(),
            detail: serde_json::json!({
                "entries": critical,
                "incomplete": row.window.as_ref().map(|w| &w.incomplete),
            }),
        }),
        // The log was read and holds no (new) critical entry.
        None if row.ok() || !row.errors.iter().any(|e| e.starts_with("events")) => v.clear.push(SEL_CRITICAL),
        None => {}
    }
    v
}

/// A fault rule evaluated again on a fresh observation of its device.
#[derive(Debug, Clone, Serialize)]
pub struct Recheck {
    pub device: String,
    /// The kinds evaluated.
    pub kinds: Vec<String>,
    /// Every evaluated kind is proven gone.
    pub cleared: bool,
    /// What still shows (or why a kind could not be evaluated).
    pub remaining: Vec<Finding>,
    /// The observation, for the journal.
    pub row: SweepRow,
}

impl Lifeline {
    /// Sweeps `device`'s BMC once (power, health, the newest events) and evaluates the sweep rules of
    /// `kinds` (empty: all of them) on it; event entries older than `since` do not count.
    pub async fn fault_recheck(
        &self,
        device: &str,
        kinds: &[&str],
        since: Option<DateTime<Utc>>,
    ) -> Result<Recheck> {
        let sel = self.select_bmcs(&[device.to_owned()], &[], false)?;
        let opts =
            SweepOptions { events: 50, per_bmc_timeout: Duration::from_secs(20), ..SweepOptions::default() };
        let sweep = self.sweep(&sel, &opts, |_, _| {}).await?;
        let row = sweep.rows.into_iter().next().ok_or_else(|| EngineError::NotFound {
            target: device.into(),
            what: "no BMC to observe".into(),
        })?;
        // "Every rule" takes gpu-missing only where it can be judged (the inventory gives a GPU count and
        // the BMC lists GPUs); asked for by name, a GPU count that cannot be read is not proof it is gone.
        let mut all = vec![BMC_UNREACHABLE, HEALTH_CRITICAL, SEL_CRITICAL];
        if row.gpus.is_some() {
            all.push(GPU_MISSING);
        }
        let kinds: Vec<&str> = if kinds.is_empty() { all } else { kinds.to_vec() };
        let verdict = sweep_verdict(&row, since);
        let mut remaining: Vec<Finding> =
            verdict.raise.into_iter().filter(|f| kinds.contains(&f.kind)).collect();
        for k in &kinds {
            let shown = remaining.iter().any(|f| f.kind == *k);
            if !shown && !verdict.clear.contains(k) {
                let kind = [BMC_UNREACHABLE, HEALTH_CRITICAL, SEL_CRITICAL, GPU_MISSING, AGENT_REPORT]
                    .into_iter()
                    .find(|a| a == k)
                    .unwrap_or("unknown");
                remaining.push(Finding {
                    kind,
                    severity: "unknown",
                    message: format!(
                        "`{k}` could not be evaluated from this observation: {}",
                        row.errors.join("; ")
                    ),
                    detail: serde_json::json!({}),
                });
            }
        }
        Ok(Recheck {
            device: device.into(),
            kinds: kinds.iter().map(ToString::to_string).collect(),
            cleared: remaining.is_empty(),
            remaining,
            row,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(health: Option<Health>, events: Vec<EventEntry>, errors: Vec<&str>) -> SweepRow {
        SweepRow {
            name: "n1".into(),
            address: "127.0.0.1".into(),
            protocol: None,
            power: Some(lifeline_types::PowerState::On),
            health,
            sensors: 0,
            alerts: vec![],
            events,
            errors: errors.into_iter().map(String::from).collect(),
            out_of_time: vec![],
            hint: None,
            budget_ms: 0,
            transmissions_per_request: None,
            elapsed_ms: 0,
            gpus: None,
            window: None,
        }
    }

    fn entry(t: Option<DateTime<Utc>>) -> EventEntry {
        EventEntry {
            id: "1".into(),
            time: t,
            time_note: None,
            severity: Health::Critical,
            message: "GPU 2 DBE".into(),
            sensor: None,
            log: None,
        }
    }

    #[test]
    fn a_critical_rollup_raises_and_an_ok_one_clears() {
        let v = sweep_verdict(&row(Some(Health::Critical), vec![], vec![]), None);
        assert_eq!(v.raise.iter().map(|f| f.kind).collect::<Vec<_>>(), [HEALTH_CRITICAL]);
        let v = sweep_verdict(&row(Some(Health::Ok), vec![], vec![]), None);
        assert!(v.raise.is_empty() && v.clear.contains(&HEALTH_CRITICAL) && v.clear.contains(&SEL_CRITICAL));
    }

    #[test]
    fn an_old_critical_entry_does_not_count_after_the_recovery_began() {
        let t0 = Utc::now();
        let old = entry(Some(t0 - chrono::Duration::minutes(5)));
        let v = sweep_verdict(&row(Some(Health::Ok), vec![old.clone()], vec![]), Some(t0));
        assert!(v.clear.contains(&SEL_CRITICAL), "{v:?}");
        let v = sweep_verdict(&row(Some(Health::Ok), vec![old], vec![]), None);
        assert_eq!(v.raise[0].kind, SEL_CRITICAL);
        let new = entry(Some(t0 + chrono::Duration::seconds(1)));
        let v = sweep_verdict(&row(Some(Health::Ok), vec![new], vec![]), Some(t0));
        assert_eq!(v.raise[0].kind, SEL_CRITICAL, "a new critical entry is the fault again");
    }

    #[test]
    fn a_gpu_the_bmc_no_longer_lists_is_a_fault_and_its_return_clears_it() {
        use lifeline_bmc::GpuCount;
        let mut r = row(Some(Health::Ok), vec![], vec![]);
        r.gpus = Some(GpuCount { expected: 8, listed: 7 });
        let v = sweep_verdict(&r, None);
        let f = v.raise.iter().find(|f| f.kind == GPU_MISSING).expect("gpu-missing raised");
        assert_eq!(f.message, "GPUs: 7 of 8 expected listed by the BMC (1 missing)");
        assert!(!v.clear.contains(&GPU_MISSING));
        r.gpus = Some(GpuCount { expected: 8, listed: 8 });
        assert!(sweep_verdict(&r, None).clear.contains(&GPU_MISSING));
        // Not read (or a BMC that lists no GPU): proves nothing either way.
        r.gpus = None;
        let v = sweep_verdict(&r, None);
        assert!(!v.clear.contains(&GPU_MISSING) && v.raise.iter().all(|f| f.kind != GPU_MISSING));
    }

    #[test]
    fn with_marks_every_critical_entry_since_the_last_read_counts() {
        // The newest entries shown are clean; the window since the mark holds a critical one further down.
        let mut r = row(Some(Health::Ok), vec![], vec![]);
        let mut ok = entry(Some(Utc::now()));
        ok.severity = Health::Ok;
        r.events = vec![ok.clone()];
        r.window = Some(lifeline_bmc::LogWindow { entries: vec![ok, entry(None)], ..Default::default() });
        assert_eq!(sweep_verdict(&r, None).raise[0].kind, SEL_CRITICAL);
        // Nothing new since the mark: nothing to raise, the log was read.
        r.window = Some(lifeline_bmc::LogWindow::default());
        r.events = vec![entry(None)];
        assert!(sweep_verdict(&r, None).clear.contains(&SEL_CRITICAL));
    }

    #[test]
    fn an_unreadable_log_proves_nothing() {
        let v = sweep_verdict(&row(Some(Health::Ok), vec![], vec!["events: timed out"]), None);
        assert!(!v.clear.contains(&SEL_CRITICAL) && !v.clear.contains(&BMC_UNREACHABLE), "{v:?}");
    }
}
