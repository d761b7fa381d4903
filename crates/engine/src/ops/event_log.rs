//! The stored event log as a whole (every source: BMC events, Lifeline's own fault and policy events), read
//! after a row id so a reader pages forward without missing or repeating a row.

pub use lifeline_store::{EventRow, NewEvent};

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// Stored events of every source after row `after`, oldest first, at most `limit`.
    pub async fn events_after(&self, after: i64, limit: i64) -> Result<Vec<EventRow>> {
        Ok(self.store().await?.events_after(after, limit).await?)
    }

    /// Stores one event; returns its row id.
    pub async fn record_event(&self, e: &NewEvent) -> Result<i64> {
        Ok(self.store().await?.record_event(e).await?)
    }
}
