//! The fault policy: when a fault opens, the `[[fault-policy]]` entries of the configuration decide which
//! runbook answers it and how (`auto`: run now, `approve`: queue for an operator, `notify`: tell people
//! only). The decision is recorded as a `policy` event (with the fault id), so what the server would do —
//! or did — is visible even before anything acts on it.
//!
//! An entry with a `ladder` answers the N-th fault of a device within its `attempt-window` with the N-th
//! rung and, past the last, calls a human ([`lifeline_engine::budget`]); the rung and why it was chosen are
//! recorded in the decision and audited (`policy.escalate`).
//!
//! Acting is the [`FaultResponder`]'s job: the server ships [`RecordOnly`], which acts on nothing; the
//! runbook executor implements the trait (start the run under the blast-radius guard, or queue it for
//! approval) and is installed with [`crate::AppState::set_responder`].

use std::sync::Arc;

use futures::future::BoxFuture;
use lifeline_engine::ops::event_log::NewEvent;
use lifeline_engine::ops::fault_records::FaultRow;
use lifeline_engine::{EngineError, FaultPolicy, PolicyMode};
use lifeline_inventory::Inventory;
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::state::AppState;

/// What the policy says to do about one fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Start the runbook now.
    Run,
    /// Queue the runbook until an operator approves it.
    AwaitApproval,
    /// Run nothing; notifications only.
    Notify,
}

/// The decision for one fault, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub fault: i64,
    pub kind: String,
    pub device: String,
    pub runbook: Option<String>,
    pub mode: PolicyMode,
    pub action: Action,
    /// 0-based index of the `[[fault-policy]]` entry that matched; `None`: no entry did.
    pub rule: Option<usize>,
    /// The runbook's variables (a ladder rung's `vars`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub vars: std::collections::BTreeMap<String, String>,
    /// The ladder's choice for this fault and why, when the entry has a ladder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rung: Option<lifeline_engine::budget::Rung>,
}

/// What the responder did with a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Response {
    /// `recorded` (nothing acted), `started`, `queued`, `notified`, `refused`, `linked` (a run already
    /// answers the device).
    pub state: String,
    /// e.g. the runbook run's id, or why it was refused (blast-radius guard).
    pub detail: serde_json::Value,
}

/// Carries a decision out. The runbook executor implements this; errors are recorded, never retried here.
pub trait FaultResponder: Send + Sync + std::fmt::Debug {
    fn respond<'a>(
        &'a self,
        state: &'a AppState,
        fault: &'a FaultRow,
        decision: &'a Decision,
    ) -> BoxFuture<'a, Result<Response, EngineError>>;
}

/// The responder until runbooks are wired in: records the decision and acts on nothing.
#[derive(Debug, Default)]
pub struct RecordOnly;

impl FaultResponder for RecordOnly {
    fn respond<'a>(
        &'a self,
        _: &'a AppState,
        _: &'a FaultRow,
        d: &'a Decision,
    ) -> BoxFuture<'a, Result<Response, EngineError>> {
        let why = match d.action {
            Action::Notify => "notify only",
            _ => "no runbook executor in this server yet",
        };
        Box::pin(async move { Ok(Response { state: "recorded".into(), detail: serde_json::json!(why) }) })
    }
}

/// The first `[[fault-policy]]` entry whose kind (or `*`) and targets match the fault. A shared fault
/// (`shared-<kind>`, recorded on an OOB switch, a leaf, `rack:NAME`, `pdu:NAME`) is matched only by an
/// entry naming its kind: `*` is written with node runbooks in mind, and a node's runbook on the part
/// several nodes share is never the answer.
pub fn decide(policies: &[FaultPolicy], inv: Option<&Inventory>, fault: &FaultRow) -> Decision {
    let shared = fault.kind.starts_with(SHARED_PREFIX);
    let matched = policies.iter().enumerate().find(|(_, p)| {
        (p.kind == fault.kind || (p.kind == "*" && !shared))
            && (p.targets.is_empty()
                || inv.is_some_and(|inv| {
                    lifeline_inventory::select(inv, &p.targets)
                        .is_ok_and(|ds| ds.iter().any(|d| d.name.as_str() == fault.device))
                }))
    });
    let (rule, runbook, mode) = match matched {
        // A ladder's first rung until `apply` has counted the device's earlier attempts.
        Some((i, p)) => {
            (Some(i), p.runbook.clone().or_else(|| p.ladder.first().map(|r| r.runbook.clone())), p.mode)
        }
        None => (None, None, PolicyMode::Notify),
    };
    let action = match (runbook.is_some(), mode) {
        (true, PolicyMode::Auto) => Action::Run,
        (true, PolicyMode::Approve) => Action::AwaitApproval,
        _ => Action::Notify,
    };
    Decision {
        fault: fault.id,
        kind: fault.kind.clone(),
        device: fault.device.clone(),
        runbook,
        mode: if action == Action::Notify { PolicyMode::Notify } else { mode },
        action,
        rule,
        vars: Default::default(),
        rung: None,
    }
}

/// The kind prefix of a fault raised on the part several devices share (`lifeline_engine::correlate`).
const SHARED_PREFIX: &str = "shared-";

/// Why a human is called for a shared fault no entry answers with a runbook (`None` for other faults).
fn shared_without_runbook(d: &Decision, fault: &FaultRow) -> Option<String> {
    if !fault.kind.starts_with(SHARED_PREFIX) || d.runbook.is_some() {
        return None;
    }
    let members = fault.detail.get("members").and_then(|m| m.as_array()).map_or(0, Vec::len);
    Some(format!(
        "escalated to a human: no [[fault-policy]] runbook for {} on {} ({members} member(s), none acted on alone)",
        fault.kind, fault.device
    ))
}

/// Applies the matched entry's ladder, if it has one: counts the device's earlier policy runs within the
/// window and picks the rung (or a human), auditing the choice and why.
async fn climb(s: &AppState, d: &mut Decision) -> Result<(), EngineError> {
    let Some(p) = d.rule.and_then(|i| s.base.config.config.fault_policy.get(i)) else { return Ok(()) };
    if p.ladder.is_empty() {
        return Ok(());
    }
    let window = lifeline_engine::budget::window(p)?;
    let prior = s.base.attempts_by(crate::runbooks::POLICY_ACTOR, &d.device).await?;
    let now = lifeline_engine::ops::runs::now_ms();
    let Some(rung) = lifeline_engine::budget::next_rung(p, &prior, now, window) else {
        return Ok(());
    };
    match &rung {
        lifeline_engine::budget::Rung::Run { runbook, vars, .. } => {
            d.runbook = Some(runbook.clone());
            d.vars = vars.clone();
        }
        lifeline_engine::budget::Rung::Human { .. } => {
            d.runbook = None;
            d.action = Action::Notify;
            d.mode = PolicyMode::Notify;
        }
    }
    let audit =
        s.base.with_identity(lifeline_engine::Identity::new(crate::runbooks::POLICY_ACTOR)).audit().await?;
    audit
        .record(
            AuditAction::PolicyEscalate,
            &d.device,
            lifeline_engine::Outcome::Ok,
            None,
            serde_json::json!({ "fault": d.fault, "kind": d.kind, "rung": rung }),
        )
        .await?;
    d.rung = Some(rung);
    Ok(())
}

/// Decides for a newly opened fault, hands the decision to the responder, and records both as one
/// `policy` event. Never fails the caller: a fault record matters more than its follow-up.
pub async fn apply(s: &AppState, fault: &FaultRow) -> Decision {
    let inv = s.base.inventory().ok();
    let mut d = decide(&s.base.config.config.fault_policy, inv.as_deref(), fault);
    if let Err(e) = climb(s, &mut d).await {
        // Without the count the ladder cannot be climbed safely: nothing runs, a human is told.
        tracing::warn!(fault = fault.id, "attempt budget: {}", e.chain());
        d.runbook = None;
        d.action = Action::Notify;
        d.mode = PolicyMode::Notify;
    }
    let responder: Arc<dyn FaultResponder> = s.responder();
    let response = match responder.respond(s, fault, &d).await {
        Ok(r) => r,
        Err(e) => Response { state: "failed".into(), detail: serde_json::json!(e.chain()) },
    };
    let what = match (&d.runbook, d.action) {
        (Some(rb), Action::Run) => format!("run runbook {rb} (auto)"),
        (Some(rb), Action::AwaitApproval) => format!("runbook {rb} awaits approval"),
        _ => match (&d.rung, shared_without_runbook(&d, fault)) {
            (Some(lifeline_engine::budget::Rung::Human { why }), _) => format!("notify: {why}"),
            (None, Some(why)) => format!("notify: {why}"),
            _ => "notify".to_owned(),
        },
    };
    let message = format!(
        "fault #{} {} on {}: policy: {what} [{}]",
        fault.id, fault.kind, fault.device, response.state
    );
    tracing::info!(fault = fault.id, "{message}");
    let _ = s
        .base
        .record_event(&NewEvent {
            device: Some(fault.device.clone()),
            source: "policy".into(),
            severity: fault.severity.clone(),
            message,
            data: serde_json::json!({ "fault": fault.id, "decision": d, "response": response }),
        })
        .await;
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: &str, device: &str) -> FaultRow {
        FaultRow {
            id: 7,
            kind: kind.into(),
            device: device.into(),
            severity: "critical".into(),
            state: "open".into(),
            message: String::new(),
            detail: serde_json::Value::Null,
            count: 1,
            opened_at_ms: 0,
            updated_at_ms: 0,
            acked_by: None,
            acked_at_ms: None,
        }
    }

    fn p(kind: &str, runbook: Option<&str>, mode: PolicyMode) -> FaultPolicy {
        FaultPolicy {
            kind: kind.into(),
            targets: vec![],
            runbook: runbook.map(Into::into),
            mode,
            ladder: vec![],
            attempt_window: None,
        }
    }

    #[test]
    fn first_matching_entry_wins_and_wildcard_catches_the_rest() {
        let ps = [
            p("health-critical", Some("recover"), PolicyMode::Auto),
            p("bmc-unreachable", Some("bmc-reset"), PolicyMode::Approve),
            p("*", None, PolicyMode::Auto),
        ];
        let d = decide(&ps, None, &fault("health-critical", "n1"));
        assert_eq!((d.action, d.runbook.as_deref(), d.rule), (Action::Run, Some("recover"), Some(0)));
        let d = decide(&ps, None, &fault("bmc-unreachable", "n1"));
        assert_eq!((d.action, d.mode), (Action::AwaitApproval, PolicyMode::Approve));
        // A match without a runbook only notifies, whatever its mode says.
        let d = decide(&ps, None, &fault("sel-critical", "n1"));
        assert_eq!((d.action, d.mode, d.rule), (Action::Notify, PolicyMode::Notify, Some(2)));
        let d = decide(&[], None, &fault("sel-critical", "n1"));
        assert_eq!((d.action, d.rule), (Action::Notify, None));
    }

    #[test]
    fn a_shared_fault_is_answered_only_by_an_entry_naming_its_kind() {
        let ps = [p("*", Some("bmc-unreachable"), PolicyMode::Auto)];
        let mut f = fault("shared-bmc-unreachable", "oob-sw-01");
        f.detail = serde_json::json!({ "members": [{ "device": "n1" }, { "device": "n2" }] });
        let d = decide(&ps, None, &f);
        assert_eq!((d.action, d.runbook.as_deref(), d.rule), (Action::Notify, None, None));
        assert_eq!(
            shared_without_runbook(&d, &f).as_deref(),
            Some(
                "escalated to a human: no [[fault-policy]] runbook for shared-bmc-unreachable on oob-sw-01 \
                 (2 member(s), none acted on alone)"
            )
        );
        // The node's own fault still takes the wildcard; the shared kind named takes its runbook.
        assert_eq!(decide(&ps, None, &fault("bmc-unreachable", "n1")).action, Action::Run);
        assert_eq!(shared_without_runbook(&decide(&ps, None, &fault("bmc-unreachable", "n1")), &f), None);
        let ps = [p("shared-bmc-unreachable", Some("oob-switch-recover"), PolicyMode::Approve)];
        let d = decide(&ps, None, &f);
        assert_eq!((d.action, d.runbook.as_deref()), (Action::AwaitApproval, Some("oob-switch-recover")));
        assert_eq!(shared_without_runbook(&d, &f), None);
    }

    #[test]
    fn targets_need_the_inventory_to_match() {
        let mut e = p("health-critical", Some("recover"), PolicyMode::Auto);
        e.targets = vec!["gpu".into()];
        let d = decide(&[e], None, &fault("health-critical", "n1"));
        assert_eq!(d.action, Action::Notify, "no inventory: a targeted entry cannot match");
    }
}
