//! Reads shared within one short task: a view of the client ([`Client::sharing_reads`]) on which
//! concurrent and repeated GETs of one URL are sent once. Why: a sweep reads a BMC's health and its event
//! log at the same time, and both walk the Systems collection and the system document; on a BMC without
//! `$expand` that was two requests more per BMC, in a round trip whose requests already queue for the BMC's
//! few request slots. Why not for every client: a document read twice on purpose (a power state polled
//! after a reset) must come from the BMC each time, so sharing is only for a view its caller drops when
//! the task ends. A failed read is not shared: the next caller sends its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::OnceCell;

use super::Client;
use crate::doc::FieldWarning;
use crate::error::RedfishError;

type Doc = (Value, Vec<FieldWarning>);

#[derive(Debug, Default)]
pub(crate) struct ReadMemo(Mutex<HashMap<String, Arc<OnceCell<Doc>>>>);

impl ReadMemo {
    fn cell(&self, link: &str) -> Arc<OnceCell<Doc>> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(link.to_owned()).or_default().clone()
    }
}

impl Client {
    /// This client, with GETs shared between the tasks that use this view (see the module doc). Writes,
    /// sessions and limits are the client's own.
    pub fn sharing_reads(&self) -> Client {
        Client { inner: self.inner.clone(), memo: Some(Arc::new(ReadMemo::default())) }
    }

    pub(super) async fn get_shared(&self, link: &str) -> Result<Doc, RedfishError> {
        let Some(memo) = &self.memo else { return self.get_json_now(link).await };
        let cell = memo.cell(link);
        cell.get_or_try_init(|| self.get_json_now(link)).await.cloned()
    }
}
