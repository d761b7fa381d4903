//! A config change's restore, offered with the fault it explains: a run of its runbook on the switch (the
//! version before the change), created waiting for an operator's approval — never started without one.
//!
//! Offered once per answer: while a run of it waits or runs on the switch, and for the correlation window
//! (`[correlation] window`, 10 minutes by default) after one last moved (approved and done, failed,
//! rejected), no new offer is made. Without that window a restore that had just finished, or that an
//! operator had just rejected, was offered again by the next counters read or rail fault that carried the
//! same evidence.

use crate::state::AppState;

/// How long after an offered restore was answered no new offer of it is made: the correlation window.
pub fn quiet_window(s: &AppState) -> std::time::Duration {
    lifeline_engine::correlate::Settings::from_config(&s.base.config.config.correlation)
        .unwrap_or_default()
        .window
}

/// Offers `offer` for `fault` unless a run of it is active or was answered within [`quiet_window`].
pub async fn offer_restore(
    s: &AppState,
    fault: &lifeline_engine::ops::fault_records::FaultRow,
    offer: &lifeline_engine::switch_evidence::RestoreOffer,
) {
    let window = i64::try_from(quiet_window(s).as_millis()).unwrap_or(i64::MAX);
    let since = lifeline_engine::ops::runs::now_ms().saturating_sub(window);
    match s.base.offer_answered_since(&offer.switch, &offer.runbook, since).await {
        Ok(Some(r)) => {
            tracing::info!(switch = %offer.switch, run = %r.id, state = %r.state, "restore not offered again: run {} ({}) answers it", r.id, r.state);
            return;
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(switch = %offer.switch, "restore not offered: cannot list runs: {}", e.chain());
            return;
        }
    }
    let (rb, text) = match crate::runbooks::load(s, &offer.runbook) {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(switch = %offer.switch, "restore not offered: runbook {}: {}", offer.runbook, e.chain());
            return;
        }
    };
    let base = s.base.with_identity(lifeline_engine::Identity::new(crate::runbooks::POLICY_ACTOR));
    let opts = lifeline_runbook::RunOptions {
        vars: vec![("version".into(), offer.version.to_string())],
        cause: Some(lifeline_runbook::exec::Cause { fault: fault.id, kind: fault.kind.clone() }),
    };
    match crate::runbooks::admit(s, base, &rb, &text, &offer.switch, &opts, true).await {
        Ok(v) => {
            let _ = s
                .base
                .record_event(&lifeline_engine::ops::event_log::NewEvent {
                    device: Some(offer.switch.clone()),
                    source: "correlation".into(),
                    severity: "info".into(),
                    message: format!(
                        "fault #{} {}: restore of {} v{} offered as run {} ({}), waiting for approval",
                        fault.id, fault.kind, offer.switch, offer.version, v.run, v.state
                    ),
                    data: serde_json::json!({ "fault": fault.id, "run": v.run, "offer": offer }),
                })
                .await;
        }
        Err(e) => tracing::warn!(switch = %offer.switch, "restore not offered: {}", e.chain()),
    }
}
