//! Fault rules: observations become fault records. One open record per (kind, device); a repeat bumps its
//! count, a condition that clears resolves it. New faults are posted to the webhooks.
//!
//! Kinds: `bmc-unreachable`, `health-critical`, `sel-critical` (from sweeps), `backup-failed` (N scheduled
//! failures in a row), `agent-report` (an in-band agent said a node fails), `rail-down` and
//! `console-<finding>` (what a console printed, [`console_intake`]), `shared-<kind>` (one fault on the part
//! several devices share, with its members). A new fault goes through the fault policy ([`crate::policy`]),
//! whose decision is recorded with it. docs/faults.md describes them all.

use std::sync::atomic::Ordering;

use lifeline_bmc::SweepRow;
use lifeline_engine::EngineError;
use lifeline_engine::ops::event_log::NewEvent;
use lifeline_engine::ops::fault_records::FaultRow;

use crate::state::AppState;

mod boot;
mod restore;
mod shared_clear;

pub use restore::offer_restore;

pub async fn raise(
    s: &AppState,
    kind: &str,
    device: &str,
    severity: &str,
    message: &str,
    detail: serde_json::Value,
) -> Result<FaultRow, EngineError> {
    let (f, new) = s.base.fault_raise(kind, device, severity, message, &detail).await?;
    if new {
        opened(s, &f).await;
    }
    refresh_gauge(s).await;
    Ok(f)
}

/// A fault record just opened (here, or by an engine operation the server ran, such as the scheduled
/// cabling check): the event, probation, the fault policy's decision and the webhooks, once.
pub async fn opened(s: &AppState, f: &FaultRow) {
    let (kind, device, message) = (&f.kind, &f.device, &f.message);
    tracing::warn!(%kind, %device, "fault: {message}");
    let _ = s
        .base
        .record_event(&NewEvent {
            device: Some(device.clone()),
            source: "lifeline".into(),
            severity: f.severity.clone(),
            message: format!("fault {kind}: {message}"),
            data: serde_json::json!({ "fault": f.id }),
        })
        .await;
    // A node on probation is drained again before the policy decides what answers the fault.
    crate::probation::on_fault(s, f).await;
    let decision = crate::policy::apply(s, f).await;
    crate::webhook::notify(
        s,
        "fault",
        serde_json::json!({ "event": "fault", "fault": f, "decision": decision }),
    );
}

pub async fn resolve(s: &AppState, kind: &str, device: &str) -> Result<(), EngineError> {
    if s.base.fault_resolve(kind, device).await? > 0 {
        refresh_gauge(s).await;
        crate::runbooks::withdraw_for_resolved(s, kind, device).await;
    }
    Ok(())
}

async fn refresh_gauge(s: &AppState) {
    if let Ok(open) = s.base.open_fault_count().await {
        s.metrics.open_faults.store(open as u64, Ordering::Relaxed);
    }
}

/// The (kind, device) pairs with an open or acknowledged fault: what a clean observation may resolve.
pub type Unresolved = std::collections::HashSet<(String, String)>;

/// Every unresolved fault, once per sweep: a clean row then costs no write at all (at 10,000 BMCs the
/// resolve-everything approach was two UPDATEs per BMC per sweep).
pub async fn unresolved(s: &AppState) -> Result<Unresolved, EngineError> {
    let mut out = Unresolved::new();
    for state in ["open", "acked"] {
        for f in s.base.faults_in(state).await? {
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

/// The console as a sensor, through correlation: every finding of the always-on consoles' scanners becomes
/// an observation (`lifeline_engine::fault_rules::console`), the engine's correlator holds it a moment and
/// decides it alone (the device's own fault) or with others (one fault on the part they share, the members
/// listed and linked, none of them raised or acted on alone). Runs until shutdown.
///
/// Each replica correlates what its own consoles saw: with several replicas a part's members may be split
/// between them (docs/faults.md).
pub async fn console_intake(
    s: AppState,
    mut findings: tokio::sync::broadcast::Receiver<lifeline_console::ConsoleFinding>,
    mut switch_evidence: tokio::sync::mpsc::Receiver<lifeline_engine::switch_evidence::PortEvidence>,
) {
    use lifeline_engine::correlate::{Correlator, Settings, Topology};
    use tokio::sync::broadcast::error::RecvError;
    let settings = match Settings::from_config(&s.base.config.config.correlation) {
        Ok(x) => x,
        Err(e) => {
            s.problem("fault correlation", &format!("{}; console findings are not raised", e.chain()));
            return;
        }
    };
    let Ok(inv) = s.base.inventory() else { return };
    let mut c = Correlator::new(Topology::from_inventory(&inv), settings);
    let mut boots = lifeline_engine::fault_rules::console::BootWatch::default();
    // Each member's newest failing and clearing evidence, for the shared faults (`shared_clear`).
    let mut ledger = lifeline_engine::correlate::clearing::Ledger::default();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            r = findings.recv() => match r {
                Ok(f) => {
                    if let Some(clean) = boots.feed(&f) {
                        boot::clean_boot(&s, &clean).await;
                        ledger.clean_boot(clean);
                        shared_clear::check(&s, &mut c, &ledger, &f.console, true).await;
                    }
                    if let Some(up) = lifeline_engine::fault_rules::console::link_up(&f, c.topology()) {
                        ledger.link_up(up);
                        shared_clear::check(&s, &mut c, &ledger, &f.console, true).await;
                    }
                    if let Some(o) = lifeline_engine::fault_rules::console::observation(&f, c.topology()) {
                        ledger.failing(&o);
                        c.observe(o);
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!("fault intake fell behind the consoles: {n} findings missed");
                }
                Err(RecvError::Closed) => break,
            },
            // What a switch said about its ports (counters, a config change): attached to the rail faults
            // on those ports, and those already raised are raised again with it.
            Some(e) = switch_evidence.recv() => {
                for v in c.evidence(e) {
                    let ev = c.evidence_for(&v);
                    if let Err(e) = verdict(&s, v, ev).await {
                        tracing::warn!("console fault with switch evidence: {}", e.chain());
                    }
                }
            }
            _ = tick.tick() => {
                for v in c.decide(lifeline_engine::ops::runs::now_ms()) {
                    let ev = c.evidence_for(&v);
                    let (own, member) = match &v {
                        lifeline_engine::correlate::Verdict::Own(o) => {
                            (Some((o.kind.clone(), o.unit.device.clone(), o.at_ms)), None)
                        }
                        lifeline_engine::correlate::Verdict::Shared(sh) => {
                            (None, sh.members.first().map(|m| m.unit.device.clone()))
                        }
                    };
                    if let Err(e) = verdict(&s, v, ev).await {
                        tracing::warn!("console fault: {}", e.chain());
                    } else if let Some((kind, device, at_ms)) = own {
                        boot::after_raise(&s, &boots, &kind, &device, at_ms).await;
                    } else if let Some(device) = member {
                        // Every member's evidence may have cleared while the correlator held them.
                        shared_clear::check(&s, &mut c, &ledger, &device, false).await;
                    }
                }
            }
            _ = s.shutdown.cancelled() => break,
        }
    }
}

/// Raises what the correlator decided: a device's own fault, or the shared part's fault with its members
/// (each member's event links it to that fault; a member's own earlier fault is linked, not acted on again).
/// The switch evidence on the members' ports goes with it: in its message, in its detail's `evidence`,
/// and a config change's restore offered as a run waiting for approval ([`offer_restore`]).
pub async fn verdict(
    s: &AppState,
    v: lifeline_engine::correlate::Verdict,
    evidence: Vec<lifeline_engine::switch_evidence::PortEvidence>,
) -> Result<(), EngineError> {
    use lifeline_engine::correlate::{Verdict, with_evidence};
    let f = match v {
        Verdict::Own(o) => {
            let mut detail = o.detail.clone();
            if let Some(r) = &o.unit.rail {
                detail["rail"] = serde_json::json!(r);
            }
            if !evidence.is_empty() {
                detail["evidence"] = serde_json::json!(evidence);
            }
            let message = with_evidence(&o.message, &evidence);
            raise(s, &o.kind, &o.unit.device, &o.severity, &message, detail).await?
        }
        Verdict::Shared(sh) => {
            let member_kind = sh.members.first().map(|m| m.kind.clone()).unwrap_or_default();
            let mut linked_faults = Vec::new();
            for u in &sh.linked {
                if let Some(f) = s.base.open_fault(&member_kind, &u.device).await? {
                    linked_faults.push(f.id);
                }
            }
            let members: Vec<serde_json::Value> =
                sh.members.iter().map(lifeline_engine::correlate::rebuild::member_record).collect();
            let mut detail = serde_json::json!({
                "source": "correlation",
                "component": sh.component,
                "score": sh.score,
                "members": members,
                "linked_faults": linked_faults,
            });
            if !evidence.is_empty() {
                detail["evidence"] = serde_json::json!(evidence);
            }
            let message = with_evidence(&sh.message, &evidence);
            let f = raise(s, &sh.kind, &sh.device, &sh.severity, &message, detail).await?;
            for u in &sh.added {
                let rail = u.rail.as_deref().map(|r| format!(" {r}")).unwrap_or_default();
                let _ = s
                    .base
                    .record_event(&NewEvent {
                        device: Some(u.device.clone()),
                        source: "correlation".into(),
                        severity: "info".into(),
                        message: format!(
                            "{member_kind}{rail} is a member of fault #{} {} on {} ({}): not raised or acted on alone",
                            f.id,
                            f.kind,
                            f.device,
                            sh.component.describe()
                        ),
                        data: serde_json::json!({ "fault": f.id, "member": u, "linked": sh.linked.contains(u) }),
                    })
                    .await;
            }
            f
        }
    };
    for offer in evidence.iter().filter_map(|e| e.restore.as_ref()) {
        offer_restore(s, &f, offer).await;
    }
    Ok(())
}
