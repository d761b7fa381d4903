//! The one audit service: every action writes an intent row before it starts and an outcome row after, with
//! the actor (`cli:<unix user>`, `web:<user>`, `scheduler`, `runbook:<run id>`), the request id and the
//! target. No intent row, no action: if the intent cannot be written the action is refused. An action killed
//! half-way leaves its intent row (outcome `started`), and the next taker of its lease writes `interrupted`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lifeline_bmc::{AuditId, AuditIntent, AuditOutcome, AuditSink};
use lifeline_store::{AuditEntry, Store};
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::error::{EngineError, Result};
use crate::outcome_wal::{OutcomeWal, Pending, Slot};

/// Writes audit rows as one actor.
#[derive(Debug, Clone)]
pub struct AuditService {
    store: Store,
    actor: String,
    /// Where a BMC command's outcome waits when the store refuses it (outcome first, then the answer).
    wal: Option<Arc<OutcomeWal>>,
}

/// An intent written; its outcome is still owed.
#[derive(Debug)]
#[must_use = "an intent needs its outcome"]
pub struct Intent {
    pub id: i64,
    action: AuditAction,
    target: String,
    request_id: Option<String>,
}

impl Intent {
    pub fn id(&self) -> i64 {
        self.id
    }
}

/// How an action ended, in the audit log's words: the one closed set, `lifeline_types::AuditOutcome`,
/// under the name the engine's callers use.
pub use lifeline_types::AuditOutcome as Outcome;

impl AuditService {
    pub fn new(store: Store, actor: impl Into<String>) -> Self {
        AuditService { store, actor: actor.into(), wal: None }
    }

    /// Keeps each BMC command's outcome in `wal`'s slot (reserved before the command is sent) when the
    /// store refuses it.
    pub fn with_wal(mut self, wal: Arc<OutcomeWal>) -> Self {
        self.wal = Some(wal);
        self
    }

    pub fn actor(&self) -> &str {
        &self.actor
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Writes the intent row. Failing here refuses the action.
    pub async fn intent(
        &self,
        action: AuditAction,
        target: &str,
        request_id: Option<&str>,
        detail: serde_json::Value,
    ) -> Result<Intent> {
        let id = self
            .write(action, target, Outcome::Started, detail, request_id)
            .await
            .map_err(|e| audit_unavailable(&self.store, action, e))?;
        Ok(Intent { id, action, target: target.into(), request_id: request_id.map(Into::into) })
    }

    /// Writes the outcome row of an intent. The action already happened; a failure here is reported but
    /// cannot undo it.
    pub async fn outcome(&self, intent: Intent, outcome: Outcome, detail: impl Serialize) -> Result<()> {
        let mut detail = serde_json::to_value(detail).unwrap_or(serde_json::Value::Null);
        match &mut detail {
            serde_json::Value::Object(m) => {
                m.insert("intent".into(), intent.id.into());
            }
            other => *other = serde_json::json!({ "intent": intent.id, "result": other.clone() }),
        }
        self.write(intent.action, &intent.target, outcome, detail, intent.request_id.as_deref())
            .await
            .map_err(|e| audit_unavailable(&self.store, intent.action, e))?;
        Ok(())
    }

    /// A single row for something that is both decided and done at once (a refusal, a read with effects).
    pub async fn record(
        &self,
        action: AuditAction,
        target: &str,
        outcome: Outcome,
        request_id: Option<&str>,
        detail: impl Serialize,
    ) -> Result<()> {
        let detail = serde_json::to_value(detail).unwrap_or(serde_json::Value::Null);
        self.write(action, target, outcome, detail, request_id)
            .await
            .map_err(|e| audit_unavailable(&self.store, action, e))?;
        Ok(())
    }

    async fn write(
        &self,
        action: AuditAction,
        target: &str,
        outcome: Outcome,
        detail: serde_json::Value,
        request_id: Option<&str>,
    ) -> std::result::Result<i64, lifeline_store::StoreError> {
        self.store
            .audit(&AuditEntry {
                actor: self.actor.clone(),
                // The store keeps the words: the one conversion, at its edge.
                action: action.as_str().into(),
                target: target.into(),
                outcome: outcome.as_str().into(),
                detail,
                request_id: request_id.map(Into::into),
            })
            .await
    }

    /// The sink the bmc crate writes its power/SEL rows through, as this actor.
    pub fn bmc_sink(&self) -> Arc<dyn AuditSink> {
        Arc::new(BmcSink { audit: self.clone(), requests: Mutex::default(), slots: Mutex::default() })
    }
}

fn audit_unavailable(store: &Store, action: AuditAction, e: lifeline_store::StoreError) -> EngineError {
    let what = if store.is_read_only() {
        format!("{action}: the store {} is read-only", store.location())
    } else {
        action.as_str().to_owned()
    };
    EngineError::AuditUnavailable { what, source: Box::new(e) }
}

/// How long a lease must still run when a BMC command is authorized under it: the command is sent right
/// after its intent row, so this bounds the window in which a lease could lapse between the check and the
/// send (a pause longer than this, exactly there, is the one case fencing at the store cannot cover).
pub const FENCE_MARGIN_MS: i64 = 2_000;
const FENCE_MARGIN: std::time::Duration = std::time::Duration::from_millis(FENCE_MARGIN_MS as u64);

/// The bmc crate's [`AuditSink`] over the audit service; remembers each intent's request id so the outcome
/// row carries it too, and its outcome slot.
struct BmcSink {
    audit: AuditService,
    requests: Mutex<HashMap<i64, Option<String>>>,
    slots: Mutex<HashMap<i64, Slot>>,
}

#[async_trait]
impl AuditSink for BmcSink {
    async fn intent(&self, rec: &AuditIntent) -> std::result::Result<AuditId, lifeline_bmc::BoxError> {
        // The intent authorizes the BMC command that follows it at once: under a lease (every guarded
        // action, a runbook step), it is written only while the lease is still ours with time left, so a
        // process paused past its lease (a replica on a stalled host) sends nothing.
        #[cfg(feature = "test-hooks")]
        if crate::lease::current_fence().is_some() {
            crate::hooks::park("before-intent");
        }
        // Local time the fence was checked: the store found the lease ours with FENCE_MARGIN_MS left at a
        // moment after this, so it is ours until at least this + the margin.
        let authorized_at = std::time::Instant::now();
        #[cfg(feature = "test-hooks")]
        let fence = crate::lease::current_fence().filter(|_| !crate::hooks::unfenced());
        #[cfg(not(feature = "test-hooks"))]
        let fence = crate::lease::current_fence();
        let fenced = fence.is_some();
        let id = match fence {
            Some(f) => {
                let entry = AuditEntry {
                    actor: self.audit.actor.clone(),
                    action: rec.action.as_str().into(),
                    target: rec.bmc.clone(),
                    outcome: Outcome::Started.as_str().into(),
                    detail: rec.detail.clone(),
                    request_id: rec.request_id.clone(),
                };
                self.audit
                    .store
                    .audit_fenced(&entry, (f.target.as_str(), f.holder.as_str(), f.fence), FENCE_MARGIN_MS)
                    .await?
            }
            None => {
                self.audit
                    .write(
                        rec.action,
                        &rec.bmc,
                        Outcome::Started,
                        rec.detail.clone(),
                        rec.request_id.as_deref(),
                    )
                    .await?
            }
        };
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).insert(id, rec.request_id.clone());
        if let Some(wal) = &self.audit.wal {
            // The command's outcome must survive a store that stops taking writes while the command runs:
            // its slot is on disk before anything is sent. No slot, no command.
            let pending = Pending::Audit {
                intent: id,
                actor: self.audit.actor.clone(),
                action: rec.action.as_str().into(),
                target: rec.bmc.clone(),
                request_id: rec.request_id.clone(),
            };
            match wal.reserve(pending).await {
                Ok(slot) => {
                    #[cfg(feature = "test-hooks")]
                    {
                        crate::hooks::park("before-send");
                        crate::hooks::stall_before_send().await;
                    }
                    // The last check before the command: a process stalled here (a paused replica, a slow
                    // disk) past the margin may have lost the lease, and sends nothing.
                    if fenced && authorized_at.elapsed() >= FENCE_MARGIN {
                        slot.recorded();
                        let why = format!(
                            "{:?} passed between the fenced intent and the command (margin {FENCE_MARGIN:?}): the \
                             lease may have passed to another holder; nothing was sent",
                            authorized_at.elapsed()
                        );
                        // Recorded only while the lease is still ours: a process that lost it writes
                        // nothing for work it no longer owns (the new holder reads the bare intent).
                        if let Some(f) = crate::lease::current_fence() {
                            let entry = AuditEntry {
                                actor: self.audit.actor.clone(),
                                action: rec.action.as_str().into(),
                                target: rec.bmc.clone(),
                                outcome: Outcome::Refused.as_str().into(),
                                detail: serde_json::json!({ "intent": id, "reason": why, "sent": false }),
                                request_id: rec.request_id.clone(),
                            };
                            let fence = (f.target.as_str(), f.holder.as_str(), f.fence);
                            let _ = self.audit.store.audit_fenced(&entry, fence, 0).await;
                        }
                        return Err(why.into());
                    }
                    self.slots.lock().unwrap_or_else(|p| p.into_inner()).insert(id, slot);
                }
                Err(e) => {
                    let why = lifeline_types::error_chain(&e);
                    let detail = serde_json::json!({ "intent": id, "reason": why, "sent": false });
                    let _ = self
                        .audit
                        .write(rec.action, &rec.bmc, Outcome::Refused, detail, rec.request_id.as_deref())
                        .await;
                    return Err(Box::new(e));
                }
            }
        }
        Ok(AuditId(id))
    }

    async fn outcome(&self, rec: &AuditOutcome) -> std::result::Result<(), lifeline_bmc::BoxError> {
        let mut detail = rec.detail.clone();
        if let serde_json::Value::Object(m) = &mut detail {
            m.insert("intent".into(), rec.intent.0.into());
        }
        let request_id =
            self.requests.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.intent.0).flatten();
        let slot = self.slots.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.intent.0);
        let outcome = if rec.ok { Outcome::Ok } else { Outcome::Failed };
        #[cfg(feature = "test-hooks")]
        let written = match crate::hooks::recording_refused() {
            Some(why) => Err(why),
            None => self
                .audit
                .write(rec.action, &rec.bmc, outcome, detail.clone(), request_id.as_deref())
                .await
                .map_err(|e| lifeline_types::error_chain(&e)),
        };
        #[cfg(not(feature = "test-hooks"))]
        let written = self
            .audit
            .write(rec.action, &rec.bmc, outcome, detail.clone(), request_id.as_deref())
            .await
            .map_err(|e| lifeline_types::error_chain(&e));
        match (written, slot) {
            (Ok(_), Some(slot)) => {
                slot.recorded();
                Ok(())
            }
            (Ok(_), None) => Ok(()),
            // The command was sent: its outcome waits in the slot for the store, and is not lost.
            (Err(why), Some(slot)) => {
                tracing::warn!(bmc = %rec.bmc, action = %rec.action, "outcome kept until the store takes it: {why}");
                slot.keep(outcome.as_str(), detail, &why)
                    .await
                    .map_err(|e| Box::new(e) as lifeline_bmc::BoxError)
            }
            (Err(why), None) => Err(why.into()),
        }
    }
}

#[cfg(all(test, feature = "test-hooks"))]
mod tests {
    use super::*;
    use lifeline_store::LeaseAttempt;

    fn intent(action: AuditAction) -> AuditIntent {
        AuditIntent {
            at: chrono::Utc::now(),
            bmc: "n1".into(),
            action,
            request_id: Some("r1".into()),
            detail: serde_json::json!({}),
        }
    }

    /// A process stalled between its fenced intent and the command (past the margin) sends nothing: the
    /// intent is refused with an outcome row saying nothing was sent, and no slot is left.
    #[tokio::test]
    async fn a_stall_between_the_fenced_intent_and_the_command_sends_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        let LeaseAttempt::Acquired { lease, .. } =
            store.try_lease("n1", "h1", "r1", "power.cycle", 60_000).await.unwrap()
        else {
            panic!("lease")
        };
        let wal = OutcomeWal::for_dir(dir.path());
        let sink = AuditService::new(store.clone(), "cli:t").with_wal(wal.clone()).bmc_sink();
        let fence = crate::lease::Fence {
            target: lease.target.clone(),
            holder: lease.holder.clone(),
            fence: lease.fence,
        };
        // No stall: authorized.
        let ok = crate::lease::run_fenced(fence.clone(), sink.intent(&intent(AuditAction::PowerOn))).await;
        assert!(ok.is_ok(), "{ok:?}");
        crate::hooks::STALL_BEFORE_SEND_MS.store(2100, std::sync::atomic::Ordering::Relaxed);
        let r = crate::lease::run_fenced(fence, sink.intent(&intent(AuditAction::PowerCycle))).await;
        crate::hooks::STALL_BEFORE_SEND_MS.store(0, std::sync::atomic::Ordering::Relaxed);
        let e = r.expect_err("a stalled intent must not authorize the command");
        assert!(e.to_string().contains("nothing was sent"), "{e}");
        let rows = store.audit_log(Some("n1"), 10).await.unwrap();
        let refused: Vec<_> = rows
            .iter()
            .filter(|r| r.entry.action == "power.cycle")
            .map(|r| r.entry.outcome.as_str())
            .collect();
        assert_eq!(refused.iter().filter(|o| **o == "refused").count(), 1, "{rows:?}");
        // One slot left: the authorized power.on's, whose outcome is still owed; none for the refused one.
        assert_eq!(std::fs::read_dir(wal.dir()).unwrap().count(), 1);
    }

    /// Stalled past the lease's expiry itself, the process writes nothing at all after its intent: the
    /// lease may be another's, whose holder reads the bare intent.
    #[tokio::test]
    async fn a_stall_past_the_lease_writes_nothing_after_the_intent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        let LeaseAttempt::Acquired { lease, .. } =
            store.try_lease("n1", "h1", "r1", "power.cycle", 2_300).await.unwrap()
        else {
            panic!("lease")
        };
        let sink =
            AuditService::new(store.clone(), "cli:t").with_wal(OutcomeWal::for_dir(dir.path())).bmc_sink();
        let fence = crate::lease::Fence {
            target: lease.target.clone(),
            holder: lease.holder.clone(),
            fence: lease.fence,
        };
        crate::hooks::STALL_BEFORE_SEND_MS.store(2_600, std::sync::atomic::Ordering::Relaxed);
        let r = crate::lease::run_fenced(fence, sink.intent(&intent(AuditAction::PowerCycle))).await;
        crate::hooks::STALL_BEFORE_SEND_MS.store(0, std::sync::atomic::Ordering::Relaxed);
        assert!(r.is_err(), "a stalled intent must not authorize the command");
        let rows = store.audit_log(Some("n1"), 10).await.unwrap();
        let outcomes: Vec<_> = rows.iter().map(|r| r.entry.outcome.as_str()).collect();
        assert_eq!(outcomes, ["started"], "{rows:?}");
    }
}
