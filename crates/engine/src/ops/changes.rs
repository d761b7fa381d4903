//! The signal that this process changed a device's state (a fault, a run, a journal row, a drain), for
//! readers that follow the fleet live (the web console's stream) instead of polling it.
//!
//! Why a receiver and not a callback: a reader wakes when it is ready and looks at the store once for any
//! number of writes in between; writes by other processes (replicas sharing a PostgreSQL store) do not
//! reach this signal, so such readers keep a periodic look as well.

use tokio::sync::watch;

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// Wakes (`changed().await`) after each state-changing write this process makes through its store;
    /// the value is how many such writes it has made.
    pub async fn state_changes(&self) -> Result<watch::Receiver<u64>> {
        Ok(self.store().await?.changes())
    }
}
