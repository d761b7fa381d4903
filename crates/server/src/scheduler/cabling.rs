//! The cabling check on an interval (`[server] cabling-interval`): the same engine operation as
//! `lifeline inventory verify-cabling` — every leaf's LLDP neighbours and the agents' reports of what each
//! NIC hears, against the inventory — raising and resolving `cabling` faults. A cable can be moved at any
//! time; without a schedule a swap is found only when someone thinks to look.
//!
//! With several replicas only the one preferred for the unit `cabling` runs it (each run reads every
//! leaf; two replicas reading them would only double the SSH sessions).

use std::time::Duration;

use crate::state::AppState;

/// The unit of work the replicas share.
const KEY: &str = "cabling";

/// The configured interval; `None` when unset, `0s` or unparsable (logged; `config check` says why).
pub fn interval(s: &AppState) -> Option<Duration> {
    let text = s.base.config.config.server.cabling_interval.clone()?;
    match humantime::parse_duration(&text) {
        Ok(d) if d.is_zero() => None,
        Ok(d) => Some(d.max(Duration::from_secs(1))),
        Err(e) => {
            tracing::warn!("[server] cabling-interval `{text}`: {e}; cabling checks not scheduled");
            None
        }
    }
}

pub async fn run_every(s: &AppState, every: Duration) {
    loop {
        if s.replica.prefers(KEY) {
            match s.base.verify_cabling().await {
                Ok(r) => {
                    // The engine wrote the records; what a new fault or a cleared one means for the fault
                    // policy, the webhooks and waiting runs is the server's, as for every other fault.
                    for id in &r.faults.opened {
                        match s.base.fault_record(*id).await {
                            Ok(Some(f)) => crate::faults::opened(s, &f).await,
                            Ok(None) => {}
                            Err(e) => tracing::warn!("cabling fault {id}: {}", e.chain()),
                        }
                    }
                    for device in &r.faults.resolved {
                        crate::runbooks::withdraw_for_resolved(s, "cabling", device).await;
                    }
                    if !r.clean() {
                        let unread = r.switches.iter().filter(|x| x.error.is_some()).count();
                        tracing::warn!(
                            "cabling: {} mismatch(es), {} node finding(s), {unread} switch(es) not read; \
                             fault raised on [{}], resolved on [{}]",
                            r.mismatches.len(),
                            r.nodes.findings.len(),
                            r.faults.raised.join(", "),
                            r.faults.resolved.join(", ")
                        );
                    } else if !r.faults.resolved.is_empty() {
                        tracing::info!(
                            "cabling: as described; fault resolved on [{}]",
                            r.faults.resolved.join(", ")
                        );
                    }
                }
                Err(e) => tracing::warn!("cabling check: {}", e.chain()),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = s.shutdown.cancelled() => return,
        }
    }
}
