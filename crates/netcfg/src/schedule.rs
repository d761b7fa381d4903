//! Backup schedules: a 5-field cron expression per device group, jitter, retry with backoff.
//!
//! Why jitter: 500 switches on `0 2 * * *` would all open SSH sessions in the same second and load
//! the jump host and the AAA servers; a deterministic per-group (or per-device) offset spreads them
//! and stays stable across restarts. Why `croner`: a maintained, POSIX/Vixie-compatible cron parser
//! with chrono support, rather than our own parser of a well-known format.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{expr}` is not a 5-field cron expression (minute hour day-of-month month day-of-week)")]
    Fields { expr: String },
    #[error("`{expr}` is not a valid cron expression")]
    Parse {
        expr: String,
        #[source]
        source: croner::errors::CronError,
    },
    #[error("`{expr}` never fires after {after}")]
    Never { expr: String, after: DateTime<Utc> },
}

#[derive(Debug, Clone)]
pub struct Schedule {
    expr: String,
    cron: Cron,
    /// Each run starts up to this much after the cron time.
    pub jitter: Duration,
}

impl Schedule {
    pub fn parse(expr: &str, jitter: Duration) -> Result<Schedule, ScheduleError> {
        let expr = expr.trim();
        let is_alias = expr.starts_with('@');
        if !is_alias && expr.split_whitespace().count() != 5 {
            return Err(ScheduleError::Fields { expr: expr.to_owned() });
        }
        let cron =
            Cron::from_str(expr).map_err(|source| ScheduleError::Parse { expr: expr.to_owned(), source })?;
        Ok(Schedule { expr: expr.to_owned(), cron, jitter })
    }

    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The first run strictly after `after`, delayed by a jitter derived from `jitter_seed` (e.g. the
    /// group or device name): the same seed always gets the same offset.
    pub fn next_run(&self, after: DateTime<Utc>, jitter_seed: &str) -> Result<DateTime<Utc>, ScheduleError> {
        let base = self
            .cron
            .find_next_occurrence(&after, false)
            .map_err(|_| ScheduleError::Never { expr: self.expr.clone(), after })?;
        Ok(base + jitter_for(jitter_seed, self.jitter))
    }
}

fn jitter_for(seed: &str, max: Duration) -> chrono::Duration {
    let ms = max.as_millis() as u64;
    if ms == 0 {
        return chrono::Duration::zero();
    }
    let h = Sha256::digest(seed.as_bytes());
    let v = u64::from_le_bytes(h[..8].try_into().expect("8 bytes"));
    chrono::Duration::milliseconds((v % ms) as i64)
}

/// Retry with exponential backoff, capped, with deterministic jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first.
    pub attempts: u32,
    pub base: Duration,
    pub max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { attempts: 3, base: Duration::from_secs(30), max: Duration::from_secs(600) }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt` (1-based; attempt 1 has none), or `None` when attempts are used
    /// up. Between `base*2^(n-2)` and 1.5x that, never above `max`.
    pub fn delay_before(&self, attempt: u32, seed: &str) -> Option<Duration> {
        if attempt <= 1 {
            return Some(Duration::ZERO);
        }
        if attempt > self.attempts {
            return None;
        }
        let exp = self.base.saturating_mul(1u32 << (attempt - 2).min(20));
        let half = exp / 2;
        let j = jitter_for(&format!("{seed}#{attempt}"), half).to_std().unwrap_or_default();
        Some((exp + j).min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[test]
    fn next_run_and_jitter() {
        let s = Schedule::parse("0 2 * * *", Duration::from_secs(600)).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 3, 1, 1, 0, 0).unwrap();
        let n = s.next_run(t, "leaf-group").unwrap();
        let base = Utc.with_ymd_and_hms(2026, 3, 1, 2, 0, 0).unwrap();
        assert!(n >= base && n < base + chrono::Duration::seconds(600), "{n}");
        assert_eq!(n, s.next_run(t, "leaf-group").unwrap(), "same seed, same time");
        assert_ne!(n, s.next_run(t, "spine-group").unwrap());
        // Strictly after: at exactly 02:00 the next run is tomorrow.
        let s0 = Schedule::parse("0 2 * * *", Duration::ZERO).unwrap();
        assert_eq!(s0.next_run(base, "x").unwrap(), base + chrono::Duration::days(1));
        let every15 = Schedule::parse("*/15 * * * *", Duration::ZERO).unwrap();
        assert_eq!(
            every15.next_run(Utc.with_ymd_and_hms(2026, 3, 1, 1, 7, 30).unwrap(), "x").unwrap(),
            Utc.with_ymd_and_hms(2026, 3, 1, 1, 15, 0).unwrap()
        );
        assert!(matches!(Schedule::parse("0 2 * *", Duration::ZERO), Err(ScheduleError::Fields { .. })));
        assert!(matches!(Schedule::parse("61 2 * * *", Duration::ZERO), Err(ScheduleError::Parse { .. })));
    }

    #[test]
    fn backoff() {
        let p = RetryPolicy { attempts: 4, base: Duration::from_secs(10), max: Duration::from_secs(25) };
        assert_eq!(p.delay_before(1, "x"), Some(Duration::ZERO));
        let d2 = p.delay_before(2, "x").unwrap();
        assert!(d2 >= Duration::from_secs(10) && d2 < Duration::from_secs(15));
        let d3 = p.delay_before(3, "x").unwrap();
        assert!(d3 >= Duration::from_secs(20) && d3 <= Duration::from_secs(25));
        assert_eq!(p.delay_before(4, "x"), Some(Duration::from_secs(25)));
        assert_eq!(p.delay_before(5, "x"), None);
    }

    proptest! {
        #[test]
        fn next_run_is_after_and_within_jitter(secs in 0i64..4_000_000_000, jitter in 0u64..3600, seed in "[a-z]{1,10}") {
            let s = Schedule::parse("*/5 * * * *", Duration::from_secs(jitter)).unwrap();
            let t = Utc.timestamp_opt(secs, 0).unwrap();
            let n = s.next_run(t, &seed).unwrap();
            prop_assert!(n > t);
            prop_assert!(n <= t + chrono::Duration::seconds(300 + jitter as i64));
        }
    }
}
