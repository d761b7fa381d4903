//! Typed operations, one module per concern. Each is a method on [`Lifeline`] returning a `Serialize`
//! result; actions go through [`Lifeline::guarded`]: request id, lease, audit, outcome kept for replays.

pub mod accounts;
pub mod audit_log;
pub mod backup;
pub mod backup_slots;
pub mod bios;
pub mod bios_drift;
pub mod bmc;
pub mod bmc_info;
pub mod bmc_reset;
pub mod boot;
pub mod cabling;
pub mod changes;
pub mod console;
pub mod correlation;
pub mod db;
pub mod event_log;
pub mod events;
pub mod fault_intake;
pub mod fault_records;
pub mod fault_response;
pub mod firmware;
mod firmware_plan;
pub mod fleet_view;
pub mod gauges;
pub mod incident;
pub mod inventory;
pub mod media;
pub mod notify;
pub mod power;
pub mod probation;
pub mod readmit;
mod recorded;
pub mod replica_work;
pub mod runs;
pub mod sweep;
pub mod trust;
pub mod users;
pub mod wait;
pub mod web_sessions;

use std::future::Future;

use lifeline_types::AuditAction;
use serde::Serialize;
use serde::ser::SerializeMap;

use crate::context::Lifeline;
use crate::error::{EngineError, ErrorReport, Result};
use crate::lease::Acquired;

/// One target's result in a multi-target operation. Serialises as the result itself, or as
/// `{"<key>": target, "error": message, "class": class}`.
#[derive(Debug)]
pub struct Row<T> {
    /// The JSON key naming the target in an error row (`bmc`, `switch`, `node`).
    pub key: &'static str,
    pub target: String,
    pub result: std::result::Result<T, EngineError>,
}

impl<T> Row<T> {
    pub fn new(key: &'static str, target: impl Into<String>, result: Result<T>) -> Self {
        Row { key, target: target.into(), result }
    }

    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }
}

impl<T: Serialize> Serialize for Row<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match &self.result {
            Ok(v) => v.serialize(s),
            Err(e) => {
                let ErrorReport { class, message } = e.report();
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry(self.key, &self.target)?;
                m.serialize_entry("error", &message)?;
                m.serialize_entry("class", &class)?;
                m.end()
            }
        }
    }
}

/// An action's result: done now, or the stored outcome of an earlier identical request.
#[derive(Debug, Clone)]
pub enum Acted<T> {
    Fresh(T),
    /// The request id was seen before (a replay), or the same action finished on the target while this
    /// request waited for it (`coalesced`): nothing was done again.
    Replayed {
        request_id: String,
        outcome: serde_json::Value,
        coalesced: bool,
    },
    /// Done now, but the store refused its outcome: the outcome waits in a local slot
    /// ([`crate::outcome_wal`]) and is recorded when the store takes writes again; a retry with the same
    /// request id is answered from it. Never "not done": the action ran.
    Delayed {
        value: T,
        request_id: String,
        warning: String,
    },
}

impl<T: Serialize> Serialize for Acted<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Acted::Fresh(v) => v.serialize(s),
            Acted::Replayed { request_id, outcome, coalesced } => {
                let mut m = s.serialize_map(None)?;
                if let serde_json::Value::Object(o) = outcome {
                    for (k, v) in o {
                        m.serialize_entry(k, v)?;
                    }
                } else {
                    m.serialize_entry("outcome", outcome)?;
                }
                let key = if *coalesced { "coalesced_with" } else { "replay_of" };
                m.serialize_entry(key, request_id)?;
                m.end()
            }
            Acted::Delayed { value, request_id, warning } => {
                let mut m = s.serialize_map(None)?;
                match serde_json::to_value(value).unwrap_or(serde_json::Value::Null) {
                    serde_json::Value::Object(o) => {
                        for (k, v) in o {
                            m.serialize_entry(&k, &v)?;
                        }
                    }
                    other => m.serialize_entry("outcome", &other)?,
                }
                m.serialize_entry("recording", "delayed")?;
                m.serialize_entry("request_id", request_id)?;
                m.serialize_entry("warning", warning)?;
                m.end()
            }
        }
    }
}

impl<T> Acted<T> {
    /// The result of work done by this request (recorded or not yet).
    pub fn fresh(&self) -> Option<&T> {
        match self {
            Acted::Fresh(v) | Acted::Delayed { value: v, .. } => Some(v),
            Acted::Replayed { .. } => None,
        }
    }

    /// Why the answer needs a warning: its outcome is not in the store yet.
    pub fn warning(&self) -> Option<&str> {
        match self {
            Acted::Delayed { warning, .. } => Some(warning),
            Acted::Replayed { outcome, .. } => outcome.get("warning").and_then(|w| w.as_str()),
            Acted::Fresh(_) => None,
        }
    }
}

/// Per-BMC reads and actions in flight at once (the BMC pool's own fan-out bounds the BMC traffic; this
/// bounds the rows being set up: request rows, leases).
pub(crate) const PER_BMC_CONCURRENCY: usize = 64;

impl Lifeline {
    /// Runs `f` on every selected BMC (bounded), one [`Row`] per BMC in selection order; a BMC error becomes
    /// that row's error, named after the BMC.
    pub(crate) async fn each_bmc<T, F, Fut>(
        &self,
        sel: &crate::targets::BmcSelection,
        f: F,
    ) -> Result<Vec<Row<T>>>
    where
        F: Fn(lifeline_bmc::Bmc) -> Fut,
        Fut: Future<Output = std::result::Result<T, lifeline_bmc::BmcError>>,
    {
        use futures::StreamExt;
        let pool = self.bmc_pool().await?;
        let f = &f;
        Ok(futures::stream::iter(sel.bmcs.iter().cloned())
            .map(|b| {
                let bmc = pool.bmc(b.target);
                async move {
                    let name = bmc.name().to_owned();
                    let r = f(bmc).await.map_err(|source| EngineError::Bmc { target: name.clone(), source });
                    Row::new("bmc", name, r)
                }
            })
            .buffered(PER_BMC_CONCURRENCY)
            .collect()
            .await)
    }

    /// Runs one action on one target under the idempotency table and the target's lease: a replayed
    /// request id returns the first outcome; a busy target is a conflict (or a wait); the action's result
    /// is stored for replays before the lease is released.
    pub async fn guarded<T, F, Fut>(&self, target: &str, action: AuditAction, f: F) -> Result<Acted<T>>
    where
        T: Serialize,
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let store = self.store().await?;
        let request_id = self.request_id_for(target);
        let retry = self.retry_key(&request_id, target).to_owned();
        // Outcomes the store refused before go in first; a retry of one still waiting is answered from it.
        if let Some(kept) = recorded::kept_first(self, store, &request_id, &retry).await {
            return Ok(kept);
        }
        if let Some(prev) = store.begin_request(&request_id, target, action.as_str(), self.actor()).await? {
            return replay(store, prev, &request_id, target, action.as_str()).await;
        }
        let audit = self.audit().await?;
        let leases = self.leases().await?;
        let guard = match leases.acquire(target, action, &request_id, &audit).await {
            Ok(Acquired::Lease(g)) => g,
            Ok(Acquired::DoneBy(done)) => {
                let outcome = done.outcome.clone().unwrap_or(serde_json::Value::Null);
                store
                    .coalesce_request(
                        &request_id,
                        &serde_json::json!({ "coalesced_with": done.request_id, "outcome": outcome }),
                    )
                    .await?;
                return Ok(Acted::Replayed { request_id: done.request_id, outcome, coalesced: true });
            }
            Err(e) => {
                let _ = store.drop_request(&request_id).await;
                return Err(e);
            }
        };
        // The outcome's slot is on disk before the action can send anything (outcome first, then the answer).
        let slot = match recorded::reserve(self, &request_id, target, action).await {
            Ok(slot) => slot,
            Err(e) => {
                let _ = store.drop_request(&request_id).await;
                guard.release().await;
                return Err(e);
            }
        };
        // Writes that must not happen after the lease is lost (a config version) check this token.
        let result = crate::lease::run_fenced(guard.fence_token(), f(request_id.clone())).await;
        let stored = match &result {
            Ok(v) => serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            Err(e) => serde_json::json!({ "error": e.chain(), "class": e.class() }),
        };
        let answer = recorded::finish(store, slot, (&request_id, &retry), stored, result).await;
        guard.release().await;
        answer
    }
}

async fn replay<T>(
    store: &lifeline_store::Store,
    prev: lifeline_store::RequestRow,
    request_id: &str,
    target: &str,
    action: &str,
) -> Result<Acted<T>> {
    if prev.target != target || prev.action != action {
        return Err(EngineError::RequestIdReused {
            request_id: request_id.into(),
            previous: prev.action,
            previous_target: prev.target,
        });
    }
    match prev.outcome {
        Some(outcome) if prev.state == "done" || prev.state == "coalesced" => {
            Ok(Acted::Replayed { request_id: request_id.into(), outcome, coalesced: false })
        }
        // Its process stopped while it ran: nobody will ever know more.
        _ if prev.state == "interrupted" => Err(EngineError::UnknownOutcome {
            request_id: request_id.into(),
            target: target.into(),
            action: action.into(),
            started: ms(prev.started_at_ms),
        }),
        _ => {
            // The first request is still at work (it holds the target's lease, or it registered recently
            // enough to be waiting for that lease): a retry with the same id must wait for its outcome,
            // never be told to use a new id, which would act a second time.
            let live = store
                .lease(target)
                .await?
                .is_some_and(|l| l.request_id == request_id && l.expires_at_ms >= lifeline_store::now_ms());
            if live || lifeline_store::now_ms().saturating_sub(prev.started_at_ms) < IN_PROGRESS_FOR_MS {
                return Err(EngineError::InProgress {
                    request_id: request_id.into(),
                    target: target.into(),
                    action: action.into(),
                    started: ms(prev.started_at_ms),
                });
            }
            Err(EngineError::UnknownOutcome {
                request_id: request_id.into(),
                target: target.into(),
                action: action.into(),
                started: ms(prev.started_at_ms),
            })
        }
    }
}

/// How long after it registered a request without an outcome counts as still running, when it holds no
/// lease yet (it may be waiting for one: `--wait`, a runbook's admission): longer than any such wait.
const IN_PROGRESS_FOR_MS: i64 = 120_000;

fn ms(v: i64) -> chrono::DateTime<chrono::Utc> {
    use chrono::TimeZone;
    chrono::Utc.timestamp_millis_opt(v).single().unwrap_or_default()
}
