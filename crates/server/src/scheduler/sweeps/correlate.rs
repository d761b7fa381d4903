//! The sweep's faults through correlation ([`lifeline_engine::correlate::sweep`]): one sweep's rows are
//! one batch, so N BMCs dark behind one OOB switch (or N power alerts on one PDU) become one fault on the
//! part, the members listed and none raised or acted on alone; the part's fault is resolved by the sweep
//! that reads every member clear again.

use crate::state::AppState;

/// The sweep rules for one whole sweep, through correlation: each row's clean reads resolve as before,
/// `gpu-missing` is raised per node, and the correlated kinds (`bmc-unreachable`, `health-critical`,
/// `sel-critical`) go to `c`, which decides them at once (the sweep is the whole batch): a node's own
/// fault, or one fault on the OOB switch, PDU or rack they share with the members listed and linked
/// ([`lifeline_engine::correlate::sweep`]). A shared sweep fault is resolved when this sweep read every
/// member clear of the member kind. Errors are logged per row and per verdict; the sweep goes on.
pub async fn from_sweep(
    s: &AppState,
    rows: &[lifeline_bmc::SweepRow],
    known: &crate::faults::Unresolved,
    c: &mut lifeline_engine::correlate::Correlator,
) {
    use lifeline_engine::correlate::sweep;
    let now = lifeline_store::now_ms();
    let mut cleared: std::collections::HashMap<String, Vec<&'static str>> = Default::default();
    for row in rows {
        let d = &row.name;
        let verdict = lifeline_engine::fault_rules::sweep_verdict(row, None);
        for kind in &verdict.clear {
            if known.contains(&((*kind).to_owned(), d.clone()))
                && let Err(e) = crate::faults::resolve(s, kind, d).await
            {
                tracing::warn!(bmc = %d, "fault rules: {}", e.chain());
            }
        }
        for f in verdict.raise {
            match sweep::observation(d, &f, now) {
                Some(o) => c.observe(o),
                None => {
                    if let Err(e) = crate::faults::raise(s, f.kind, d, f.severity, &f.message, f.detail).await
                    {
                        tracing::warn!(bmc = %d, "fault rules: {}", e.chain());
                    }
                }
            }
        }
        cleared.insert(d.clone(), verdict.clear);
    }
    for v in c.flush(now) {
        if let Err(e) = crate::faults::verdict(s, v, Vec::new()).await {
            tracing::warn!("sweep fault: {}", e.chain());
        }
    }
    // A shared sweep fault's own evidence: every member read again and clear of the member kind.
    // Read only when one is unresolved: most sweeps have none.
    if !known.iter().any(|(k, _)| sweep::member_kind(k).is_some()) {
        return;
    }
    for state in ["open", "acked"] {
        let faults = match s.store.faults(Some(state), 10_000_000).await {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("shared sweep faults: {e}");
                continue;
            }
        };
        for f in faults {
            let Some(member) = sweep::member_kind(&f.kind) else { continue };
            if sweep::members_cleared(&f.detail, &cleared) {
                c.close(member, &f.device);
                if let Err(e) = crate::faults::resolve(s, &f.kind, &f.device).await {
                    tracing::warn!(device = %f.device, "shared sweep fault: {}", e.chain());
                }
            }
        }
    }
}
