//! Fleet sweeps: every BMC's power, health rollup and newest events, streamed as rows; what changed since
//! the previous sweep becomes events in the store (the demo's live view and the server's scheduler share
//! this).
//!
//! One verdict rule for `sweep` and `health` (README, exit codes): a BMC fails when it cannot be read or
//! when its health is critical.

use std::collections::HashMap;

use lifeline_bmc::{SweepOptions, SweepProgress, SweepRow};
use lifeline_store::NewEvent;
use lifeline_types::Health;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;
use crate::targets::BmcSelection;

/// Whether a swept BMC is fine: readable and not critical.
pub fn row_ok(row: &SweepRow) -> bool {
    row.ok() && row.health != Some(Health::Critical)
}

/// Whether a health reading is fine (the same rule as [`row_ok`]).
pub fn health_ok(h: Health) -> bool {
    h != Health::Critical
}

/// A sweep's result.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Sweep {
    pub rows: Vec<SweepRow>,
    /// Rows that are unreachable, failing, or critical.
    pub failing: usize,
    /// False when the sweep was stopped before every BMC answered.
    pub complete: bool,
}

impl Sweep {
    pub fn new(rows: Vec<SweepRow>, complete: bool) -> Sweep {
        let failing = rows.iter().filter(|r| !row_ok(r)).count();
        Sweep { rows, failing, complete }
    }
}

/// One change between two sweeps of a BMC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub severity: &'static str,
    pub message: String,
}

impl Lifeline {
    /// Sweeps the selection; `on_row` sees each row as it arrives (progress bars, partial results when the
    /// caller is interrupted). Each row is kept as an observation.
    pub async fn sweep(
        &self,
        sel: &BmcSelection,
        opts: &SweepOptions,
        on_row: impl FnMut(&SweepRow, SweepProgress) + Send,
    ) -> Result<Sweep> {
        let pool = self.bmc_pool().await?;
        let store = self.store().await?;
        let targets = sel.bmcs.iter().map(|b| b.target.clone()).collect();
        // `marks: Some(empty)` asks for the store's per-log high-water marks (the fault intake's sweeps): the
        // rows then carry every entry since the last such sweep, and the marks move on. Other sweeps (the
        // CLI, a runbook's re-check) neither read nor move them, so they never take entries from the intake.
        let mut opts = opts.clone();
        let marked = opts.events > 0 && opts.marks.as_ref().is_some_and(|m| m.is_empty());
        if marked {
            match store.log_marks(None).await {
                Ok(rows) => opts.marks = Some(std::sync::Arc::new(marks_by_device(rows))),
                Err(e) => {
                    tracing::warn!("log marks not read (this sweep judges the newest entries only): {e}")
                }
            }
        }
        let rows = pool.sweep(targets, &opts, on_row).await;
        for row in &rows {
            if let Err(e) = store.observe(&row.name, "sweep", &serde_json::json!(row)).await {
                tracing::warn!(bmc = %row.name, "observation not stored: {e}");
            }
            let Some(w) = row.window.as_ref().filter(|_| marked) else { continue };
            let marks: Vec<(String, String, Option<i64>)> = w
                .marks
                .iter()
                .map(|m| (m.log.clone(), m.id.clone(), m.time.map(|t| t.timestamp_millis())))
                .collect();
            if let Err(e) = store.set_log_marks(&row.name, &marks).await {
                tracing::warn!(bmc = %row.name, "log marks not stored: {e}");
            }
        }
        Ok(Sweep::new(rows, true))
    }
}

/// The store's marks as a sweep takes them.
fn marks_by_device(rows: Vec<lifeline_store::LogMarkRow>) -> lifeline_bmc::Marks {
    let mut out = lifeline_bmc::Marks::new();
    for r in rows {
        out.entry(r.device).or_default().push(lifeline_bmc::LogMark {
            log: r.log,
            id: r.entry_id,
            time: r.created_ms.and_then(chrono::DateTime::from_timestamp_millis),
        });
    }
    out
}

/// Remembers what [`changes`] compares of the last row per BMC and turns differences into events.
#[derive(Debug, Default)]
pub struct ChangeTracker {
    last: HashMap<String, Seen>,
}

/// What a tracker keeps of a BMC's previous row: the compared fields only. Whole rows (addresses, alerts,
/// event messages) were about a kilobyte per BMC kept between sweeps, 10 MiB or more at 10,000 BMCs.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub power: Option<lifeline_types::PowerState>,
    pub health: Option<Health>,
    pub ok: bool,
    pub event_ids: Vec<String>,
}

impl From<&SweepRow> for Seen {
    fn from(r: &SweepRow) -> Self {
        Seen {
            power: r.power,
            health: r.health,
            ok: r.ok(),
            event_ids: r.events.iter().map(|e| e.id.clone()).collect(),
        }
    }
}

impl ChangeTracker {
    /// The changes of `rows` against the previous sweep, stored as events; returns them per BMC.
    pub async fn track(&mut self, lifeline: &Lifeline, rows: &[SweepRow]) -> Result<Vec<(String, Change)>> {
        let store = lifeline.store().await?;
        let mut out = Vec::new();
        for row in rows {
            for c in changes(self.last.get(&row.name), row) {
                store
                    .record_event(&NewEvent {
                        device: Some(row.name.clone()),
                        source: "sweep".into(),
                        severity: c.severity.into(),
                        message: c.message.clone(),
                        data: serde_json::json!({}),
                    })
                    .await?;
                out.push((row.name.clone(), c));
            }
            let seen = Seen::from(row);
            match self.last.get_mut(&row.name) {
                Some(prev) => *prev = seen,
                None => {
                    self.last.insert(row.name.clone(), seen);
                }
            }
        }
        Ok(out)
    }
}

/// What changed for one BMC between two sweeps.
pub fn changes(prev: Option<&Seen>, now: &SweepRow) -> Vec<Change> {
    let mut out = Vec::new();
    let Some(prev) = prev else {
        return out;
    };
    let mut push = |severity, message| out.push(Change { severity, message });
    if prev.power != now.power {
        push("info", format!("power {} -> {}", opt(prev.power), opt(now.power)));
    }
    if prev.health != now.health {
        let sev = if now.health == Some(Health::Critical) { "critical" } else { "warning" };
        push(sev, format!("health {} -> {}", opt(prev.health), opt(now.health)));
    }
    if prev.ok && !now.ok() {
        push("critical", format!("unreachable: {}", now.errors.join("; ")));
    }
    if !prev.ok && now.ok() {
        push("info", "reachable again".into());
    }
    for e in &now.events {
        if !prev.event_ids.contains(&e.id) {
            push("warning", format!("SEL: {}", e.message));
        }
    }
    out
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}
