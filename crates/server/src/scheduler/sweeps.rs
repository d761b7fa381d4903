//! Fleet sweeps on an interval: each row is kept as an observation (the device list's power and health),
//! changes and new SEL entries become events, and the fault rules see every row. With several replicas
//! each sweeps its share of the BMCs (rendezvous over the live replicas, [`crate::replica`]): when one
//! dies its share moves to the others at their next sweep after its membership expires.
//!
//! Sweeps run in slots on the clock (the first at once, then at each multiple of the interval), so that
//! the replicas' sweeps of one slot are one round: the sweep faults are correlated over every replica's
//! sweep of a slot, not per replica ([`correlate`], [`lifeline_engine::correlate::rounds`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lifeline_engine::correlate::rounds::slot_of;
use lifeline_engine::ops::sweep::ChangeTracker;

pub mod correlate;

use crate::state::AppState;

/// The configured interval; `None` when disabled (`0s`) or unparsable (logged).
pub fn interval(s: &AppState) -> Option<Duration> {
    let text = s.base.config.config.server.sweep_interval.clone().unwrap_or_else(|| "60s".into());
    match humantime::parse_duration(&text) {
        Ok(d) if d.is_zero() => None,
        Ok(d) => Some(d.max(Duration::from_secs(1))),
        Err(e) => {
            tracing::warn!("[server] sweep-interval `{text}`: {e}; sweeps disabled");
            None
        }
    }
}

/// How long sweep observations are kept (each device's newest is always kept). Every sweep stores a row
/// per BMC — about 1 KiB each, 14 GiB a day at 10,000 BMCs every 60 s — so they cannot be kept forever;
/// the changes themselves are events, which stay.
pub const SWEEP_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// How often old sweep observations are deleted.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

pub async fn run_every(s: &AppState, every: Duration) {
    let mut tracker = ChangeTracker::default();
    let mut pruned: Option<Instant> = None;
    // Sweep faults are correlated across sweeps (a part's group stays open while its members stay dark).
    let Some(mut correlator) = correlator(s) else { return };
    let every_ms = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    loop {
        let slot = slot_of(now_ms(), every_ms);
        if let Err(e) = sweep_once(s, &mut tracker, &mut correlator, slot).await {
            tracing::warn!("sweep: {}", e.chain());
        }
        if pruned.is_none_or(|t| t.elapsed() >= PRUNE_EVERY) {
            pruned = Some(Instant::now());
            prune(s, every).await;
        }
        // To the next slot, deciding the rounds that become ready meanwhile (the other replicas' sweeps
        // of this slot end after ours): at most once a second.
        loop {
            if s.shutdown.is_cancelled() {
                return;
            }
            let left = slot + every_ms - now_ms();
            if left <= 0 {
                break;
            }
            // A lone replica decided its round when it kept its batch; only others' batches come later.
            if s.replica.live().len() > 1 {
                correlate::decide_ready(s, &mut correlator).await;
            }
            let nap = Duration::from_millis(u64::try_from(left.min(1000)).unwrap_or(0));
            tokio::select! {
                _ = tokio::time::sleep(nap) => {}
                _ = s.shutdown.cancelled() => return,
            }
        }
    }
}

async fn prune(s: &AppState, every: Duration) {
    let before = s.clock.now() - chrono::Duration::from_std(SWEEP_RETENTION).unwrap_or_default();
    match s.base.correlation_prune("sweep", before.timestamp_millis()).await {
        Ok(n) if n > 0 => tracing::info!("pruned {n} sweep observations older than {before}"),
        Ok(_) => {}
        Err(e) => tracing::warn!("pruning sweep observations: {}", e.chain()),
    }
    correlate::prune(s, every).await;
}

fn now_ms() -> i64 {
    lifeline_engine::ops::runs::now_ms()
}

/// The correlator of sweep faults, from `[correlation]` and the inventory's topology; `None` (the problem
/// reported) without an inventory. A bad `[correlation]` value is reported and the defaults are used: the
/// sweeps (power, health, the fleet's state) matter more than the tuning of their correlation.
pub fn correlator(s: &AppState) -> Option<lifeline_engine::correlate::Correlator> {
    use lifeline_engine::correlate::{Correlator, Settings, Topology};
    let settings = Settings::from_config(&s.base.config.config.correlation).unwrap_or_else(|e| {
        s.problem("sweep correlation", &format!("{}; the defaults are used", e.chain()));
        Settings::default()
    });
    match s.base.inventory() {
        Ok(inv) => Some(Correlator::new(Topology::from_inventory(&inv), settings)),
        Err(e) => {
            s.problem("sweeps", &format!("inventory: {}; no sweeps", e.chain()));
            None
        }
    }
}

/// The unit of sweep work of one BMC (only its preferred replica sweeps it).
pub fn sweep_key(device: &str) -> String {
    format!("sweep:{device}")
}

/// One sweep of this replica's share, in `slot`: rows kept, changes tracked, the fault rules through the
/// correlation over every replica's sweep of the slot ([`correlate::from_sweep`]).
pub async fn sweep_once(
    s: &AppState,
    tracker: &mut ChangeTracker,
    correlator: &mut lifeline_engine::correlate::Correlator,
    slot: i64,
) -> Result<(), lifeline_engine::EngineError> {
    let (mut sel, problems) = super::each_bmc(s, |_| true)?;
    if !problems.is_empty() {
        s.problem("sweeps", &format!("{} BMC(s) not swept: {}", problems.len(), problems.join("; ")));
    } else {
        s.clear_problem("sweeps");
    }
    sel.bmcs.retain(|b| s.replica.prefers(&sweep_key(b.name())));
    let rows = if sel.bmcs.is_empty() {
        // Every BMC is another replica's share: an empty batch still says this replica swept the slot.
        Vec::new()
    } else {
        sweep_rows(s, tracker, &sel).await?
    };
    let known = crate::faults::unresolved(s).await?;
    correlate::from_sweep(s, &rows, &known, correlator, correlate::Round::Share { slot }).await;
    Ok(())
}

async fn sweep_rows(
    s: &AppState,
    tracker: &mut ChangeTracker,
    sel: &lifeline_engine::BmcSelection,
) -> Result<Vec<lifeline_bmc::SweepRow>, lifeline_engine::EngineError> {
    let l = &s.base;
    let started = Instant::now();
    // From each log's high-water mark: the fault rules see every entry since the last sweep (engine sweep).
    let opts = lifeline_bmc::SweepOptions { marks: Some(Default::default()), ..Default::default() };
    let sweep = l.sweep(sel, &opts, |_, _| {}).await?;
    tracker.track(l, &sweep.rows).await?;
    let m = &s.metrics;
    m.sweeps.fetch_add(1, Ordering::Relaxed);
    m.sweep_duration_ms
        .store(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
    m.sweep_devices.store(sweep.rows.len() as u64, Ordering::Relaxed);
    m.sweep_failing.store(sweep.failing as u64, Ordering::Relaxed);
    let mut by_proto: std::collections::BTreeMap<String, u64> = Default::default();
    for row in &sweep.rows {
        let p = row.protocol.map(|p| p.to_string()).unwrap_or_else(|| "unknown".into());
        *by_proto.entry(p).or_default() += u64::from(row.ok());
    }
    for (p, n) in by_proto {
        m.bmc_reachable.set(&[("protocol", &p)], n);
    }
    Ok(sweep.rows)
}
