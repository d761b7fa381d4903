//! The fault intake's writes and reads: raising a fault record (one open record per kind and device, a
//! repeat bumps it), finding the open record a new observation or a clean boot refers to.
//!
//! Why here and not in the server: the engine owns the store, and the server's fault rules, the console
//! correlation and the cabling check raise and resolve the same records; the dedup is the store's (one
//! statement pair per raise), so every caller gets the same rule.

use crate::context::Lifeline;
use crate::error::Result;
use crate::ops::fault_records::FaultRow;

/// Fault records read at once when a caller scans them all (every open one, every acknowledged one).
const ALL: i64 = 10_000_000;

impl Lifeline {
    /// Opens a fault of `kind` on `device`, or bumps the open (or acknowledged) one of that kind there
    /// (count, message, detail). Returns the record and whether it is new (a new one is what the fault
    /// policy, probation and the webhooks answer; a bump is not).
    pub async fn fault_raise(
        &self,
        kind: &str,
        device: &str,
        severity: &str,
        message: &str,
        detail: &serde_json::Value,
    ) -> Result<(FaultRow, bool)> {
        Ok(self.store().await?.fault_raise(kind, device, severity, message, detail).await?)
    }

    /// Every fault record in `state` (`open`, `acked`), newest first.
    pub async fn faults_in(&self, state: &str) -> Result<Vec<FaultRow>> {
        self.faults(Some(state), ALL).await
    }

    /// How many faults are open now (the `open_faults` gauge).
    pub async fn open_fault_count(&self) -> Result<usize> {
        Ok(self.faults_in("open").await?.len())
    }

    /// The open fault of `kind` on `device`, if there is one.
    pub async fn open_fault(&self, kind: &str, device: &str) -> Result<Option<FaultRow>> {
        Ok(self.faults_in("open").await?.into_iter().find(|f| f.kind == kind && f.device == device))
    }
}

#[cfg(test)]
mod tests {

    /// One open record per kind and device: a repeat bumps it (not new, so nothing answers it twice), an
    /// acknowledged one is bumped too, and a resolved one leaves room for a new record.
    #[tokio::test]
    async fn a_repeat_bumps_the_open_record_and_a_resolved_one_opens_anew() {
        let dir = tempfile::tempdir().unwrap();
        let l = crate::Lifeline::in_dir(dir.path());
        let d = serde_json::json!({ "n": 1 });
        let (f1, new1) = l.fault_raise("rail-down", "n1", "critical", "first", &d).await.unwrap();
        let (f2, new2) = l.fault_raise("rail-down", "n1", "critical", "again", &d).await.unwrap();
        assert!(new1 && !new2);
        assert_eq!((f2.id, f2.count, f2.message.as_str()), (f1.id, 2, "again"));
        // Another kind, another device: records of their own.
        let (other, new) = l.fault_raise("rail-down", "n2", "critical", "n2", &d).await.unwrap();
        assert!(new && other.id != f1.id);
        assert_eq!(l.open_fault_count().await.unwrap(), 2);
        assert_eq!(l.open_fault("rail-down", "n1").await.unwrap().map(|f| f.id), Some(f1.id));
        assert_eq!(l.open_fault("agent-report", "n1").await.unwrap(), None);

        l.fault_ack(f1.id).await.unwrap();
        assert_eq!(l.open_fault("rail-down", "n1").await.unwrap(), None, "acknowledged: not open");
        assert_eq!(l.faults_in("acked").await.unwrap().iter().map(|f| f.id).collect::<Vec<_>>(), [f1.id]);
        let (f3, new3) = l.fault_raise("rail-down", "n1", "critical", "third", &d).await.unwrap();
        assert!(!new3 && f3.id == f1.id && f3.count == 3, "an acknowledged record is bumped: {f3:?}");

        assert_eq!(l.fault_resolve("rail-down", "n1").await.unwrap(), 1);
        assert_eq!(l.open_fault_count().await.unwrap(), 1);
        let (f4, new4) = l.fault_raise("rail-down", "n1", "critical", "back", &d).await.unwrap();
        assert!(new4 && f4.id != f1.id && f4.count == 1);
    }
}
