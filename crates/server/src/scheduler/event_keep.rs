//! Push subscriptions that stay: once a BMC is subscribed to this replica's receiver, its subscriptions
//! are listed on a schedule (`[server] event-check-interval`) and Lifeline's is made again when it is gone.
//!
//! Why listing and not trusting the create: iDRAC and iLO drop every subscription on a BMC reset or a
//! firmware update, and nothing tells the subscriber; events simply stop. The BMC's own list is the
//! truth. A check that fails (the BMC restarting, unreachable) is retried within seconds, so the first
//! check after it answers again re-creates the subscription: recovery from a reset costs one short retry,
//! not a whole interval. Where the BMC sends heartbeats (`SendHeartbeat`), silence for twice the interval
//! plus one check means the subscription (or the path from the BMC) is gone even if it is still listed,
//! and it is replaced. Every change is audited by the engine (`bmc.resubscribe`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lifeline_engine::{BmcSelection, SelectedBmc};

use crate::state::AppState;

/// The check interval when `[server] event-check-interval` is not set.
pub const DEFAULT_CHECK: Duration = Duration::from_secs(60);
/// Heartbeat minutes asked for when `[server] event-heartbeat-minutes` is not set.
pub const DEFAULT_HEARTBEAT_MINUTES: u32 = 5;
/// The first retry after a failed check; doubled up to the check interval.
const RETRY: Duration = Duration::from_secs(2);

/// When each device's last authenticated delivery arrived (any event, heartbeats included).
#[derive(Debug, Default)]
pub struct Deliveries(Mutex<HashMap<String, Instant>>);

impl Deliveries {
    pub fn seen(&self, device: &str) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(device.to_owned(), Instant::now());
    }

    fn last(&self, device: &str) -> Option<Instant> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(device).copied()
    }
}

/// The schedule from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub check: Duration,
    /// Minutes between heartbeats to ask for (`None`: none).
    pub heartbeat: Option<u32>,
}

impl Schedule {
    pub fn from_config(s: &AppState) -> Schedule {
        let server = &s.base.config.config.server;
        let check = server
            .event_check_interval
            .as_deref()
            .and_then(|t| humantime::parse_duration(t).ok())
            .filter(|d| *d >= Duration::from_secs(1))
            .unwrap_or(DEFAULT_CHECK);
        let heartbeat = match server.event_heartbeat_minutes.unwrap_or(DEFAULT_HEARTBEAT_MINUTES) {
            0 => None,
            m => Some(m),
        };
        Schedule { check, heartbeat }
    }
}

/// Whether a subscription that the BMC says sends a heartbeat every `minutes` has been silent too long:
/// nothing since `since` (its creation or the last delivery) for twice the interval plus one check.
pub fn heartbeat_lost(minutes: Option<u64>, since: Instant, check: Duration, now: Instant) -> bool {
    minutes.is_some_and(|m| now.saturating_duration_since(since) > Duration::from_secs(120 * m) + check)
}

/// Subscribes `b` to `destination` (retried until the BMC accepts it: a first check that finds none makes
/// it) and keeps it so for as long as this task runs (its owner aborts it on a hand-over).
pub async fn keep(s: AppState, b: SelectedBmc, destination: String, seen: Arc<Deliveries>, plan: Schedule) {
    let one = BmcSelection { bmcs: vec![b.clone()], skipped: Vec::new() };
    let name = b.name().to_owned();
    // Since when heartbeats are owed: the subscription's creation, moved on by every delivery.
    let mut since = Instant::now();
    let mut heartbeat: Option<u64> = None;
    let mut pause = Duration::ZERO;
    let mut first = true;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = s.shutdown.cancelled() => return,
        }
        if let Some(t) = seen.last(&name) {
            since = since.max(t);
        }
        let renew = heartbeat_lost(heartbeat, since, plan.check, Instant::now());
        if renew {
            tracing::warn!(bmc = %name, minutes = heartbeat, "no heartbeat from the BMC: making its subscription again");
        }
        let result = s
            .engine_as("server")
            .bmc_keep_subscription(&one, &destination, plan.heartbeat, renew, first)
            .await;
        let check = match result.map(|mut rows| rows.pop().map(|r| r.result)) {
            Ok(Some(Ok(c))) => c,
            Ok(Some(Err(e))) => {
                tracing::debug!(bmc = %name, "subscription check failed (retrying): {}", e.chain());
                pause = (pause * 2).clamp(RETRY, plan.check);
                continue;
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(bmc = %name, "subscription check: {}", e.chain());
                pause = (pause * 2).clamp(RETRY, plan.check);
                continue;
            }
        };
        if first {
            tracing::info!(bmc = %name, created = ?check.created, kept = ?check.kept, "subscribed to BMC events");
        } else if let Some(link) = &check.created {
            tracing::info!(
                bmc = %name, %link, reason = check.reason.as_deref().unwrap_or(""),
                "event subscription made again"
            );
            since = Instant::now();
        }
        heartbeat = check.heartbeat_minutes;
        first = false;
        pause = plan.check;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_past_twice_the_heartbeat_and_one_check_is_a_lost_subscription() {
        let t0 = Instant::now();
        let check = Duration::from_secs(60);
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert!(!heartbeat_lost(None, t0, check, at(86_400)), "no heartbeat offered: never lost by silence");
        assert!(!heartbeat_lost(Some(5), t0, check, at(600)));
        assert!(!heartbeat_lost(Some(5), t0, check, at(660)));
        assert!(heartbeat_lost(Some(5), t0, check, at(661)));
        assert!(!heartbeat_lost(Some(5), at(100), check, at(661)), "a delivery moves the clock on");
    }
}
