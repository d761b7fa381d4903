//! Shared console faults (`shared-rail-down`, `shared-console-*`) resolved by their members' own evidence:
//! each member's rail seen up, or a clean boot, on its own console (`lifeline_engine::correlate::clearing`).
//! Without it a leaf blamed for a rail down would stay open however well every rail came back. A member's
//! evidence is recorded as it arrives (so a partial set is visible and stays open); the fault is resolved
//! when every member's is in, with the evidence named in the event.

use lifeline_engine::correlate::Correlator;
use lifeline_engine::correlate::clearing::{self, Ledger, MemberCleared};
use lifeline_engine::ops::event_log::NewEvent;

use crate::state::AppState;

/// After clearing evidence on `device` (`note`: what it was, for the partial case) or a shared verdict
/// with a member there: resolves every shared console fault with a member on `device` whose members are
/// all proven clear, and records a member's evidence on one that stays open.
pub async fn check(s: &AppState, c: &mut Correlator, ledger: &Ledger, device: &str, note: bool) {
    let found = match s.base.shared_console_progress(ledger, device).await {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(%device, "shared console faults: {}", e.chain());
            return;
        }
    };
    for (f, p) in found {
        if p.all() {
            if let Err(e) = super::resolve(s, &f.kind, &f.device).await {
                tracing::warn!(device = %f.device, "resolving shared fault {}: {}", f.id, e.chain());
                continue;
            }
            if let Some(member) = clearing::member_kind(&f.kind) {
                c.close(member, &f.device);
            }
            let said: Vec<String> = p.cleared.iter().map(words).collect();
            let message = format!(
                "fault #{} {} on {} resolved: every member's own evidence is gone ({} of {}): {}",
                f.id,
                f.kind,
                f.device,
                p.cleared.len(),
                p.members,
                said.join("; ")
            );
            tracing::info!(device = %f.device, "{message}");
            event(
                s,
                &f.device,
                message,
                serde_json::json!({ "fault": f.id, "kind": f.kind, "cleared_by": p.cleared }),
            )
            .await;
        } else if note && let Some(m) = p.cleared.iter().find(|m| m.device == device) {
            let message = format!(
                "member {} of fault #{} {} on {}: {}; {} of {} members clear, the fault stays open",
                member_name(m),
                f.id,
                f.kind,
                f.device,
                words(m),
                p.cleared.len(),
                p.members
            );
            event(s, device, message, serde_json::json!({ "fault": f.id, "kind": f.kind, "member": m }))
                .await;
        }
    }
}

fn member_name(m: &MemberCleared) -> String {
    match &m.rail {
        Some(r) => format!("{} {r}", m.device),
        None => m.device.clone(),
    }
}

fn words(m: &MemberCleared) -> String {
    format!("{} {} seen on its console ({})", member_name(m), m.by, m.evidence)
}

async fn event(s: &AppState, device: &str, message: String, data: serde_json::Value) {
    let _ = s
        .base
        .record_event(&NewEvent {
            device: Some(device.to_owned()),
            source: "correlation".into(),
            severity: "info".into(),
            message,
            data,
        })
        .await;
}
