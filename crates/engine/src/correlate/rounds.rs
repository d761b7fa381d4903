//! Sweep correlation across replicas. With several replicas each sweeps its share of the BMCs, so the
//! members of one shared failure (the BMCs behind one OOB switch, the nodes of one PDU) are split between
//! them: decided per replica, each share falls below the score and the part's failure becomes N node
//! faults. So the decision is made over every replica's sweep at once:
//!
//! - sweeps run in *slots* on the clock (`slot_ms` a multiple of the sweep interval, [`slot_of`]); each
//!   replica keeps what its sweep of a slot saw as a [`SweepBatch`] in the store (the correlated findings
//!   and the BMCs it read clear), an empty one when its share was empty;
//! - a slot is [`ready`] when every live replica has kept a batch of that slot or a later one (it swept
//!   the slot, or skipped it), or when the slot is older than the wait (a replica that has not kept a
//!   batch for that long is not waited for);
//! - one replica decides a ready slot under a work claim (`slot:correlate:SLOT_MS`, the claim with a
//!   fencing token the backups use), over the batches it [`take`]s: that slot's and any earlier one that
//!   no decision took (a batch kept after its slot was decided goes with the next decision, never lost:
//!   a SEL entry is seen once). The decision is kept as a [`Decision`] naming the batches it took.
//!
//! This module is the pure part (which slots, which batches); the server's sweeps keep and read the
//! records and run the [`super::Correlator`] over what a decision takes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::Observation;

/// What one replica's sweep of one slot saw, for the correlation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepBatch {
    /// The slot the sweep started in (ms since the epoch, a multiple of the interval).
    pub slot_ms: i64,
    /// The replica that swept (its id).
    pub replica: String,
    /// The findings of the correlated kinds ([`super::sweep::CORRELATED`]).
    pub findings: Vec<Observation>,
    /// Member kind -> the BMCs this sweep read clear of it (a shared fault's own evidence).
    pub cleared: BTreeMap<String, Vec<String>>,
}

/// One decision of the sweep correlation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub slot_ms: i64,
    /// The replica that decided.
    pub replica: String,
    /// The batches it took: (replica, slot).
    pub took: Vec<(String, i64)>,
}

/// How far the replicas' clocks may differ (a batch's slot and its keeping time are its sweeper's clock,
/// a decision's another's): what is read from the store before the newest decided slot
/// (`Lifeline::sweep_rounds_open`).
pub const CLOCK_TOLERANCE_MS: i64 = 30_000;

/// The slot `now_ms` falls in for an interval of `every_ms`.
pub fn slot_of(now_ms: i64, every_ms: i64) -> i64 {
    let every = every_ms.max(1);
    now_ms - now_ms.rem_euclid(every)
}

fn taken(decisions: &[Decision]) -> BTreeSet<(&str, i64)> {
    decisions.iter().flat_map(|d| d.took.iter().map(|(r, s)| (r.as_str(), *s))).collect()
}

/// The newest slot `decisions` decided: slots are decided in order, so every slot up to it is decided (a
/// batch of one of them kept late goes with the next decision, [`take`]).
pub fn newest_decided(decisions: &[Decision]) -> Option<i64> {
    decisions.iter().map(|d| d.slot_ms).max()
}

/// The decision of the newest decided slot, if any.
pub fn newest_decision(decisions: &[Decision]) -> Option<&Decision> {
    decisions.iter().max_by_key(|d| d.slot_ms)
}

/// The slots ready for a decision at `now_ms`, oldest first: slots later than the newest decided one
/// ([`newest_decided`]) of batches no decision took, for which every replica in `live` has kept a batch
/// of that slot or a later one, or that began more than `wait_ms` ago.
pub fn ready(
    batches: &[SweepBatch],
    decisions: &[Decision],
    live: &[String],
    now_ms: i64,
    wait_ms: i64,
) -> Vec<i64> {
    let taken = taken(decisions);
    let decided_to = newest_decided(decisions).unwrap_or(i64::MIN);
    let mut newest: HashMap<&str, i64> = HashMap::new();
    for b in batches {
        let n = newest.entry(b.replica.as_str()).or_insert(b.slot_ms);
        *n = (*n).max(b.slot_ms);
    }
    let open: BTreeSet<i64> = batches
        .iter()
        .filter(|b| !taken.contains(&(b.replica.as_str(), b.slot_ms)) && b.slot_ms > decided_to)
        .map(|b| b.slot_ms)
        .collect();
    open.into_iter()
        .filter(|s| {
            now_ms - s > wait_ms || live.iter().all(|r| newest.get(r.as_str()).is_some_and(|n| n >= s))
        })
        .collect()
}

/// The batches a decision of `slot` takes: every batch of that slot or an earlier one that no decision
/// took, oldest first.
pub fn take<'a>(batches: &'a [SweepBatch], decisions: &[Decision], slot: i64) -> Vec<&'a SweepBatch> {
    let taken = taken(decisions);
    let mut out: Vec<&SweepBatch> = batches
        .iter()
        .filter(|b| b.slot_ms <= slot && !taken.contains(&(b.replica.as_str(), b.slot_ms)))
        .collect();
    out.sort_by(|a, b| (a.slot_ms, &a.replica).cmp(&(b.slot_ms, &b.replica)));
    out
}

/// What the taken batches read clear, as [`super::sweep::members_cleared`] wants it (device -> kinds). A
/// BMC that one of them found failing of a kind is not clear of it, whatever another read (two replicas
/// swept it while their views of the live set differed).
pub fn cleared(batches: &[&SweepBatch]) -> HashMap<String, Vec<&'static str>> {
    let failing: BTreeSet<(&str, &str)> = batches
        .iter()
        .flat_map(|b| b.findings.iter().map(|o| (o.unit.device.as_str(), o.kind.as_str())))
        .collect();
    let mut out: HashMap<String, Vec<&'static str>> = HashMap::new();
    for b in batches {
        for (kind, devices) in &b.cleared {
            let Some(kind) = super::sweep::CORRELATED.into_iter().find(|k| k == kind) else { continue };
            for d in devices {
                if !failing.contains(&(d.as_str(), kind)) {
                    let kinds = out.entry(d.clone()).or_default();
                    if !kinds.contains(&kind) {
                        kinds.push(kind);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlate::Unit;

    fn batch(replica: &str, slot: i64, failing: &[&str], clear: &[&str]) -> SweepBatch {
        SweepBatch {
            slot_ms: slot,
            replica: replica.into(),
            findings: failing
                .iter()
                .map(|d| Observation {
                    kind: "bmc-unreachable".into(),
                    unit: Unit { device: (*d).into(), rail: None },
                    severity: "critical".into(),
                    message: String::new(),
                    at_ms: slot,
                    detail: serde_json::json!({}),
                })
                .collect(),
            cleared: [("bmc-unreachable".to_owned(), clear.iter().map(|d| (*d).to_owned()).collect())].into(),
        }
    }

    fn live(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_slot_waits_for_every_live_replica() {
        let b = vec![batch("a", 1000, &["n1"], &[]), batch("b", 1000, &["n2"], &[])];
        assert!(ready(&b, &[], &live(&["a", "b", "c"]), 1500, 10_000).is_empty(), "c has not swept 1000");
        assert_eq!(ready(&b, &[], &live(&["a", "b"]), 1500, 10_000), [1000]);
        // c swept a later slot (it skipped 1000: its sweep of the slot before ran long): not waited for.
        let mut b2 = b.clone();
        b2.push(batch("c", 2000, &[], &[]));
        assert_eq!(ready(&b2, &[], &live(&["a", "b", "c"]), 2500, 10_000), [1000]);
        // 2000 waits for a and b; past the wait it is decided without them.
        assert!(!ready(&b2, &[], &live(&["a", "b", "c"]), 2500, 10_000).contains(&2000));
        assert_eq!(ready(&b2, &[], &live(&["a", "b", "c"]), 12_001, 10_000), [1000, 2000]);
        // A replica that is gone from the live set is not waited for; one that has never swept is.
        assert_eq!(ready(&b, &[], &live(&["a"]), 1500, 10_000), [1000]);
        assert!(ready(&b, &[], &live(&["a", "new"]), 1500, 10_000).is_empty());
    }

    #[test]
    fn a_decided_slot_is_not_ready_again_and_a_late_batch_goes_with_the_next() {
        let mut b = vec![batch("a", 1000, &["n1"], &[]), batch("b", 1000, &["n2"], &[])];
        let d = vec![Decision {
            slot_ms: 1000,
            replica: "a".into(),
            took: vec![("a".into(), 1000), ("b".into(), 1000)],
        }];
        assert!(ready(&b, &d, &live(&["a", "b"]), 1500, 10_000).is_empty());
        // c's batch of 1000 is kept after 1000 was decided: not ready on its own (its slot is decided),
        // taken by the decision of 2000 with 2000's batches.
        b.push(batch("c", 1000, &["n3"], &[]));
        assert!(ready(&b, &d, &live(&["a", "b", "c"]), 1600, 10_000).is_empty());
        for r in ["a", "b", "c"] {
            b.push(batch(r, 2000, &[], &[]));
        }
        assert_eq!(ready(&b, &d, &live(&["a", "b", "c"]), 2500, 10_000), [2000]);
        let took: Vec<(&str, i64)> =
            take(&b, &d, 2000).iter().map(|b| (b.replica.as_str(), b.slot_ms)).collect();
        assert_eq!(took, [("c", 1000), ("a", 2000), ("b", 2000), ("c", 2000)]);
    }

    #[test]
    fn a_slot_before_the_newest_decided_one_is_decided_even_when_its_decision_was_not_read() {
        // Only the decision of 2000 was read (the store read starts after 1000's decision): a late batch
        // of 1000 is not a slot of its own to claim again (its claim is done), it goes with 3000.
        let mut b = vec![batch("c", 1000, &["n3"], &[]), batch("a", 2000, &[], &[])];
        let d = vec![Decision { slot_ms: 2000, replica: "a".into(), took: vec![("a".into(), 2000)] }];
        assert_eq!(newest_decided(&d), Some(2000));
        assert_eq!(newest_decision(&d).map(|d| d.replica.as_str()), Some("a"));
        assert!(ready(&b, &d, &live(&["a", "c"]), 100_000, 10_000).is_empty(), "1000 is past the wait");
        b.push(batch("a", 3000, &[], &[]));
        b.push(batch("c", 3000, &[], &[]));
        assert_eq!(ready(&b, &d, &live(&["a", "c"]), 3500, 10_000), [3000]);
        let took: Vec<(&str, i64)> =
            take(&b, &d, 3000).iter().map(|b| (b.replica.as_str(), b.slot_ms)).collect();
        assert_eq!(took, [("c", 1000), ("a", 3000), ("c", 3000)]);
        assert_eq!(newest_decided(&[]), None);
    }

    #[test]
    fn a_bmc_found_failing_by_one_batch_is_not_clear() {
        let a = batch("a", 1000, &["n1"], &["n2", "n3"]);
        let b = batch("b", 1000, &[], &["n1", "n4"]);
        let c = cleared(&[&a, &b]);
        assert!(!c.contains_key("n1"), "a read n1 failing: {c:?}");
        for d in ["n2", "n3", "n4"] {
            assert_eq!(c[d], ["bmc-unreachable"], "{d}");
        }
        let mut odd = batch("a", 1000, &[], &["n9"]);
        odd.cleared.insert("not-a-kind".into(), vec!["n9".into()]);
        assert_eq!(cleared(&[&odd])["n9"], ["bmc-unreachable"], "an unknown kind is ignored");
    }

    #[test]
    fn slots_are_multiples_of_the_interval() {
        assert_eq!(slot_of(12_345, 3000), 12_000);
        assert_eq!(slot_of(12_000, 3000), 12_000);
        assert_eq!(slot_of(5, 0), 5);
    }
}
