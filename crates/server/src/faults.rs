//! Fault rules: observations become fault records. One open record per (kind, device); a repeat bumps its
//! count, a condition that clears resolves it. New faults are posted to the webhooks.
//!
//! Kinds: `bmc-unreachable`, `health-critical`, `sel-critical` (from sweeps), `backup-failed` (N scheduled
//! failures in a row), `agent-report` (an in-band agent said a node fails). A new fault goes through the
//! fault policy ([`crate::policy`]), whose decision is recorded with it.

use std::sync::atomic::Ordering;

use lifeline_bmc::SweepRow;
use lifeline_engine::{AuditService, EngineError, Outcome};
use lifeline_store::{FaultRow, Store};

use crate::state::AppState;

pub async fn raise(
    s: &AppState,
    kind: &str,
    device: &str,
    severity: &str,
    message: &str,
    detail: serde_json::Value,
) -> Result<FaultRow, EngineError> {
    let (f, new) = s.store.fault_raise(kind, device, severity, message, &detail).await?;
    if new {
        tracing::warn!(%kind, %device, "fault: {message}");
        let _ = s
            .store
            .record_event(&lifeline_store::NewEvent {
                device: Some(device.into()),
                source: "lifeline".into(),
                severity: severity.into(),
                message: format!("fault {kind}: {message}"),
                data: serde_json::json!({ "fault": f.id }),
            })
            .await;
        let decision = crate::policy::apply(s, &f).await;
        crate::webhook::notify(
            s,
            "fault",
            serde_json::json!({ "event": "fault", "fault": f, "decision": decision }),
        );
    }
    refresh_gauge(s).await;
    Ok(f)
}

pub async fn resolve(s: &AppState, kind: &str, device: &str) -> Result<(), EngineError> {
    if s.store.fault_resolve(kind, device).await? > 0 {
        refresh_gauge(s).await;
    }
    Ok(())
}

async fn refresh_gauge(s: &AppState) {
    if let Ok(open) = s.store.faults(Some("open"), 1_000_000).await {
        s.metrics.open_faults.store(open.len() as u64, Ordering::Relaxed);
    }
}

pub async fn ack(store: &Store, audit: &AuditService, id: i64) -> Result<FaultRow, EngineError> {
    let f = store
        .fault(id)
        .await?
        .ok_or_else(|| EngineError::NotFound { target: id.to_string(), what: "no such fault".into() })?;
    if !store.fault_ack(id, audit.actor()).await? {
        return Err(EngineError::Refused {
            target: f.device,
            reason: format!("fault {id} is {}, not open", f.state),
        });
    }
    audit
        .record("fault.ack", &f.device, Outcome::Ok, None, serde_json::json!({ "fault": id, "kind": f.kind }))
        .await?;
    store
        .fault(id)
        .await?
        .ok_or_else(|| EngineError::NotFound { target: id.to_string(), what: "no such fault".into() })
}

/// The (kind, device) pairs with an open or acknowledged fault: what a clean observation may resolve.
pub type Unresolved = std::collections::HashSet<(String, String)>;

/// Every unresolved fault, once per sweep: a clean row then costs no write at all (at 10,000 BMCs the
/// resolve-everything approach was two UPDATEs per BMC per sweep).
pub async fn unresolved(s: &AppState) -> Result<Unresolved, EngineError> {
    let mut out = Unresolved::new();
    for state in ["open", "acked"] {
        for f in s.store.faults(Some(state), 10_000_000).await? {
            out.insert((f.kind, f.device));
        }
    }
    Ok(out)
}

/// The sweep rules, for one swept BMC.
pub async fn from_sweep_row(s: &AppState, row: &SweepRow) -> Result<(), EngineError> {
    from_sweep_row_known(s, row, None).await
}

/// The sweep rules, for one swept BMC, resolving only what `known` says is unresolved (`None`: try all).
pub async fn from_sweep_row_known(
    s: &AppState,
    row: &SweepRow,
    known: Option<&Unresolved>,
) -> Result<(), EngineError> {
    let d = &row.name;
    // The rules themselves live in the engine, shared with the runbooks' `fault-cleared` post-condition.
    let verdict = lifeline_engine::fault_rules::sweep_verdict(row, None);
    for kind in verdict.clear {
        if known.is_none_or(|k| k.contains(&(kind.to_owned(), d.clone()))) {
            resolve(s, kind, d).await?;
        }
    }
    for f in verdict.raise {
        raise(s, f.kind, d, f.severity, &f.message, f.detail).await?;
    }
    Ok(())
}

pub async fn agent_report(
    s: &AppState,
    node: &str,
    passed: bool,
    report: &serde_json::Value,
) -> Result<Option<FaultRow>, EngineError> {
    if passed {
        resolve(s, "agent-report", node).await?;
        return Ok(None);
    }
    let summary =
        report.get("summary").and_then(|v| v.as_str()).unwrap_or("the in-band agent reports failing checks");
    Ok(Some(raise(s, "agent-report", node, "critical", summary, report.clone()).await?))
}
