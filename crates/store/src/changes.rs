//! Tells this process's readers when it wrote something that changes a device's state (a fault opened,
//! acknowledged or resolved, a run created or moved, a journal or approval row, an audit row such as a
//! drain), so that the web console's live stream can look at once instead of at its next periodic look.
//! One counter per opened store, shared by its clones; writes by other processes (replicas sharing a
//! PostgreSQL store) do not reach it, and readers keep a periodic look for those.

use tokio::sync::watch;

use crate::Store;

/// The counter: how many state-changing writes this process has made through the store.
#[derive(Debug, Clone)]
pub(crate) struct Changes(std::sync::Arc<watch::Sender<u64>>);

impl Default for Changes {
    fn default() -> Self {
        Changes(std::sync::Arc::new(watch::Sender::new(0)))
    }
}

impl Store {
    /// Wakes (`changed().await`) after each state-changing write; the value is [`Store::generation`].
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.0.subscribe()
    }

    /// How many state-changing writes this process has made: a cache built at one generation is stale
    /// once it moves.
    pub fn generation(&self) -> u64 {
        *self.changes.0.borrow()
    }

    /// Called after a write that changes a device's state has succeeded.
    pub(crate) fn touched(&self) {
        self.changes.0.send_modify(|g| *g = g.wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[tokio::test]
    async fn a_new_fault_wakes_a_reader_and_a_repeat_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        let clone = store.clone();
        let mut rx = store.changes();
        let g0 = store.generation();
        clone.fault_raise("agent-report", "n1", "critical", "down", &serde_json::json!({})).await.unwrap();
        assert!(rx.has_changed().unwrap(), "a new fault must wake the clone's readers");
        rx.borrow_and_update();
        let g1 = store.generation();
        assert!(g1 > g0);
        clone.fault_raise("agent-report", "n1", "critical", "down", &serde_json::json!({})).await.unwrap();
        assert!(!rx.has_changed().unwrap(), "a repeat of an open fault changes no device's state");
        assert_eq!(clone.fault_resolve("agent-report", "n1").await.unwrap(), 1);
        assert!(rx.has_changed().unwrap(), "a resolved fault must wake readers");
        rx.borrow_and_update();
        assert_eq!(clone.fault_resolve("agent-report", "n1").await.unwrap(), 0);
        assert!(!rx.has_changed().unwrap(), "resolving nothing changes nothing");
    }
}
