//! Replicas sharing the unattended work on one database (PostgreSQL; a lone SQLite server is the
//! one-replica case of the same code).
//!
//! Every replica serves the API. The scheduled work is split with rows in the store, never with a
//! consensus layer of our own:
//! - membership: each replica heartbeats a row every [`HEARTBEAT`] with a [`REPLICA_TTL`] expiry; the live
//!   set is the unexpired rows (minus holders known dead on this host);
//! - preference: each unit of work (`sweep:DEVICE`, `console:NAME`) has one preferred live replica by
//!   rendezvous hashing, so a membership change moves only the departed (or joining) replica's share;
//! - ownership: work that must never run twice (a backup slot) or must run in one place (a console's
//!   logger, a runbook run) is claimed as a [`WorkLease`] in `replica_work`, renewed in the background,
//!   with a fencing token checked when it is finished and before each action (`still_held`), so a replica
//!   paused past its expiry cannot act on work it lost.
//!
//! Waking at the expiry: a loop that found a unit of work (or a replica's membership) held by another
//! replica records the holder's expiry instant ([`Replica::claim_row`], [`Replica::heartbeat`]) and waits
//! with [`Replica::nap`], which ends at the earliest recorded expiry when that comes before the loop's
//! own tick. A holder renews every [`HEARTBEAT`] for [`REPLICA_TTL`], so a claim seen at any tick expires
//! no sooner than `REPLICA_TTL - HEARTBEAT` later: a loop ticking every [`HEARTBEAT`] or faster sees every
//! claim before it expires, and a silent holder's work is taken within [`TAKEOVER_BOUND`] of its last
//! renewal's expiry window, not at whichever tick follows it.
//!
//! Hook for runbook runs owned by a dead replica (wired by the runbook side of the server): the resume
//! loop calls [`Replica::claim`] with [`run_key`] for each run in an active state, on start and every few
//! seconds. `Some(lease)` means the run's owner is gone (or it never had one): resume it from its journal
//! under that lease (check [`WorkLease::still_held`] before each step's action, [`WorkLease::finish`] when
//! the run ends). `None` means a live replica owns it. A run started by a request on this replica should
//! be claimed the same way before its first step.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use lifeline_engine::lease::{holder_is_dead_here, holder_name};
use lifeline_engine::ops::replica_work::{WorkClaim, WorkRow};
use lifeline_engine::ops::runs::now_ms;
use lifeline_engine::{EngineError, Lifeline};

/// How long a replica counts as alive, and a unit of work as owned, without renewal: the takeover time
/// after a replica dies on another host (goal: ≤ 30 s). On this host a dead process's work is taken at once.
pub const REPLICA_TTL: Duration = Duration::from_secs(15);
/// How often a replica renews its membership and its work.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// How long after a silent replica's claims expire another replica has them at most: it wakes at the
/// expiry it saw ([`Replica::nap`]) and claims at once, and a runbook run's lease on its target
/// (`RUN_LEASE_TTL`, renewed more often) is free by then. The slack covers the wake-up's margin, the
/// claim's statements and the lease's last poll on a loaded machine (here they take about 0.1 s).
/// docs/operations.md states this bound.
pub const TAKEOVER_SLACK: Duration = Duration::from_secs(2);
/// The takeover bound for a silent (paused, partitioned) replica; a dead process on this host is taken
/// over at once.
pub const TAKEOVER_BOUND: Duration = Duration::from_secs(REPLICA_TTL.as_secs() + TAKEOVER_SLACK.as_secs());
/// How long after an observed expiry a napping loop wakes: the claim statement's `expires_at < now` is
/// strict, and the holder's clock may run a little ahead of ours.
const WAKE_MARGIN_MS: i64 = 25;
/// The longest a nap sleeps without looking at the recorded expiries again (one recorded by another task
/// after the nap began is then still met).
const NAP_SLICE: Duration = Duration::from_millis(500);

/// The work key of a runbook run (see the module's hook).
pub fn run_key(run_id: &str) -> String {
    format!("run:{run_id}")
}

fn ttl_ms() -> i64 {
    i64::try_from(REPLICA_TTL.as_millis()).unwrap_or(i64::MAX)
}

/// This process as a replica.
#[derive(Debug)]
pub struct Replica {
    id: String,
    /// The engine context whose store the replicas share (the server's own).
    engine: Arc<Lifeline>,
    /// The live set at the last heartbeat with each member's expiry (ms), sorted; always contains this
    /// replica. A member whose expiry passed since is left out by [`Replica::live`] and
    /// [`Replica::prefers`] at once, not at the next heartbeat.
    live: RwLock<Vec<(String, i64)>>,
    /// Expiries (ms, this host's clock) of other replicas' claims and memberships seen lately, by work
    /// key or `replica:ID`: [`Replica::nap`] wakes at the earliest.
    expiries: Mutex<HashMap<String, i64>>,
}

impl Replica {
    pub fn new(engine: Arc<Lifeline>) -> Replica {
        let id = holder_name("server");
        Replica { live: RwLock::new(vec![(id.clone(), i64::MAX)]), id, engine, expiries: Mutex::default() }
    }

    /// `server (pid PID on HOST) #TAG`: also the holder name of this replica's work.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Renews membership and reads the live set back.
    pub async fn heartbeat(&self, info: &serde_json::Value) -> Result<Vec<String>, EngineError> {
        self.engine.replica_heartbeat(&self.id, info, ttl_ms()).await?;
        let now = now_ms();
        let mut live: Vec<(String, i64)> = self
            .engine
            .replicas()
            .await?
            .into_iter()
            .filter(|r| r.id == self.id || (r.expires_at_ms >= now && !holder_is_dead_here(&r.id)))
            .map(|r| if r.id == self.id { (r.id, i64::MAX) } else { (r.id, r.expires_at_ms) })
            .collect();
        live.sort();
        for (id, at) in live.iter().filter(|(id, _)| *id != self.id) {
            self.expires(&format!("replica:{id}"), *at);
        }
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = live;
        // Rows long dead (an hour past their expiry) are forgotten; recent ones stay visible for status.
        let _ = self.engine.replicas_prune(now - 3_600_000).await;
        Ok(self.live())
    }

    /// The live set at the last heartbeat, less the members whose membership expired since.
    pub fn live(&self) -> Vec<String> {
        let now = now_ms();
        let live = self.live.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        live.iter().filter(|(_, at)| *at >= now).map(|(id, _)| id.clone()).collect()
    }

    /// Whether this replica is the preferred one for `key` among the live set.
    pub fn prefers(&self, key: &str) -> bool {
        preferred(key, &self.live()).is_none_or(|p| p == self.id)
    }

    /// Records that another replica holds `key` until `at_ms` (this host's clock): a nap ends then.
    fn expires(&self, key: &str, at_ms: i64) {
        self.expiries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.to_owned(), at_ms);
    }

    /// When the next nap should end at the latest (ms): the earliest recorded expiry still ahead, plus the
    /// wake margin. Expiries already passed (and met by the naps then) are forgotten.
    fn next_expiry(&self, now_ms: i64) -> Option<i64> {
        let mut e = self.expiries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        e.retain(|_, at| *at + WAKE_MARGIN_MS > now_ms);
        e.values().min().map(|at| at + WAKE_MARGIN_MS)
    }

    /// Waits `tick`, or less: until just after the earliest expiry of another replica's claim or
    /// membership seen lately (see the module's doc), so that the caller's next pass claims the work of a
    /// silent replica as soon as it can be claimed.
    pub async fn nap(&self, tick: Duration) {
        let end = tokio::time::Instant::now() + tick;
        loop {
            let now = tokio::time::Instant::now();
            if now >= end {
                return;
            }
            let at_ms = now_ms();
            let wake = match self.next_expiry(at_ms) {
                Some(at) => now + Duration::from_millis(u64::try_from(at - at_ms).unwrap_or(0)),
                None => end,
            };
            if wake <= now {
                return;
            }
            let until = wake.min(end);
            tokio::time::sleep_until(until.min(now + NAP_SLICE)).await;
            if until <= now + NAP_SLICE {
                return;
            }
        }
    }

    /// Leaves the membership (clean shutdown): the others take the share at their next tick.
    pub async fn leave(&self) {
        if let Err(e) = self.engine.replica_leave(&self.id).await {
            tracing::warn!("leaving the replica set: {}", e.chain());
        }
    }

    /// Claims `key` for this replica: `Some` when it was free, expired, or held by a dead process on
    /// this host (then [`WorkLease::previous`] names the interrupted holder); `None` when a live holder
    /// has it or it is done.
    pub async fn claim(&self, key: &str) -> Result<Option<WorkLease>, EngineError> {
        Ok(self
            .claim_row(key)
            .await?
            .map(|(work, previous)| WorkLease::start(self.engine.clone(), work, previous)))
    }

    /// [`Replica::claim`] without a renewal task of its own: the caller renews all its claims under a
    /// prefix at once with [`Replica::renew_held`] (thousands of units, one statement per tick).
    /// `Some((work, previous))` as [`Replica::claim`].
    pub async fn claim_row(&self, key: &str) -> Result<Option<(WorkRow, Option<WorkRow>)>, EngineError> {
        let (work, previous) = match self.engine.work_claim(key, &self.id, ttl_ms()).await? {
            WorkClaim::Claimed { work, previous } => (work, previous),
            WorkClaim::Done(_) => return Ok(None),
            WorkClaim::Held(held) if held.holder == self.id => return Ok(None),
            WorkClaim::Held(held) if holder_is_dead_here(&held.holder) => {
                match self.engine.work_take_over(key, held.fence, &self.id, ttl_ms()).await? {
                    Some(work) => (work, Some(held)),
                    None => return Ok(None),
                }
            }
            WorkClaim::Held(held) => {
                self.expires(key, held.expires_at_ms);
                return Ok(None);
            }
        };
        Ok(Some((work, previous)))
    }

    /// Renews every claim of this replica under `prefix`; the keys still ours with their fences.
    pub async fn renew_held(
        &self,
        prefix: &str,
    ) -> Result<std::collections::HashMap<String, i64>, EngineError> {
        Ok(self.engine.work_renew_held(&self.id, prefix, ttl_ms()).await?.into_iter().collect())
    }

    /// Gives back a claim taken with [`Replica::claim_row`] (unless it is no longer ours).
    pub async fn release(&self, key: &str, fence: i64) {
        if let Err(e) = self.engine.work_release(key, &self.id, fence).await {
            tracing::warn!(work = %key, "releasing work: {}", e.chain());
        }
    }
}

/// Rendezvous (highest random weight) hashing: the replica whose hash with `key` is highest.
pub fn preferred<'a>(key: &str, live: &'a [String]) -> Option<&'a str> {
    live.iter().max_by_key(|r| (weight(key, r), r.as_str())).map(String::as_str)
}

fn weight(key: &str, replica: &str) -> u64 {
    // FNV-1a over both, then a splitmix64 finaliser: stable across processes and builds (unlike the
    // standard library's hasher), and well spread for short, similar names.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes().chain([0xff]).chain(replica.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A unit of work held by this replica, renewed every [`HEARTBEAT`] until finished, released or lost.
#[derive(Debug)]
pub struct WorkLease {
    engine: Arc<Lifeline>,
    work: WorkRow,
    previous: Option<WorkRow>,
    lost: Arc<AtomicBool>,
    renew: Option<tokio::task::JoinHandle<()>>,
}

impl WorkLease {
    fn start(engine: Arc<Lifeline>, work: WorkRow, previous: Option<WorkRow>) -> WorkLease {
        let lost = Arc::new(AtomicBool::new(false));
        let (e, w, flag) = (engine.clone(), work.clone(), lost.clone());
        let renew = tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                match e.work_renew(&w.key, &w.holder, w.fence, ttl_ms()).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(work = %w.key, "work lost (this replica was paused past its expiry?)");
                        flag.store(true, Ordering::SeqCst);
                        return;
                    }
                    // Transient: the next tick comes well before the expiry.
                    Err(err) => tracing::warn!(work = %w.key, "renewing work: {}", err.chain()),
                }
            }
        });
        WorkLease { engine, work, previous, lost, renew: Some(renew) }
    }

    pub fn key(&self) -> &str {
        &self.work.key
    }

    /// The fencing token: grows with every new holder of this work.
    pub fn fence(&self) -> i64 {
        self.work.fence
    }

    /// The expired or dead claim this one replaced: its holder stopped in the middle.
    pub fn previous(&self) -> Option<&WorkRow> {
        self.previous.as_ref()
    }

    /// Whether the background renewal found the work taken by someone else.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Renews now and says whether the work is still ours: the check before each action, so a replica
    /// that was paused (and whose renewal task has not run yet) does not act on work it lost.
    pub async fn still_held(&self) -> bool {
        if self.lost() {
            return false;
        }
        match self.engine.work_renew(&self.work.key, &self.work.holder, self.work.fence, ttl_ms()).await {
            Ok(true) => true,
            Ok(false) => {
                self.lost.store(true, Ordering::SeqCst);
                false
            }
            // Unknown: do not act on a guess.
            Err(e) => {
                tracing::warn!(work = %self.work.key, "checking work ownership: {}", e.chain());
                false
            }
        }
    }

    /// Marks the work done (never claimable again); `false` when it was lost before (fenced out).
    pub async fn finish(mut self, outcome: &str) -> bool {
        self.stop_renewing();
        match self.engine.work_finish(&self.work.key, &self.work.holder, self.work.fence, outcome).await {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(work = %self.work.key, "marking work done: {}", e.chain());
                false
            }
        }
    }

    /// Gives the work back unfinished: another replica may claim it at once.
    pub async fn release(mut self) {
        self.stop_renewing();
        let _ = self.engine.work_release(&self.work.key, &self.work.holder, self.work.fence).await;
    }

    fn stop_renewing(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
    }
}

impl Drop for WorkLease {
    /// Dropped without finish or release (a cancelled task): stop renewing; the claim expires.
    fn drop(&mut self) {
        self.stop_renewing();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A claim seen held by another replica is remembered with its expiry, and a nap ends just after it,
    /// not at the loop's tick; once passed it is forgotten (the next nap is a whole tick again).
    #[tokio::test]
    async fn a_nap_ends_at_the_expiry_of_a_claim_seen_held_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let settings = lifeline_engine::Settings { data_dir: Some(dir.path().into()), ..Default::default() };
        let config = lifeline_engine::LoadedConfig::default();
        let paths = lifeline_engine::Paths::resolve(&settings, &config);
        let engine = Arc::new(Lifeline::from_parts(config, paths, lifeline_engine::Identity::new("server")));
        let (a, b) = (Replica::new(engine.clone()), Replica::new(engine));
        assert_ne!(a.id(), b.id());
        let held = a.claim("run:x").await.unwrap().expect("free work is claimed");
        assert!(b.claim_row("run:x").await.unwrap().is_none(), "a live holder keeps it");
        let now = now_ms();
        let expiry = store_expiry(&b, "run:x");
        assert!(
            expiry > now + 14_000 && expiry <= now + 15_000,
            "the holder's expiry recorded: {expiry} at {now}"
        );
        assert_eq!(b.next_expiry(now), Some(expiry + WAKE_MARGIN_MS));
        assert_eq!(a.next_expiry(now), None, "a replica does not wait on its own claims");

        // A nearer expiry (a claim renewed long ago) ends a 5 s nap early.
        b.expires("run:y", now + 300);
        let t = std::time::Instant::now();
        b.nap(Duration::from_secs(5)).await;
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "nap took {took:?}");
        assert_eq!(b.next_expiry(now_ms()), Some(expiry + WAKE_MARGIN_MS), "run:y met, forgotten");
        held.release().await;
    }

    fn store_expiry(r: &Replica, key: &str) -> i64 {
        r.expiries.lock().unwrap()[key]
    }

    #[test]
    fn rendezvous_moves_only_the_departed_share() {
        let three: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let two: Vec<String> = ["a", "c"].iter().map(|s| s.to_string()).collect();
        let keys: Vec<String> = (0..3000).map(|i| format!("sweep:gpu-node-{i:05}")).collect();
        let mut per = std::collections::HashMap::new();
        for k in &keys {
            let p3 = preferred(k, &three).unwrap();
            *per.entry(p3).or_insert(0) += 1;
            let p2 = preferred(k, &two).unwrap();
            if p3 != "b" {
                assert_eq!(p2, p3, "{k} moved although its replica stayed");
            }
        }
        for (r, n) in per {
            assert!((850..1150).contains(&n), "{r} got {n} of 3000");
        }
        assert_eq!(preferred("x", &[]), None);
    }
}
