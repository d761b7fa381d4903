//! The records the fault correlation keeps in the store, written and read for the server's schedulers:
//! each replica's sweep batches and the decisions over them ([`crate::correlate::rounds`]), the switch
//! counters' kept reads, the restores already offered.
//!
//! Why here: the engine owns the store, and the replicas share these records through it (a decision
//! is made over every replica's batches; the next counters read compares with the previous read whoever
//! made it). The batches and decisions are observations of one series each (`device` =
//! [`SERIES`]), so reading a window of them is an index range, never a scan of the table.

use crate::context::Lifeline;
use crate::correlate::clearing;
use crate::correlate::rounds::{self, Decision, SweepBatch};
use crate::error::Result;

/// The `device` of the correlation's own series in the observations table.
pub const SERIES: &str = "lifeline:correlation";
/// The observation kind of a replica's sweep batch.
pub const BATCH: &str = "sweep-batch";
/// The observation kind of a decision.
pub const DECISION: &str = "sweep-decision";
/// The observation kind of a switch's kept counters read.
pub const SWITCH_COUNTERS: &str = "switch-counters";

fn parse<T: serde::de::DeserializeOwned>(rows: Vec<lifeline_store::Observation>) -> Vec<T> {
    rows.into_iter()
        .filter_map(|o| match serde_json::from_value(o.value) {
            Ok(x) => Some(x),
            Err(e) => {
                tracing::warn!(kind = %o.kind, at = o.observed_at_ms, "correlation record skipped: {e}");
                None
            }
        })
        .collect()
}

impl Lifeline {
    /// Keeps a replica's sweep batch for the decision over every replica's.
    pub async fn sweep_batch_keep(&self, b: &SweepBatch) -> Result<()> {
        let v = serde_json::to_value(b).map_err(|e| crate::EngineError::internal("sweep batch", e))?;
        Ok(self.store().await?.observe(SERIES, BATCH, &v).await?)
    }

    /// Keeps a decision (the batches it took).
    pub async fn sweep_decision_keep(&self, d: &Decision) -> Result<()> {
        let v = serde_json::to_value(d).map_err(|e| crate::EngineError::internal("sweep decision", e))?;
        Ok(self.store().await?.observe(SERIES, DECISION, &v).await?)
    }

    /// The batches and decisions a decision may still need, oldest first: every batch no decision took,
    /// and the decisions that took the batches returned. Not the whole window: slots are decided in order
    /// ([`rounds::newest_decided`]), so a batch not yet taken is of a later slot than the newest decision
    /// (kept after that slot began, on its keeper's clock) or was kept after that decision read the
    /// batches (after the slot began too); so batches are read from the newest decided slot less
    /// `skew_ms` (the clocks of two replicas may differ by that much), decisions from `skew_ms` before
    /// that. Never before `horizon_ms`; from it when nothing was decided yet. A record that does not parse
    /// (kept by another version) is left out with a warning.
    pub async fn sweep_rounds_open(
        &self,
        horizon_ms: i64,
        skew_ms: i64,
    ) -> Result<(Vec<SweepBatch>, Vec<Decision>)> {
        let store = self.store().await?;
        let latest = store.latest_observation(SERIES, DECISION).await?;
        let latest: Vec<Decision> = parse(latest.into_iter().collect());
        let since = match rounds::newest_decided(&latest) {
            Some(slot) => slot.saturating_sub(skew_ms).max(horizon_ms),
            None => horizon_ms,
        };
        let decided_since = since.saturating_sub(skew_ms).max(horizon_ms);
        let mut decisions: Vec<Decision> =
            parse(store.observations_since(SERIES, DECISION, decided_since).await?);
        let batches = parse(store.observations_since(SERIES, BATCH, since).await?);
        // The newest decision, read first, stays whatever its clock said (it fixes what is decided).
        for d in latest {
            if !decisions.contains(&d) {
                decisions.push(d);
            }
        }
        Ok((batches, decisions))
    }

    /// Deletes the observations of `kind` older than `before_ms` but each device's newest (sweep rows,
    /// counters reads, the correlation's batches and decisions); how many went.
    pub async fn correlation_prune(&self, kind: &str, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.prune_observations(kind, before_ms).await?)
    }

    /// Deletes the finished work claims under `prefix` done before `before_ms` (old slots); how many.
    pub async fn correlation_slots_prune(&self, prefix: &str, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.prune_done_work(prefix, before_ms).await?)
    }

    /// Keeps a switch's counters read (the next reader's baseline, whichever replica it is).
    pub async fn switch_counters_keep(&self, switch: &str, read: &serde_json::Value) -> Result<()> {
        Ok(self.store().await?.observe(switch, SWITCH_COUNTERS, read).await?)
    }

    /// The switch's newest kept counters read, by any replica.
    pub async fn switch_counters_previous(&self, switch: &str) -> Result<Option<serde_json::Value>> {
        Ok(self.store().await?.latest_observation(switch, SWITCH_COUNTERS).await?.map(|o| o.value))
    }
}

impl Lifeline {
    /// The open or acknowledged shared console faults (`shared-rail-down`, `shared-console-*`,
    /// [`clearing::member_kind`]) with a member on `device`, each with its members' progress against the
    /// evidence `ledger` holds: the caller resolves those whose every member is proven clear
    /// ([`clearing::Progress::all`]).
    pub async fn shared_console_progress(
        &self,
        ledger: &clearing::Ledger,
        device: &str,
    ) -> Result<Vec<(crate::ops::fault_records::FaultRow, clearing::Progress)>> {
        let mut out = Vec::new();
        for state in ["open", "acked"] {
            for f in self.faults_in(state).await? {
                if clearing::member_kind(&f.kind).is_some() && clearing::has_member(&f.detail, device) {
                    let p = ledger.progress(&f.detail);
                    out.push((f, p));
                }
            }
        }
        Ok(out)
    }
}

impl Lifeline {
    /// The run of `runbook` on `target` that makes a new offer of it needless: one still waiting for
    /// approval or running, or one last moved (created, approved, ended) at or after `since_ms` (approved and done, failed,
    /// rejected: an operator has answered that offer lately). Reads the active runs and the newest 1,000.
    pub async fn offer_answered_since(
        &self,
        target: &str,
        runbook: &str,
        since_ms: i64,
    ) -> Result<Option<lifeline_store::RunRow>> {
        let store = self.store().await?;
        let mine = |r: &lifeline_store::RunRow| r.target == target && r.runbook == runbook;
        if let Some(r) = store.runs_in(lifeline_store::ACTIVE_RUN_STATES).await?.into_iter().find(mine) {
            return Ok(Some(r));
        }
        Ok(store
            .runs(1000)
            .await?
            .into_iter()
            .find(|r| mine(r) && r.updated_at_ms.max(r.ended_at_ms.unwrap_or(0)) >= since_ms))
    }
}

#[cfg(test)]
mod tests {
    use crate::correlate::rounds::{Decision, SweepBatch};

    fn batch(replica: &str, slot_ms: i64) -> SweepBatch {
        SweepBatch { slot_ms, replica: replica.into(), findings: Vec::new(), cleared: Default::default() }
    }

    /// The store's clock (a kept record's time) past `t`.
    fn after(t: i64) {
        while lifeline_store::now_ms() <= t {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn ids(b: &[SweepBatch]) -> Vec<(&str, i64)> {
        b.iter().map(|b| (b.replica.as_str(), b.slot_ms)).collect()
    }

    /// Every second between sweeps a replica looks for ready slots: it reads the batches no decision took,
    /// not the whole window (14 minutes of every replica's findings at the defaults).
    #[tokio::test]
    async fn only_the_batches_from_the_newest_decided_slot_on_are_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let l = crate::Lifeline::in_dir(dir.path());
        let horizon = lifeline_store::now_ms() - 3_600_000;
        // Slot s1: two replicas keep their batches; nothing decided yet: the whole horizon is read.
        let s1 = lifeline_store::now_ms();
        l.sweep_batch_keep(&batch("a", s1)).await.unwrap();
        l.sweep_batch_keep(&batch("b", s1)).await.unwrap();
        let (b, d) = l.sweep_rounds_open(horizon, 0).await.unwrap();
        assert_eq!((ids(&b), d.len()), (vec![("a", s1), ("b", s1)], 0));
        // Slot s2 begins; s1 is decided. Then a's batch of s2, and c's of s1 kept late (c was slow).
        let s2 = lifeline_store::now_ms() + 1;
        after(s2);
        let d1 =
            Decision { slot_ms: s1, replica: "a".into(), took: vec![("a".into(), s1), ("b".into(), s1)] };
        l.sweep_decision_keep(&d1).await.unwrap();
        l.sweep_batch_keep(&batch("a", s2)).await.unwrap();
        l.sweep_batch_keep(&batch("c", s1)).await.unwrap();
        let (b, d) = l.sweep_rounds_open(horizon, 0).await.unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0], d1);
        assert_eq!(ids(&b), [("a", s1), ("b", s1), ("a", s2), ("c", s1)], "from s1 on");
        let took = crate::correlate::rounds::take(&b, &d, s2);
        assert_eq!(ids(&took.into_iter().cloned().collect::<Vec<_>>()), [("c", s1), ("a", s2)]);
        // s2 is decided with c's late batch; slot s3 begins. What was kept before s2 began is not read
        // again: s1's batches are left out, c's late one (kept after) and the newer ones are read.
        let d2 =
            Decision { slot_ms: s2, replica: "a".into(), took: vec![("c".into(), s1), ("a".into(), s2)] };
        l.sweep_decision_keep(&d2).await.unwrap();
        let s3 = lifeline_store::now_ms() + 1;
        after(s3);
        l.sweep_batch_keep(&batch("b", s3)).await.unwrap();
        let (b, d) = l.sweep_rounds_open(horizon, 0).await.unwrap();
        assert_eq!(ids(&b), [("a", s2), ("c", s1), ("b", s3)]);
        assert!(d.contains(&d2), "{d:?}");
        let live = ["b".to_owned()];
        assert_eq!(crate::correlate::rounds::ready(&b, &d, &live, s3, 60_000), [s3], "only s3 is open");
        // The clocks' tolerance reads further back, never past the horizon.
        let (b, _) = l.sweep_rounds_open(horizon, 3_600_000).await.unwrap();
        assert_eq!(b.len(), 5);
        let (b, _) = l.sweep_rounds_open(s3, 3_600_000).await.unwrap();
        assert_eq!(ids(&b), [("b", s3)]);
    }
}
