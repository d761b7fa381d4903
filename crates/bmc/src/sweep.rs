//! Fleet sweep: power, health and the newest event log entries of many BMCs at once, within the pool's
//! fan-out limit, one connection per BMC. One failing BMC (or one failing part of one BMC) becomes an error
//! in its row, never a failed sweep. Rows stream to a callback as they complete; the returned list is in
//! target order. The tasks live in a `JoinSet`, so dropping the sweep future cancels them all.

use std::time::Duration;

use lifeline_types::{BmcProtocol, Health, PowerState};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::conn::Conn;
use crate::error::{BmcError, error_chain};
use crate::events::EventEntry;
use crate::health::HealthSummary;
use crate::pool::{BmcPool, Opened};
use crate::target::BmcTarget;
use futures::future::BoxFuture;

/// What a sweep reads from each BMC.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub power: bool,
    pub health: bool,
    /// Newest event log entries per BMC (0: none).
    pub events: usize,
    /// Bound of one BMC's whole visit (on a lossy link it may grow up to `max_per_bmc_timeout`).
    pub per_bmc_timeout: Duration,
    /// Adaptive budget: an IPMI BMC whose answered requests needed retransmissions (a lossy link) gets its
    /// visit extended in proportion, up to this bound (`per_bmc_timeout` or less: no extension). Why: at 30 %
    /// loss each way a full health read needs about twice the clean-link time, and an operator sweeping a
    /// fleet during an outage wants the health, not `unknown`. A silent BMC is never extended (only answered
    /// requests count).
    pub max_per_bmc_timeout: Duration,
    /// Redfish: read every sensor (as `Bmc::health`) instead of the BMC's own rollup. Off by default: the
    /// rollup (`ComputerSystem.Status` + `PowerState`, one GET once the path is known) answers "which nodes
    /// are unwell" in a few round trips, where every sensor costs ~30. IPMI has no rollup and always reads
    /// the sensors.
    pub all_sensors: bool,
    /// Redfish rollup: when the system reports no `HealthRollup`, also read the status of the chassis it
    /// links to (one more round trip, concurrently per chassis), so fans and power supplies are covered.
    pub chassis: bool,
    /// Per-log high-water marks by device: with them, each row carries the entries new since its marks
    /// ([`SweepRow::window`], see [`crate::marks`]) and the marks to keep. `None`: no window.
    pub marks: Option<std::sync::Arc<crate::marks::Marks>>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            power: true,
            health: true,
            events: 3,
            per_bmc_timeout: Duration::from_secs(30),
            max_per_bmc_timeout: Duration::from_secs(120),
            all_sensors: false,
            chassis: true,
            marks: None,
        }
    }
}

/// One BMC's line in the sweep table.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
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
    /// Parts that ran out of time (timed out, or skipped because the budget was spent).
    pub out_of_time: Vec<String>,
    /// What to do about it, when a part ran out of time: the budget it had and the option that gives more.
    pub hint: Option<String>,
    /// The visit's budget in the end (more than `per_bmc_timeout` when the link was lossy).
    pub budget_ms: u64,
    /// IPMI: transmissions per answered request on this BMC's session (1.0 on a clean link).
    pub transmissions_per_request: Option<f64>,
    pub elapsed_ms: u64,
    /// The GPUs the BMC lists against the inventory's count (Redfish, a target with an expected count, a
    /// BMC that lists GPUs at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<crate::below::GpuCount>,
    /// With [`SweepOptions::marks`]: every entry new since the last read of each log, and the new marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<crate::marks::LogWindow>,
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

fn part(row: &mut SweepRow, what: &str, e: &BmcError) {
    if matches!(e, BmcError::Timeout { .. }) {
        row.out_of_time.push(what.to_owned());
    }
    row.errors.push(format!("{what}: {}", error_chain(e)));
}

/// Say which parts ran out of time, the budget they had, and the option that gives more.
fn hint(row: &mut SweepRow) {
    if row.out_of_time.is_empty() {
        return;
    }
    let secs = row.budget_ms.div_ceil(1000);
    row.hint = Some(format!(
        "{} ran out of this BMC's {secs} s budget; give it more with --per-bmc-timeout (e.g. {})",
        row.out_of_time.join(", "),
        (secs * 2).max(60)
    ));
}

/// The budget a lossy link earns: the configured one times the square of the transmissions each answered
/// request took (time per request grows faster than the count: each retransmission waits longer), capped.
fn adapted(budget: Duration, cap: Duration, per_request: Option<f64>) -> Duration {
    let Some(t) = per_request.filter(|t| t.is_finite() && *t > 1.0) else { return budget };
    budget.mul_f64((t * t).min(16.0)).min(cap.max(budget))
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
        // No more visits in flight than the fan-out lets run: a visit waiting for its permit is a task
        // of several KiB, and 10,000 of them at once were most of a large sweep's peak memory (which the
        // allocator then keeps).
        let in_flight = self.inner.opts.fanout.max(1);
        let mut targets = targets.into_iter().enumerate();
        let mut set = JoinSet::new();
        let mut rows: Vec<Option<SweepRow>> = vec![None; total];
        let mut done = 0;
        loop {
            while set.len() < in_flight
                && let Some((i, t)) = targets.next()
            {
                // Event logs are found through the managers as well as the systems.
                let reads = if opts.events > 0 {
                    lifeline_redfish::FIRST_CONTACT_READS
                } else {
                    crate::pool::SYSTEM_READS
                };
                let bmc = self.bmc(t).reading_first(reads);
                let opts = opts.clone();
                // Boxed: the visit's state machine is several KiB, and a task's future is copied on spawn and
                // again when its stage changes (measured: ~10 % of a warm sweep's CPU in memcpy unboxed).
                set.spawn(async move { (i, Box::pin(visit(bmc, opts)).await) });
            }
            let Some(joined) = set.join_next().await else { break };
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

/// The time one visit may take: the configured budget, grown while the visit runs when the link proves
/// lossy (see [`SweepOptions::max_per_bmc_timeout`]). Each part gets a share of what is left when it starts,
/// and its end moves with the budget, so a part already running on a lossy link is not cut short by a
/// deadline computed before the loss showed.
struct Budget {
    started: Instant,
    base: Duration,
    cap: Duration,
    /// Closing gets its own slice at the end (a lost Close Session reply costs a few retransmissions).
    close_reserve: Duration,
    granted: Duration,
    per_request: Option<f64>,
    link: Option<std::sync::Arc<lifeline_ipmi::client::LinkCounters>>,
}

impl Budget {
    /// `remembered`: transmissions per request of this BMC's previous visit (the connect has no statistics
    /// of its own yet).
    fn new(base: Duration, cap: Duration, remembered: Option<f64>) -> Self {
        let close_reserve = (base / 10).min(Duration::from_secs(3));
        Budget {
            started: Instant::now(),
            base,
            cap,
            close_reserve,
            granted: adapted(base, cap, remembered),
            per_request: remembered,
            link: None,
        }
    }

    fn watch(&mut self, link: std::sync::Arc<lifeline_ipmi::client::LinkCounters>) {
        self.link = Some(link);
    }

    fn deadline(&self) -> Instant {
        self.started + self.granted
    }

    /// Where the parts must end, after growing the budget from the link statistics seen so far.
    fn parts_deadline(&mut self) -> Instant {
        if let Some(l) = &self.link {
            self.per_request = l.snapshot().transmissions_per_request();
            self.granted = self.granted.max(adapted(self.base, self.cap, self.per_request));
        }
        self.deadline() - self.close_reserve
    }

    fn left(&mut self) -> Duration {
        self.parts_deadline().saturating_duration_since(Instant::now())
    }

    /// Run one part within `share` of the time left; its failure (or timeout) becomes `part: error` in the row.
    async fn bounded<T>(
        &mut self,
        bmc: &str,
        what: &'static str,
        share: (u32, u32),
        fut: impl std::future::Future<Output = Result<T, BmcError>>,
    ) -> Result<T, BmcError> {
        let start = Instant::now();
        let mut end = start + self.parts_deadline().saturating_duration_since(start) * share.0 / share.1;
        tokio::pin!(fut);
        loop {
            match tokio::time::timeout_at(end, &mut fut).await {
                Ok(r) => return r,
                Err(_) => {
                    let later =
                        start + self.parts_deadline().saturating_duration_since(start) * share.0 / share.1;
                    if later <= end {
                        return Err(BmcError::Timeout { bmc: bmc.to_owned(), what, after: end - start });
                    }
                    end = later;
                }
            }
        }
    }
}

/// Runs one part on the visit's connection. When the connection was a kept session and the part fails,
/// the session is replaced by a fresh login and the part runs once more: a BMC that was reset or dropped
/// our session shows as a failed request, and one reopen tells that apart from a failing BMC.
async fn part_on<T>(
    bmc: &crate::Bmc,
    o: &mut Opened,
    budget: &mut Budget,
    what: &'static str,
    share: (u32, u32),
    mut f: impl for<'a> FnMut(&'a mut Conn) -> BoxFuture<'a, Result<T, BmcError>>,
) -> Result<T, BmcError> {
    let name = bmc.name();
    let first = budget.bounded(name, what, share, f(&mut o.conn)).await;
    let e = match first {
        Err(e) if o.reused => e,
        r => return o.check(r),
    };
    tracing::debug!(bmc = %name, error = %error_chain(&e), "kept IPMI session failed; logging in again");
    bmc.reopen_kept(o, budget.left()).await?;
    if let Conn::Ipmi(c) = &o.conn {
        budget.watch(c.session.link_counters());
    }
    let r = budget.bounded(name, what, share, f(&mut o.conn)).await;
    o.check(r)
}

/// Redfish health (the rollup with the power state, or every sensor) and the newest events at the same
/// time: they are independent reads, and on a BMC 200 ms away running them one after the other doubles the
/// visit. Both go over the one connection (one shared session token, within the client's per-BMC request
/// limit). Each is bounded as it would be alone: health by its share of the time left, events by all of it.
async fn redfish_health_and_events(
    rc: &mut crate::conn::RedfishConn,
    opts: &SweepOptions,
    left: Duration,
) -> (Result<(PowerState, HealthSummary), BmcError>, Result<crate::events::EventLog, BmcError>) {
    let start = Instant::now();
    let health_after = left * HEALTH_SHARE.0 / HEALTH_SHARE.1;
    // Both walk the Systems collection and the system (without `$expand`, two requests each): read once.
    let shared = rc.client.sharing_reads();
    let plain = std::mem::replace(&mut rc.client, shared);
    let (client, bmc, known_logs) = (rc.client.clone(), rc.bmc.clone(), rc.known.logs.clone());
    let timeout = |what: &'static str, after: Duration| BmcError::Timeout { bmc: bmc.clone(), what, after };
    let events = async {
        let marks = opts.marks.as_ref().and_then(|m| m.get(&bmc)).map_or(&[][..], Vec::as_slice);
        let read = crate::events::redfish_events(&client, &bmc, &known_logs, opts.events, marks);
        match tokio::time::timeout_at(start + left, read).await {
            Ok(r) => r,
            Err(_) => Err(timeout("reading the event log", left)),
        }
    };
    let all_sensors = opts.all_sensors;
    let chassis = opts.chassis;
    let health = async {
        let read = async {
            if all_sensors {
                let h = rc.health_read(false).await?;
                let power = rc.system.as_ref().and_then(|s| s.power_state).unwrap_or(PowerState::Unknown);
                Ok((power, h))
            } else {
                rc.rollup(chassis).await
            }
        };
        let what = if all_sensors { "reading the sensors" } else { "reading the health rollup" };
        match tokio::time::timeout_at(start + health_after, read).await {
            Ok(r) => r,
            Err(_) => Err(timeout(what, health_after)),
        }
    };
    let (h, e) = tokio::join!(health, events);
    rc.client = plain;
    if let Ok((_, used)) = &e {
        rc.used_logs = Some(used.clone());
    }
    (h, e.map(|(log, _)| log))
}

/// The newest entries for the row and, with marks, the window since them.
fn take_events(row: &mut SweepRow, log: crate::events::EventLog, opts: &SweepOptions) {
    if let Some(m) = &opts.marks {
        let mine = m.get(&row.name).map_or(&[][..], Vec::as_slice);
        row.window = Some(crate::marks::window(&log, mine, opts.events));
    }
    row.events = log.entries;
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
        out_of_time: Vec::new(),
        hint: None,
        budget_ms: opts.per_bmc_timeout.as_millis() as u64,
        transmissions_per_request: None,
        elapsed_ms: 0,
        gpus: None,
        window: None,
    };
    let _permit = bmc.pool().permit().await;
    let name = target.name.as_str();
    let spent = |row: &mut SweepRow, what: &str| {
        row.out_of_time.push(what.to_owned());
        row.errors.push(format!("{what}: skipped: the visit's budget was spent"));
    };
    let remembered = bmc.pool().link_cost(name);
    let mut budget = Budget::new(opts.per_bmc_timeout, opts.max_per_bmc_timeout, remembered);

    // The parts below are boxed (see `conn::open`): the visit's own future stays small, and each BMC
    // holds only the part it is in.
    let mut o = match Box::pin(bmc.open_conn_kept(budget.left())).await {
        Ok(o) => o,
        Err(e) => {
            part(&mut row, "connect", &e);
            row.budget_ms = budget.granted.as_millis() as u64;
            hint(&mut row);
            row.elapsed_ms = t0.elapsed().as_millis() as u64;
            return row;
        }
    };
    if let crate::conn::Conn::Ipmi(c) = &o.conn {
        budget.watch(c.session.link_counters());
    }
    row.protocol = Some(o.protocol);
    let mut health = None;
    let mut health_failed = false;
    let mut events_done = false;
    // Redfish: the health rollup (or, with events, the health read whichever it is) gives the power state too.
    let mut rollup = None;
    if let (true, true, crate::conn::Conn::Redfish(rc)) = (opts.health, opts.events > 0, &mut o.conn) {
        let (h, e) = Box::pin(redfish_health_and_events(rc, &opts, budget.left())).await;
        match e {
            Ok(log) => take_events(&mut row, log, &opts),
            Err(e) => part(&mut row, "events", &e),
        }
        events_done = true;
        rollup = Some(h);
    } else if let (true, false, crate::conn::Conn::Redfish(rc)) = (opts.health, opts.all_sensors, &mut o.conn)
    {
        let fut = rc.rollup(opts.chassis);
        rollup = Some(Box::pin(budget.bounded(name, "reading the health rollup", HEALTH_SHARE, fut)).await);
    } else if let (true, true, crate::conn::Conn::Redfish(rc)) = (opts.health, opts.all_sensors, &mut o.conn)
    {
        // Every sensor, no events: the sensor read reads the system document, whose `PowerState` is the
        // power state (reading it again for the power part was one GET more per BMC). A system that reports
        // none leaves the power part to read it below.
        let fut = rc.health_read(false);
        match Box::pin(budget.bounded(name, "reading the sensors", (1, 1), fut)).await {
            Ok(h) => health = Some(h),
            Err(e) => {
                health_failed = true;
                part(&mut row, "health", &e);
            }
        }
        if opts.power {
            row.power = rc.system.as_ref().and_then(|s| s.power_state);
        }
    }
    if let Some(r) = rollup {
        match r {
            Ok((p, h)) => {
                row.power = opts.power.then_some(p);
                health = Some(h);
            }
            Err(e) => {
                health_failed = true;
                part(&mut row, "health", &e);
            }
        }
    } else if opts.power && row.power.is_none() {
        if budget.left().is_zero() {
            spent(&mut row, "power");
        } else {
            let what = "reading the power state";
            match Box::pin(part_on(&bmc, &mut o, &mut budget, what, (1, POWER_SHARE), |c| {
                Box::pin(c.power_state())
            }))
            .await
            {
                Ok(p) => row.power = Some(p),
                Err(e) => part(&mut row, "power", &e),
            }
        }
    }
    if opts.health && health.is_none() && !health_failed {
        let share = if opts.events > 0 { HEALTH_SHARE } else { (1, 1) };
        if budget.left().is_zero() {
            spent(&mut row, "health");
        } else {
            let what = "reading the sensors";
            match Box::pin(part_on(&bmc, &mut o, &mut budget, what, share, |c| Box::pin(c.health()))).await {
                Ok(h) => health = Some(h),
                Err(e) => part(&mut row, "health", &e),
            }
        }
    }
    if opts.events > 0 && !events_done {
        if budget.left().is_zero() {
            spent(&mut row, "events");
        } else {
            let (what, n) = ("reading the event log", opts.events);
            match Box::pin(part_on(&bmc, &mut o, &mut budget, what, (1, 1), |c| Box::pin(c.events(n)))).await
            {
                Ok(log) => take_events(&mut row, log, &opts),
                Err(e) => part(&mut row, "events", &e),
            }
        }
    }
    if let (Some(expected), crate::conn::Conn::Redfish(rc)) = (target.expected_gpus, &mut o.conn) {
        if budget.left().is_zero() {
            spent(&mut row, "gpus");
        } else {
            match Box::pin(budget.bounded(name, "reading the GPUs", (1, 1), rc.gpus())).await {
                Ok(g) => row.gpus = crate::below::GpuCount::compare(Some(expected), &g),
                Err(e) => part(&mut row, "gpus", &e),
            }
        }
    }
    budget.parts_deadline();
    if let (Some(t), true) = (budget.per_request, budget.link.is_some()) {
        bmc.pool().set_link_cost(name, t);
    }
    row.budget_ms = budget.granted.as_millis() as u64;
    row.transmissions_per_request = budget.per_request.map(|t| (t * 100.0).round() / 100.0);
    let (deadline, close_reserve) = (budget.deadline(), budget.close_reserve);
    hint(&mut row);
    if let Some(h) = health {
        row.health = Some(h.health);
        row.sensors = h.sensors.len();
        // The verdict's reasons: the same words `health` shows for the same BMC.
        row.alerts = h.reasons.clone();
        row.alerts.extend(h.disagreement.clone());
    }
    // A missing GPU is critical by itself, as `health` judges it.
    if let Some(r) = row.gpus.and_then(|c| c.reason()) {
        row.health = Some(row.health.map_or(Health::Critical, |h| h.worst(Health::Critical)));
        row.alerts.push(r);
    }
    // A part that timed out may have left a request in flight; closing still works (the session matches
    // replies by rqSeq), and if even that runs out of time, dropping the session sends Close Session.
    let close_limit = deadline.saturating_duration_since(Instant::now()).max(close_reserve);
    // A part that failed in a way that says nothing about the session (a sensor the BMC lacks) does not
    // stop a kept IPMI session from being kept; a part that ran out of time does. A Redfish visit with any
    // error is not `ok` (its paths are forgotten, its session deleted): its parts do not tell the two apart.
    let ipmi = matches!(o.conn, crate::conn::Conn::Ipmi(_));
    let ok = row.errors.is_empty() || (ipmi && o.keep_eligible() && !o.broken);
    if tokio::time::timeout(close_limit, Box::pin(bmc.finish(o, ok))).await.is_err() {
        tracing::debug!(bmc = %row.name, "closing timed out; the session is closed on drop");
    }
    tracing::debug!(bmc = %row.name, queued_ms = (budget.started - t0).as_millis() as u64, "swept");
    row.elapsed_ms = t0.elapsed().as_millis() as u64;
    row
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lifeline_types::BmcProtocol;

    use crate::{BmcOptions, BmcPool, BmcTarget, MemoryAuditSink};

    /// A sweep holds one visit per BMC in flight (the whole fleet, at the default fan-out). Unboxed, its
    /// parts made it 15.6 KiB, and a cold sweep of 1,000 BMCs spent its CPU zeroing fresh pages for them.
    #[test]
    fn a_visit_in_flight_stays_small() {
        let pool = BmcPool::new(BmcOptions::default(), Arc::new(MemoryAuditSink::new()));
        let bmc = pool.bmc(BmcTarget::new("n1", "127.0.0.1", BmcProtocol::Auto, "admin", "password"));
        let visit = super::visit(bmc, super::SweepOptions::default());
        let size = std::mem::size_of_val(&visit);
        assert!(size <= 4096, "a visit in flight takes {size} bytes");
    }
}
