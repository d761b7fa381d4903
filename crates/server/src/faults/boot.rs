//! Console faults resolved by their own evidence going away: a clean boot seen on the same console after
//! the fault's line (a kernel start, then the multi-user target, no fault printed between;
//! `lifeline_engine::fault_rules::console::BootWatch`). Without it a panic raised from the console would
//! stay open forever, however well the node came back.

use lifeline_engine::fault_rules::console::{self as rules, BootWatch, CleanBoot};
use lifeline_engine::ops::event_log::NewEvent;

use crate::state::AppState;

/// Resolves every open or acknowledged console fault of `clean.device` whose evidence is older than the
/// clean boot's kernel start, with an event that names the boot's two lines.
pub async fn clean_boot(s: &AppState, clean: &CleanBoot) {
    for state in ["open", "acked"] {
        let faults = match s.base.faults_in(state).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(device = %clean.device, "clean boot: cannot list faults: {}", e.chain());
                continue;
            }
        };
        for f in faults.iter().filter(|f| f.device == clean.device) {
            let seen = rules::evidence_seen_ms(&f.detail, f.updated_at_ms);
            if rules::clears(&f.kind, seen, clean) {
                resolve(s, f.id, &f.kind, clean).await;
            }
        }
    }
}

/// A console fault just raised whose line is older than a clean boot already seen (the correlator held
/// the finding while the node rebooted cleanly): resolved at once.
pub async fn after_raise(s: &AppState, boots: &BootWatch, kind: &str, device: &str, seen_ms: i64) {
    let Some(clean) = boots.last_clean(device) else { return };
    if !rules::clears(kind, seen_ms, clean) {
        return;
    }
    match s.base.open_fault(kind, device).await {
        Ok(Some(f)) => resolve(s, f.id, kind, clean).await,
        Ok(None) => {}
        Err(e) => tracing::warn!(%device, "clean boot: cannot list faults: {}", e.chain()),
    }
}

async fn resolve(s: &AppState, id: i64, kind: &str, clean: &CleanBoot) {
    let device = &clean.device;
    if let Err(e) = super::resolve(s, kind, device).await {
        tracing::warn!(%device, "clean boot: resolving fault {id}: {}", e.chain());
        return;
    }
    let message = format!(
        "fault #{id} {kind} cleared: clean boot on the console (kernel started {}: {}; ready {}: {})",
        clean.kernel_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        clean.kernel.trim(),
        clean.ready_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        clean.ready.trim()
    );
    tracing::info!(%device, "{message}");
    let _ = s
        .base
        .record_event(&NewEvent {
            device: Some(device.clone()),
            source: "console".into(),
            severity: "info".into(),
            message,
            data: serde_json::json!({ "fault": id, "kind": kind, "clean_boot": clean }),
        })
        .await;
}
