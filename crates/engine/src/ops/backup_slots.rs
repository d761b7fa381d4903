//! The scheduled backups' bookkeeping in the store: per job (a switch and a cron line) the newest slot
//! started, and the finished slots' work rows kept for audits, pruned after a while.
//!
//! Why in the store: with several replicas on one database each slot runs exactly once. The server's
//! scheduler claims a slot's unit of work first (the replica set's claim), then moves the job's mark
//! forward; these operations carry each of those writes to the store unchanged, so the order the
//! scheduler chooses is the order the store sees.

use crate::context::Lifeline;
use crate::error::Result;
use crate::ops::replica_work::WorkRow;

impl Lifeline {
    /// The newest slot started of scheduled job `job` (milliseconds), `None` before its first sight.
    pub async fn schedule_last(&self, job: &str) -> Result<Option<i64>> {
        Ok(self.store().await?.schedule_last(job).await?)
    }

    /// Starts counting job `job` from `slot_ms`, unless it is known already (two replicas seeing a new
    /// job at once keep the first mark).
    pub async fn schedule_init(&self, job: &str, slot_ms: i64) -> Result<()> {
        Ok(self.store().await?.schedule_init(job, slot_ms).await?)
    }

    /// Moves job `job`'s newest started slot forward to `slot_ms`, never back (replicas race here).
    pub async fn schedule_advance(&self, job: &str, slot_ms: i64) -> Result<()> {
        Ok(self.store().await?.schedule_advance(job, slot_ms).await?)
    }

    /// The unit of work `key` (a slot, a run), whoever holds it; `None` when never claimed.
    pub async fn work_record(&self, key: &str) -> Result<Option<WorkRow>> {
        Ok(self.store().await?.work(key).await?)
    }

    /// Deletes the finished units of work under `prefix` done before `before_ms`; how many.
    pub async fn prune_done_work(&self, prefix: &str, before_ms: i64) -> Result<u64> {
        Ok(self.store().await?.prune_done_work(prefix, before_ms).await?)
    }
}
