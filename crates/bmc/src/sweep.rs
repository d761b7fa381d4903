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

/// Share of the time left that power and health may use, so a slow health read still leaves the event log
/// a chance (time a part does not use passes to the next).
const POWER_SHARE: u32 = 4; // 1/4
const HEALTH_SHARE: (u32, u32) = (4, 5); // 4/5

/// Run one part of a visit within `limit`; its failure (or timeout) becomes `part: error` in the row.
async fn bounded<T>(
    bmc: &str,
    what: &'static str,
    limit: Duration,
    fut: impl std::future::Future<Output = Result<T, BmcError>>,
) -> Result<T, BmcError> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(BmcError::Timeout { bmc: bmc.to_owned(), what, after: limit }),
    }
}

/// One BMC: connect, then power, health and events, each bounded separately within the visit's budget, so
/// a part that times out costs only itself: what was read before it stays in the row, and the error names
/// the part (`health: … timed out after …`), never `connect` unless connecting failed.
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
    let budget = opts.per_bmc_timeout;
    // Closing gets its own slice at the end (a lost Close Session reply costs a few retransmissions).
    let close_reserve = (budget / 10).min(Duration::from_secs(3));
    let deadline = started + budget;
    let parts_deadline = deadline - close_reserve;
    let left = || parts_deadline.saturating_duration_since(Instant::now());
    let name = target.name.as_str();
    let spent = |what: &str| format!("{what}: skipped: the visit's {budget:?} budget was spent");

    let mut o = match bmc.open_conn(lifeline_ipmi::wire::Privilege::User, left()).await {
        Ok(o) => o,
        Err(e) => {
            part(&mut row.errors, "connect", &e);
            row.elapsed_ms = t0.elapsed().as_millis() as u64;
            return row;
        }
    };
    row.protocol = Some(o.protocol);
    let mut health = None;
    let mut health_failed = false;
    if let (true, false, crate::conn::Conn::Redfish(rc)) = (opts.health, opts.all_sensors, &mut o.conn) {
        let limit = left() * HEALTH_SHARE.0 / HEALTH_SHARE.1;
        match bounded(name, "reading the health rollup", limit, rc.rollup(opts.chassis)).await {
            Ok((p, h)) => {
                row.power = opts.power.then_some(p);
                health = Some(h);
            }
            Err(e) => {
                health_failed = true;
                part(&mut row.errors, "health", &e);
            }
        }
    } else if opts.power {
        match left() {
            l if l.is_zero() => row.errors.push(spent("power")),
            l => {
                match bounded(name, "reading the power state", l / POWER_SHARE, o.conn.power_state()).await {
                    Ok(p) => row.power = Some(p),
                    Err(e) => part(&mut row.errors, "power", &e),
                }
            }
        }
    }
    if opts.health && health.is_none() && !health_failed {
        let l = left();
        let limit = if opts.events > 0 { l * HEALTH_SHARE.0 / HEALTH_SHARE.1 } else { l };
        if limit.is_zero() {
            row.errors.push(spent("health"));
        } else {
            match bounded(name, "reading the sensors", limit, o.conn.health()).await {
                Ok(h) => health = Some(h),
                Err(e) => part(&mut row.errors, "health", &e),
            }
        }
    }
    if opts.events > 0 {
        match left() {
            l if l.is_zero() => row.errors.push(spent("events")),
            l => match bounded(name, "reading the event log", l, o.conn.events(opts.events)).await {
                Ok(log) => row.events = log.entries,
                Err(e) => part(&mut row.errors, "events", &e),
            },
        }
    }
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
    // A part that timed out may have left a request in flight; closing still works (the session matches
    // replies by rqSeq), and if even that runs out of time, dropping the session sends Close Session.
    let close_limit = deadline.saturating_duration_since(Instant::now()).max(close_reserve);
    let ok = row.errors.is_empty();
    if tokio::time::timeout(close_limit, bmc.finish(o, ok)).await.is_err() {
        tracing::debug!(bmc = %row.name, "closing timed out; the session is closed on drop");
    }
    tracing::debug!(bmc = %row.name, queued_ms = (started - t0).as_millis() as u64, "swept");
    row.elapsed_ms = t0.elapsed().as_millis() as u64;
    row
}
