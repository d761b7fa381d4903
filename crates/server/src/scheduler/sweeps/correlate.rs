//! The sweep's faults through correlation ([`lifeline_engine::correlate::sweep`]), over every replica's
//! sweep of a slot ([`lifeline_engine::correlate::rounds`]): N BMCs dark behind one OOB switch (or N power
//! alerts on one PDU) become one fault on the part, the members listed and none raised or acted on alone,
//! however the BMCs are shared out between the replicas; the part's fault is resolved by the round that
//! reads every member clear again.
//!
//! Each replica keeps its sweep's batch in the store; one replica decides a slot once every live replica
//! has kept its batch of it, under the slot's work claim. The decider is the replica the rendezvous hash
//! prefers for [`DECIDER`], so that the correlator's open groups (a part blamed, its members added as they
//! go dark) stay in one place; another replica decides a slot the preferred one left undecided for two
//! intervals (it is gone or stuck). docs/faults.md describes the design.

use std::time::Duration;

use lifeline_engine::correlate::rounds::{self, Decision, SweepBatch};
use lifeline_engine::correlate::{Correlator, sweep};

use crate::state::AppState;

/// The rendezvous key whose preferred replica decides the sweep rounds.
pub const DECIDER: &str = "correlate:sweeps";
/// The work claim of one slot's decision.
fn slot_key(slot: i64) -> String {
    format!("slot:correlate:{slot}")
}
const SLOT_PREFIX: &str = "slot:correlate:";

/// How a sweep's rows make a round.
#[derive(Debug, Clone, Copy)]
pub enum Round {
    /// This replica's share of the sweep of `slot` (`lifeline serve`): decided with the other replicas'.
    Share { slot: i64 },
    /// A sweep of every BMC by this caller alone (`lifeline demo`): decided at once.
    Whole,
}

fn now_ms() -> i64 {
    lifeline_engine::ops::runs::now_ms()
}

fn every(s: &AppState) -> Duration {
    super::interval(s).unwrap_or(Duration::from_secs(60))
}

/// How long a slot waits for a live replica's batch: three intervals, at least a minute (a sweep of dark
/// BMCs runs into their timeouts and may outlast several short intervals).
fn wait(every_ms: i64) -> i64 {
    every_ms.saturating_mul(3).max(60_000)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The sweep rules for one sweep's rows: each row's clean reads resolve that BMC's own faults,
/// `gpu-missing` is raised per node, and the correlated kinds (`bmc-unreachable`, `health-critical`,
/// `sel-critical`) with the BMCs read clear of them make this sweep's batch, decided with the other
/// replicas' batches of the slot ([`Round::Share`]) or at once ([`Round::Whole`]). Errors are logged per
/// row and per verdict; the sweep goes on.
pub async fn from_sweep(
    s: &AppState,
    rows: &[lifeline_bmc::SweepRow],
    known: &crate::faults::Unresolved,
    c: &mut Correlator,
    round: Round,
) {
    let now = now_ms();
    let slot = match round {
        Round::Share { slot } => slot,
        Round::Whole => now,
    };
    let mut batch = SweepBatch {
        slot_ms: slot,
        replica: s.replica.id().to_owned(),
        findings: Vec::new(),
        cleared: Default::default(),
    };
    for row in rows {
        let d = &row.name;
        let verdict = lifeline_engine::fault_rules::sweep_verdict(row, None);
        for kind in &verdict.clear {
            if known.contains(&((*kind).to_owned(), d.clone()))
                && let Err(e) = crate::faults::resolve(s, kind, d).await
            {
                tracing::warn!(bmc = %d, "fault rules: {}", e.chain());
            }
            if sweep::CORRELATED.contains(kind) {
                batch.cleared.entry((*kind).to_owned()).or_default().push(d.clone());
            }
        }
        for f in verdict.raise {
            match sweep::observation(d, &f, now) {
                Some(o) => batch.findings.push(o),
                None => {
                    if let Err(e) = crate::faults::raise(s, f.kind, d, f.severity, &f.message, f.detail).await
                    {
                        tracing::warn!(bmc = %d, "fault rules: {}", e.chain());
                    }
                }
            }
        }
    }
    if matches!(round, Round::Whole) {
        decide(s, c, &[&batch], None).await;
        return;
    }
    match s.base.sweep_batch_keep(&batch).await {
        Ok(()) => decide_ready(s, c).await,
        Err(e) => {
            // Not kept, so no other replica will see it: decided here alone, as a lone replica would.
            tracing::warn!("sweep batch not kept ({}); decided by this replica alone", e.chain());
            decide(s, c, &[&batch], Some(LONE_AFTER_ROUNDS)).await;
        }
    }
}

/// Decides every slot that is ready (see the module doc), oldest first; stops at the first one this
/// replica may not decide or cannot claim, so that slots are decided in order.
pub async fn decide_ready(s: &AppState, c: &mut Correlator) {
    let every = ms(every(s));
    let now = now_ms();
    let horizon = ms(c.settings().window).saturating_add(wait(every)).saturating_add(every);
    let since = now.saturating_sub(horizon);
    let (batches, decisions) = match s.base.sweep_rounds_open(since, rounds::CLOCK_TOLERANCE_MS).await {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!("sweep rounds not read: {}", e.chain());
            return;
        }
    };
    let preferred = s.replica.prefers(DECIDER);
    let live = s.replica.live();
    // The newest slot was decided by another replica, or by this one before a restart: its groups and
    // lone members are not in this correlator.
    let mut take_over = rounds::newest_decision(&decisions).is_none_or(|d| d.replica != s.replica.id());
    for slot in rounds::ready(&batches, &decisions, &live, now, wait(every)) {
        if !preferred && now - slot < every.saturating_mul(2) {
            break;
        }
        let lease = match s.replica.claim(&slot_key(slot)).await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(slot, "sweep round not claimed: {e}");
                break;
            }
        };
        let took = rounds::take(&batches, &decisions, slot);
        if !lease.still_held().await {
            tracing::warn!(slot, "the sweep round's claim was lost before deciding; not decided here");
            break;
        }
        if std::mem::take(&mut take_over) {
            rebuild(s, c).await;
            // What the previous decider's last round saw and left waiting counts as waited here.
            if let Some(d) = rounds::newest_decision(&decisions) {
                for b in
                    batches.iter().filter(|b| d.took.iter().any(|(r, t)| *r == b.replica && *t == b.slot_ms))
                {
                    for o in &b.findings {
                        c.carry(o.clone());
                    }
                }
            }
        }
        decide(s, c, &took, Some(LONE_AFTER_ROUNDS)).await;
        let d = Decision {
            slot_ms: slot,
            replica: s.replica.id().to_owned(),
            took: took.iter().map(|b| (b.replica.clone(), b.slot_ms)).collect(),
        };
        if let Err(e) = s.base.sweep_decision_keep(&d).await {
            tracing::warn!(slot, "sweep decision not kept: {}", e.chain());
        }
        lease.finish("ok").await;
        tracing::debug!(slot, batches = took.len(), "sweep round decided");
    }
}

/// This replica starts deciding: the correlator's open groups and lone members rebuilt from the store
/// (`lifeline_engine::correlate::rebuild`), so that a BMC the previous decider left alone is still linked
/// to the group its switch's others form later, and an open group still grows.
async fn rebuild(s: &AppState, c: &mut Correlator) {
    let mut unresolved = Vec::new();
    for state in ["open", "acked"] {
        match s.base.faults_in(state).await {
            Ok(f) => unresolved.extend(f),
            Err(e) => {
                tracing::warn!("sweep correlation not rebuilt from the store: {}", e.chain());
                return;
            }
        }
    }
    let r = c.rebuild(&unresolved, &sweep::CORRELATED, now_ms());
    tracing::info!(
        groups = r.groups,
        members = r.members,
        alone = r.alone,
        dropped = r.dropped,
        "deciding the sweep rounds: correlation rebuilt from the store"
    );
}

/// How many rounds a sweep finding that no shared part explains waits before it is its device's own
/// fault: its own round and the next, the first whose visits all start after it
/// ([`Correlator::flush_round`]). The price: a lone dark BMC's own fault comes one sweep interval later.
pub const LONE_AFTER_ROUNDS: u32 = 2;

/// The correlator over the batches of one round: the verdicts raised, then the shared sweep faults whose
/// every member the round read clear of the member kind resolved. `lone_after`: decided as one round of
/// a periodic sweep ([`Correlator::flush_round`]); `None`: a whole sweep decided at once.
async fn decide(s: &AppState, c: &mut Correlator, batches: &[&SweepBatch], lone_after: Option<u32>) {
    for b in batches {
        for o in &b.findings {
            c.observe(o.clone());
        }
    }
    let cleared = rounds::cleared(batches);
    for (device, kinds) in &cleared {
        for kind in kinds.iter().filter(|k| sweep::undone_by_a_clean_read(k)) {
            if c.withdraw(kind, device) > 0 {
                tracing::info!(device = %device, kind = %kind, "read clear before it was decided: not raised");
            }
        }
    }
    let now = now_ms();
    let verdicts = match lone_after {
        Some(rounds) => c.flush_round(now, rounds),
        None => c.flush(now),
    };
    for v in verdicts {
        if let Err(e) = crate::faults::verdict(s, v, Vec::new()).await {
            tracing::warn!("sweep fault: {}", e.chain());
        }
    }
    // A shared sweep fault's own evidence: every member read again and clear of the member kind.
    if cleared.is_empty() {
        return;
    }
    for state in ["open", "acked"] {
        let faults = match s.base.faults(Some(state), 10_000_000).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("shared sweep faults: {}", e.chain());
                continue;
            }
        };
        for f in faults {
            let Some(member) = sweep::member_kind(&f.kind) else { continue };
            if sweep::members_cleared(&f.detail, &cleared) {
                c.close(member, &f.device);
                if let Err(e) = crate::faults::resolve(s, &f.kind, &f.device).await {
                    tracing::warn!(device = %f.device, "shared sweep fault: {}", e.chain());
                }
            }
        }
    }
}

/// Deletes the rounds' records past deciding (older than the window, the wait and an interval).
pub async fn prune(s: &AppState, every: Duration) {
    let window = lifeline_engine::correlate::Settings::from_config(&s.base.config.config.correlation)
        .unwrap_or_default()
        .window;
    let before = now_ms() - ms(window).saturating_add(wait(ms(every))).saturating_add(ms(every));
    use lifeline_engine::ops::correlation::{BATCH, DECISION};
    for kind in [BATCH, DECISION] {
        if let Err(e) = s.base.correlation_prune(kind, before).await {
            tracing::warn!("pruning old sweep rounds: {}", e.chain());
        }
    }
    if let Err(e) = s.base.correlation_slots_prune(SLOT_PREFIX, before).await {
        tracing::warn!("pruning old sweep round claims: {}", e.chain());
    }
}
