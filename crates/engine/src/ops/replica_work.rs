//! What the replicas sharing the store hold: their work claims (a console logger, a run being driven),
//! read for views of the replica set.

pub use lifeline_store::{ReplicaRow, WorkRow};

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
}
