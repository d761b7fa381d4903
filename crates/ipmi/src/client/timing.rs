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
    /// This policy for a BMC whose first reply took `observed` (from the first transmission): no attempt
    /// waits less than twice that, and the cap grows to four times it. Why: a BMC that answers every request
    /// in 1.5 s (a busy or throttled controller) answers them one after the other; retransmitting every
    /// 250 ms queues three duplicates behind each request, each costing it another 1.5 s, so the backlog
    /// outgrows every timeout and the BMC is never reached. A BMC that answers in milliseconds keeps the
    /// default schedule.
    pub fn adapted(&self, observed: Duration) -> Timing {
        let base = self.attempt_timeout.max(observed.saturating_mul(2));
        Timing {
            attempt_timeout: base,
            max_attempt_timeout: self.max_attempt_timeout.max(observed.saturating_mul(4)).max(base),
            attempts: self.attempts,
        }
    }

    /// How long before `elapsed` (from an exchange's first transmission to its accepted reply) the last
    /// transmission went out under this schedule: a lower bound of the BMC's reply time. Why not `elapsed`
    /// itself: on a lossy link a reply to the third transmission arrives 0.75 s after the first, yet the BMC
    /// answered in milliseconds; only a reply that comes long after the last transmission shows a slow BMC.
    pub fn since_last_send(&self, elapsed: Duration) -> Duration {
        let mut sent = Duration::ZERO;
        for i in 0..self.attempts.max(1) {
            let next = sent + self.attempt(i);
            if next > elapsed {
                break;
            }
            sent = next;
        }
        elapsed.saturating_sub(sent)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_bmc_stretches_the_schedule_and_a_fast_one_keeps_it() {
        let t = Timing::default();
        let fast = t.adapted(Duration::from_millis(5));
        assert_eq!(
            (fast.attempt_timeout, fast.max_attempt_timeout),
            (t.attempt_timeout, t.max_attempt_timeout)
        );
        let slow = t.adapted(Duration::from_millis(1500));
        assert_eq!(slow.attempt(0), Duration::from_secs(3));
        assert_eq!(slow.attempt(5), Duration::from_secs(6));
        assert!(slow.budget() > Duration::from_secs(50));
    }

    #[test]
    fn only_a_reply_long_after_the_last_transmission_counts_as_slow() {
        let t = Timing::default();
        // Transmissions at 0, 0.25, 0.75, 1.75 s: a reply at 0.76 s answered the third at once.
        assert_eq!(t.since_last_send(Duration::from_millis(760)), Duration::from_millis(10));
        // A reply at 1.5 s came 0.75 s after the last transmission: the BMC takes at least that.
        assert_eq!(t.since_last_send(Duration::from_millis(1500)), Duration::from_millis(750));
        assert_eq!(t.since_last_send(Duration::from_millis(40)), Duration::from_millis(40));
    }
}
