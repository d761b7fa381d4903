//! BIOS drift on a schedule (`[server] bios-drift-interval`): every Redfish BMC's BIOS attributes read
//! against the `[[bios-profile]]` of its node's role (the engine's [`Lifeline::bios_read_drift`], the
//! same drift as `lifeline bios diff`), a few at once (`bios-drift-concurrency`), and each node's drift
//! kept in the store for `GET /api/v1/bios/drift` and the fleet view.
//!
//! With several replicas each interval's read is one unit of work (`bios-drift:SLOT`, the slot being the
//! interval's number since the epoch), claimed and finished in the store: the first replica to claim it
//! reads the whole fleet, the others find it done, and a replica that dies mid-read leaves it to be taken
//! over. Reads change nothing on the BMCs; the claim only spares them a second read.
//!
//! [`Lifeline::bios_read_drift`]: lifeline_engine::Lifeline::bios_read_drift

use std::time::Duration;

use lifeline_engine::EngineError;
use lifeline_engine::ops::bios::BiosProfile;

use crate::state::AppState;

/// What the server's problems list calls this job.
const PROBLEM: &str = "BIOS drift";
/// How long one BMC's BIOS read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The configured interval; `None` when off (the default, `0s`) or unparsable (reported as a problem).
pub fn interval(s: &AppState) -> Option<Duration> {
    let text = s.base.config.config.server.bios_drift_interval.clone()?;
    match humantime::parse_duration(&text) {
        Ok(d) if d.is_zero() => None,
        Ok(d) => Some(d.max(Duration::from_secs(1))),
        Err(e) => {
            s.problem(PROBLEM, &format!("[server] bios-drift-interval `{text}`: {e}; not read"));
            None
        }
    }
}

pub async fn run_every(s: AppState, every: Duration) {
    loop {
        if let Err(e) = read_once(&s, every).await {
            tracing::warn!("BIOS drift: {}", e.chain());
        }
        tokio::select! {
            _ = s.replica.nap(every) => {}
            _ = s.shutdown.cancelled() => break,
        }
    }
}

/// One interval's read, when this replica claims it: `Some(nodes read)`, `None` when another replica has
/// (or had) this interval's read or there is no profile.
pub async fn read_once(s: &AppState, every: Duration) -> Result<Option<usize>, EngineError> {
    let profile = match BiosProfile::from_config(&s.base.config) {
        Ok(Some(p)) => p,
        Ok(None) => {
            s.problem(
                PROBLEM,
                "[server] bios-drift-interval is set but there is no [[bios-profile]]; not read",
            );
            return Ok(None);
        }
        Err(e) => {
            s.problem(PROBLEM, &format!("{}; not read", e.chain()));
            return Ok(None);
        }
    };
    let slot = s.clock.now().timestamp_millis() / i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    let Some(lease) = s.replica.claim(&format!("bios-drift:{slot}")).await? else { return Ok(None) };
    let (sel, problems) = super::each_bmc(s, |_| true)?;
    if problems.is_empty() {
        s.clear_problem(PROBLEM);
    } else {
        s.problem(PROBLEM, &format!("{} BMC(s) not read: {}", problems.len(), problems.join("; ")));
    }
    let concurrency = s.base.config.config.server.bios_drift_concurrency.unwrap_or(8).max(1);
    let l = s.engine_as("scheduler");
    let reads = match l.bios_read_drift(&sel, &profile, concurrency, READ_TIMEOUT).await {
        Ok(r) => r,
        Err(e) => {
            lease.finish("failed").await;
            return Err(e);
        }
    };
    // The whole fleet was read: rows of nodes no longer in it (or IPMI-only now) go.
    let keep: Vec<String> = reads.iter().map(|r| r.target.clone()).collect();
    l.bios_drift_forget_others(&keep).await?;
    let drifted: Vec<&str> = reads
        .iter()
        .filter(|r| r.result.as_ref().is_ok_and(|d| !d.drift.is_empty()))
        .map(|r| r.target.as_str())
        .collect();
    let failed: Vec<String> =
        reads.iter().filter_map(|r| r.result.as_ref().err().map(|e| e.chain())).collect();
    tracing::info!(
        "BIOS drift: {} node(s) read, {} drifted{}, {} not read",
        reads.len() - failed.len(),
        drifted.len(),
        if drifted.is_empty() { String::new() } else { format!(" ({})", drifted.join(", ")) },
        failed.len()
    );
    for e in &failed {
        tracing::warn!("BIOS drift not read: {e}");
    }
    lease.finish("done").await;
    Ok(Some(reads.len()))
}
