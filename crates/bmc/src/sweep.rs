//! Fleet sweep: power, health and the newest event log entries of many BMCs at once, within the pool's
//! fan-out limit, one connection per BMC. One failing BMC (or one failing part of one BMC) becomes an error
//! in its row, never a failed sweep. Rows stream to a callback as they complete; the returned list is in
//! target order. The tasks live in a `JoinSet`, so dropping the sweep future cancels them all.

use std::time::Duration;

use lifeline_types::{BmcProtocol, Health, PowerState};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::{BmcError, error_chain};
use crate::events::EventEntry;
use crate::pool::BmcPool;
use crate::target::BmcTarget;

/// What a sweep reads from each BMC.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub power: bool,
    pub health: bool,
    /// Newest event log entries per BMC (0: none).
    pub events: usize,
    /// Bound of one BMC's whole visit.
    pub per_bmc_timeout: Duration,
    /// Redfish: read every sensor (as `Bmc::health`) instead of the BMC's own rollup. Off by default: the
    /// rollup (`ComputerSystem.Status` + `PowerState`, one GET once the path is known) answers "which nodes
    /// are unwell" in a few round trips, where every sensor costs ~30. IPMI has no rollup and always reads
    /// the sensors.
    pub all_sensors: bool,
    /// Redfish rollup: when the system reports no `HealthRollup`, also read the status of the chassis it
    /// links to (one more round trip, concurrently per chassis), so fans and power supplies are covered.
    pub chassis: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            power: true,
            health: true,
            events: 3,
            per_bmc_timeout: Duration::from_secs(30),
            all_sensors: false,
            chassis: true,
        }
    }
}

/// One BMC's line in the sweep table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    pub name: String,
    pub address: String,
    pub protocol: Option<BmcProtocol>,
    pub power: Option<PowerState>,
    pub health: Option<Health>,
    pub sensors: usize,
    /// Sensors that are not `ok`, as `name=reading units (health)`.
    pub alerts: Vec<String>,
    pub events: Vec<EventEntry>,
    /// `part: error` for every part that failed (`connect`, `power`, `health`, `events`).
    pub errors: Vec<String>,
    pub elapsed_ms: u64,
}

impl SweepRow {
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Progress handed to the callback with each finished row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepProgress {
    pub done: usize,
    pub total: usize,
}

fn part(errors: &mut Vec<String>, what: &str, e: &BmcError) {
    errors.push(format!("{what}: {}", error_chain(e)));
}

impl BmcPool {
    /// Sweep `targets`. `progress` is called once per BMC, in completion order.
    pub async fn sweep(
        &self,
        targets: Vec<BmcTarget>,
        opts: &SweepOptions,
        mut progress: impl FnMut(&SweepRow, SweepProgress) + Send,
    ) -> Vec<SweepRow> {
        let total = targets.len();
        let mut set = JoinSet::new();
        for (i, t) in targets.into_iter().enumerate() {
            let bmc = self.bmc(t);
            let opts = opts.clone();
            set.spawn(async move { (i, visit(bmc, opts).await) });
        }
        let mut rows: Vec<Option<SweepRow>> = vec![None; total];
        let mut done = 0;
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((i, row)) => {
                    done += 1;
                    progress(&row, SweepProgress { done, total });
                    rows[i] = Some(row);
                }
                Err(e) => tracing::error!(error = %e, "sweep task failed"),
            }
        }
        rows.into_iter().flatten().collect()
    }
}

#[derive(Default)]
struct Visit {
    power: Option<PowerState>,
    health: Option<crate::HealthSummary>,
    events: Vec<EventEntry>,
    errors: Vec<String>,
}

async fn visit(bmc: crate::Bmc, opts: SweepOptions) -> SweepRow {
    let t0 = Instant::now();
    let target = bmc.target().clone();
    let mut row = SweepRow {
        name: target.name.clone(),
        address: target.address.clone(),
        protocol: None,
        power: None,
        health: None,
        sensors: 0,
        alerts: Vec::new(),
        events: Vec::new(),
        errors: Vec::new(),
        elapsed_ms: 0,
    };
    let _permit = bmc.pool().permit().await;
    let started = Instant::now();
    let o = opts.clone();
    let r = bmc
        .with_conn_permitted(lifeline_ipmi::wire::Privilege::User, opts.per_bmc_timeout, move |c| {
            Box::pin(async move {
                let mut out = Visit::default();
                if let (true, false, crate::conn::Conn::Redfish(rc)) = (o.health, o.all_sensors, &mut *c) {
                    match rc.rollup(o.chassis).await {
                        Ok((p, h)) => {
                            out.power = o.power.then_some(p);
                            out.health = Some(h);
                        }
                        Err(e) => part(&mut out.errors, "health", &e),
                    }
                } else if o.power {
                    match c.power_state().await {
                        Ok(p) => out.power = Some(p),
                        Err(e) => part(&mut out.errors, "power", &e),
                    }
                }
                if o.health && out.health.is_none() && !out.errors.iter().any(|e| e.starts_with("health")) {
                    match c.health().await {
                        Ok(h) => out.health = Some(h),
                        Err(e) => part(&mut out.errors, "health", &e),
                    }
                }
                if o.events > 0 {
                    match c.events(o.events).await {
                        Ok(l) => out.events = l.entries,
                        Err(e) => part(&mut out.errors, "events", &e),
                    }
                }
                Ok::<_, BmcError>(out)
            })
        })
        .await;
    match r {
        Ok((protocol, Visit { power, health, events, errors })) => {
            row.protocol = Some(protocol);
            row.power = power;
            if let Some(h) = health {
                row.health = Some(h.health);
                row.sensors = h.sensors.len();
                row.alerts = h
                    .resources
                    .iter()
                    .filter(|r| h.rollup_only && r.health != Health::Ok)
                    .map(|r| format!("{}={}", r.resource, r.health))
                    .collect();
                row.alerts.extend(h.sensors.iter().filter(|s| s.health != Health::Ok).map(|s| {
                    let v = s.reading.map(|v| format!("{v}")).unwrap_or_else(|| "-".into());
                    format!(
                        "{}={v}{} ({})",
                        s.name,
                        s.units.as_deref().map(|u| format!(" {u}")).unwrap_or_default(),
                        s.health
                    )
                }));
            }
            row.events = events;
            row.errors = errors;
        }
        Err(e) => part(&mut row.errors, "connect", &e),
    }
    tracing::debug!(bmc = %row.name, queued_ms = (started - t0).as_millis() as u64, "swept");
    row.elapsed_ms = t0.elapsed().as_millis() as u64;
    row
}
