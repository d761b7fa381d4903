//! How long to wait for a BMC and how to tell a lossy link: the retransmission policy every request
//! follows, and the statistics a session keeps of what its answered requests cost.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Retransmission policy: attempt `i` waits `attempt_timeout * 2^i`, capped at `max_attempt_timeout`.
#[derive(Debug, Clone)]
pub struct Timing {
    pub attempt_timeout: Duration,
    pub max_attempt_timeout: Duration,
    pub attempts: u32,
}

impl Default for Timing {
    /// Tuned for a lossy 1G OOB network: a BMC answers in milliseconds when the datagram arrives, so
    /// retransmit early and often (about 1 % of requests fail outright at 30 % loss each way, against 3–4 %
    /// with 5 attempts), and stop after ~8 s so a dead BMC is reported in reasonable time. Late replies to
    /// an earlier attempt are still accepted.
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_millis(250),
            max_attempt_timeout: Duration::from_secs(1),
            attempts: 10,
        }
    }
}

impl Timing {
    /// Upper bound of the time one request may take.
    pub fn budget(&self) -> Duration {
        (0..self.attempts).map(|i| self.attempt(i)).sum()
    }
    pub(crate) fn attempt(&self, i: u32) -> Duration {
        self.attempt_timeout.saturating_mul(1 << i.min(16)).min(self.max_attempt_timeout)
    }
}

/// Requests of a session that were answered, and the transmissions they took: on a clean link the two are
/// equal; at 30 % loss each way about two transmissions answer one request. Requests never answered are not
/// counted, so a BMC that went silent does not look like a lossy link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub answered: u32,
    pub transmissions: u32,
}

impl LinkStats {
    /// Transmissions per answered request (1.0 on a clean link; `None` before a few requests were answered).
    pub fn transmissions_per_request(&self) -> Option<f64> {
        (self.answered >= 3).then(|| f64::from(self.transmissions) / f64::from(self.answered))
    }
}

/// The live counters behind [`LinkStats`], shared so that a caller can watch a session's link while a
/// long read runs on it.
#[derive(Debug, Default)]
pub struct LinkCounters {
    answered: AtomicU32,
    transmissions: AtomicU32,
}

impl LinkCounters {
    pub fn snapshot(&self) -> LinkStats {
        LinkStats {
            answered: self.answered.load(Ordering::Relaxed),
            transmissions: self.transmissions.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn record(&self, transmissions: u32) {
        self.answered.fetch_add(1, Ordering::Relaxed);
        self.transmissions.fetch_add(transmissions, Ordering::Relaxed);
    }
}
