//! What the replicas sharing the store hold: their membership (a heartbeat row with an expiry each) and
//! their work claims (a console logger, a run being driven, a backup slot), written for the server's replica
//! set and read for views of it.
//!
//! Why each operation is one store statement: the replica set (the server's `replica` module) decides the
//! order of its writes (claim, then take over a dead holder's claim by its fence; renew, finish or release
//! naming the fence), and the fencing that keeps a paused replica from acting on work it lost lives in
//! those statements. These operations carry each one to the store unchanged, so the order the replica set
//! chooses is the order the store sees.

pub use lifeline_store::{ReplicaRow, WorkClaim, WorkRow};

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// The work claims whose key starts with `prefix` (`console:`), held or done, by any replica.
    pub async fn work_with_prefix(&self, prefix: &str) -> Result<Vec<WorkRow>> {
        Ok(self.store().await?.work_with_prefix(prefix).await?)
    }

    /// The replicas that have announced themselves, live or not.
    pub async fn replicas(&self) -> Result<Vec<ReplicaRow>> {
        Ok(self.store().await?.replicas().await?)
    }

    /// Announces (or keeps announcing) replica `id` as alive for `ttl_ms` more, with `info` about itself.
    pub async fn replica_heartbeat(&self, id: &str, info: &serde_json::Value, ttl_ms: i64) -> Result<()> {
        Ok(self.store().await?.replica_heartbeat(id, info, ttl_ms).await?)
    }

    /// Replica `id` leaves cleanly: its share moves at once instead of after its expiry.
    pub async fn replica_leave(&self, id: &str) -> Result<()> {
        Ok(self.store().await?.replica_leave(id).await?)
    }

    /// Forgets the replicas whose membership expired before `before_ms`; how many.
    pub async fn replicas_prune(&self, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.replicas_prune(before_ms).await?)
    }

    /// Claims unit of work `key` for `holder` for `ttl_ms`: claimed (free or expired), held by a live
    /// holder, or done (never claimable again).
    pub async fn work_claim(&self, key: &str, holder: &str, ttl_ms: i64) -> Result<WorkClaim> {
        Ok(self.store().await?.claim_work(key, holder, ttl_ms).await?)
    }

    /// Takes `key` over from the claim with `fence` (its holder is known dead); `None` when someone else
    /// took it first or it is done.
    pub async fn work_take_over(
        &self,
        key: &str,
        fence: i64,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<Option<WorkRow>> {
        Ok(self.store().await?.take_over_work(key, fence, holder, ttl_ms).await?)
    }

    /// Extends `holder`'s claim on `key` with `fence` by `ttl_ms`; `false` when it is no longer theirs
    /// (taken over: fenced out) or done.
    pub async fn work_renew(&self, key: &str, holder: &str, fence: i64, ttl_ms: i64) -> Result<bool> {
        Ok(self.store().await?.renew_work(key, holder, fence, ttl_ms).await?)
    }

    /// Extends every claim of `holder` under `prefix` by `ttl_ms` in one statement; the keys still
    /// theirs, with their fences.
    pub async fn work_renew_held(
        &self,
        holder: &str,
        prefix: &str,
        ttl_ms: i64,
    ) -> Result<Vec<(String, i64)>> {
        Ok(self.store().await?.renew_held_work(holder, prefix, ttl_ms).await?)
    }

    /// Marks `key` done with `outcome` (never claimable again); `false` when the claim with `fence` was
    /// lost before.
    pub async fn work_finish(&self, key: &str, holder: &str, fence: i64, outcome: &str) -> Result<bool> {
        Ok(self.store().await?.finish_work(key, holder, fence, outcome).await?)
    }

    /// Gives `key` back unfinished (unless the claim with `fence` is no longer `holder`'s); whether it was.
    pub async fn work_release(&self, key: &str, holder: &str, fence: i64) -> Result<bool> {
        Ok(self.store().await?.release_work(key, holder, fence).await?)
    }
}
