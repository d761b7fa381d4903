//! Failed logins, bounded in time and in storage.
//!
//! Lockout is per (user, source), the rule common identity providers use: failures from one address back
//! that address off for that user only — exponentially, from 30 s after the fifth failure up to 15 min —
//! and the right password still works for the same user from an address that has not failed (an attacker
//! cannot lock an operator out from elsewhere). Behind the documented `ssh -L` every browser comes from
//! 127.0.0.1, so a lockout of the whole address would let one user lock out all.
//!
//! Refused attempts are audited without letting an attacker fill the disk: the first refusal from a source
//! in a window is written at once; the rest of that window's refusals from that source are folded into
//! one summary row with a count, written when the window ends — at most two rows per source per window,
//! whatever the rate. User names in refused rows are kept only when they are valid names, else replaced
//! by their length. Memory is bounded too: at most [`MAX_KEYS`] entries, the stalest forgotten first.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{ApiError, ApiResult};

/// Failures from one source for one user before back-off begins.
const FREE_FAILURES: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// A (user, source) with no failure for this long starts again from zero.
const FORGET_AFTER: Duration = Duration::from_secs(60 * 60);
/// The audit window of refused attempts per source.
pub const AUDIT_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Entries kept in each table.
const MAX_KEYS: usize = 10_000;
/// Distinct user names listed in one summary row.
const MAX_NAMES: usize = 8;

/// The user name as kept in keys and audit rows: itself when valid, else only its length.
pub fn user_label(user: &str) -> String {
    if crate::accounts::valid_username(user) {
        user.to_owned()
    } else {
        format!("(invalid name, {} bytes)", user.len())
    }
}

/// A source as keyed: IPv6 by its /64 (one host holds a whole /64).
fn source_key(addr: Option<IpAddr>) -> Option<IpAddr> {
    addr.map(|a| match a.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    })
}

#[derive(Debug)]
struct Failures {
    count: u32,
    last: Instant,
    until: Option<Instant>,
}

/// Lockout per (user, source) with exponential back-off.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    entries: Mutex<HashMap<(String, Option<IpAddr>), Failures>>,
}

impl LoginLimiter {
    /// Refused while this (user, source) backs off.
    pub fn check(&self, user: &str, addr: Option<IpAddr>) -> ApiResult<()> {
        let key = (user_label(user), source_key(addr));
        let e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(until) = e.get(&key).and_then(|f| f.until)
            && until > now
        {
            return Err(ApiError::RateLimited {
                key: format!("user {} from {}", key.0, addr.map(|a| a.to_string()).unwrap_or_default()),
                retry_after_s: (until - now).as_secs().max(1),
            });
        }
        Ok(())
    }

    pub fn failed(&self, user: &str, addr: Option<IpAddr>) {
        let key = (user_label(user), source_key(addr));
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if e.len() >= MAX_KEYS && !e.contains_key(&key) {
            e.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER || f.until.is_some_and(|u| u > now));
            if e.len() >= MAX_KEYS
                && let Some(oldest) = e.iter().min_by_key(|(_, f)| f.last).map(|(k, _)| k.clone())
            {
                e.remove(&oldest);
            }
        }
        let f = e.entry(key).or_insert(Failures { count: 0, last: now, until: None });
        if now.duration_since(f.last) >= FORGET_AFTER {
            f.count = 0;
        }
        f.count += 1;
        f.last = now;
        if f.count > FREE_FAILURES {
            let doublings = (f.count - FREE_FAILURES - 1).min(16);
            f.until = Some(now + (FIRST_BACKOFF * 2u32.pow(doublings)).min(MAX_BACKOFF));
        }
    }

    pub fn succeeded(&self, user: &str, addr: Option<IpAddr>) {
        let key = (user_label(user), source_key(addr));
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    }
}

/// One source's refused attempts in the current window.
#[derive(Debug)]
struct Window {
    started: Instant,
    started_at: chrono::DateTime<chrono::Utc>,
    /// Refusals after the first (which was written at once).
    folded: u64,
    users: BTreeSet<String>,
    reasons: std::collections::BTreeMap<&'static str, u64>,
}

/// A refused-login audit row to write: its detail.
pub type RefusalRow = serde_json::Value;

/// Refused attempts folded per source per [`AUDIT_WINDOW`].
#[derive(Debug, Default)]
pub struct RefusedLogins {
    windows: Mutex<HashMap<Option<IpAddr>, Window>>,
}

impl RefusedLogins {
    /// Notes one refused attempt; returns the rows to write now (a summary of the source's window that
    /// ended, and this attempt's row when it opens a window).
    pub fn refused(&self, addr: Option<IpAddr>, user: &str, reason: &'static str) -> Vec<RefusalRow> {
        let key = source_key(addr);
        let now = Instant::now();
        let mut out = Vec::new();
        let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if w.get(&key).is_some_and(|x| now.duration_since(x.started) >= AUDIT_WINDOW)
            && let Some(old) = w.remove(&key)
        {
            out.extend(summary(addr, old));
        }
        if w.len() >= MAX_KEYS && !w.contains_key(&key) {
            // Full: write every window out now rather than forget what they counted.
            for (k, old) in w.drain() {
                out.extend(summary(k, old));
            }
        }
        match w.get_mut(&key) {
            Some(x) => {
                x.folded += 1;
                *x.reasons.entry(reason).or_default() += 1;
                if x.users.len() < MAX_NAMES {
                    x.users.insert(user_label(user));
                }
            }
            None => {
                w.insert(
                    key,
                    Window {
                        started: now,
                        started_at: chrono::Utc::now(),
                        folded: 0,
                        users: BTreeSet::new(),
                        reasons: Default::default(),
                    },
                );
                out.push(serde_json::json!({ "from": addr, "user": user_label(user), "error": reason, "count": 1 }));
            }
        }
        out
    }

    /// The summaries of windows that ended (every window with `all`, at shutdown).
    pub fn due(&self, all: bool) -> Vec<RefusalRow> {
        let now = Instant::now();
        let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let ended: Vec<Option<IpAddr>> = w
            .iter()
            .filter(|(_, x)| all || now.duration_since(x.started) >= AUDIT_WINDOW)
            .map(|(k, _)| *k)
            .collect();
        ended.into_iter().filter_map(|k| w.remove(&k).and_then(|x| summary(k, x))).collect()
    }
}

/// The summary row of a window, when it folded any refusal.
fn summary(addr: Option<IpAddr>, w: Window) -> Option<RefusalRow> {
    (w.folded > 0).then(|| {
        serde_json::json!({
            "from": addr,
            "count": w.folded,
            "users": w.users,
            "errors": w.reasons,
            "window_start": w.started_at,
            "window_end": chrono::Utc::now(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_is_per_user_and_source_and_grows() {
        let l = LoginLimiter::default();
        let a: Option<IpAddr> = "10.0.0.1".parse().ok();
        let b: Option<IpAddr> = "10.0.0.2".parse().ok();
        for _ in 0..FREE_FAILURES {
            assert!(l.check("bob", a).is_ok());
            l.failed("bob", a);
        }
        assert!(l.check("bob", a).is_ok(), "four failures are free");
        l.failed("bob", a);
        let retry = |r: ApiResult<()>| match r {
            Err(ApiError::RateLimited { retry_after_s, .. }) => retry_after_s,
            other => panic!("{other:?}"),
        };
        let first = retry(l.check("bob", a));
        assert!((29..=30).contains(&first), "{first}");
        l.failed("bob", a);
        let second = retry(l.check("bob", a));
        assert!((59..=60).contains(&second), "{second}");
        // The same user from another address, and another user from the same address, are not held up.
        assert!(l.check("bob", b).is_ok());
        assert!(l.check("carol", a).is_ok());
        for _ in 0..20 {
            l.failed("bob", a);
        }
        assert!(retry(l.check("bob", a)) <= MAX_BACKOFF.as_secs());
        l.succeeded("bob", a);
        assert!(l.check("bob", a).is_ok());
    }

    #[test]
    fn keys_stay_small_and_bounded() {
        let l = LoginLimiter::default();
        let huge = "x".repeat(1 << 20);
        l.failed(&huge, None);
        let e = l.entries.lock().unwrap();
        assert!(e.keys().all(|(u, _)| u.len() < 64), "the 1 MiB name is not kept");
        drop(e);
        for i in 0..(MAX_KEYS + 10) {
            l.failed(&format!("u{i}"), None);
        }
        assert!(l.entries.lock().unwrap().len() <= MAX_KEYS);
    }

    #[test]
    fn refusals_fold_into_one_row_per_source_per_window() {
        let r = RefusedLogins::default();
        let a: Option<IpAddr> = "10.0.0.1".parse().ok();
        let mut rows = Vec::new();
        for i in 0..100 {
            rows.extend(r.refused(a, &format!("user{}", i % 3), "wrong password"));
        }
        rows.extend(r.refused("10.0.0.2".parse().ok(), "bob", "wrong password"));
        assert_eq!(rows.len(), 2, "the first of each source at once: {rows:?}");
        let due = r.due(true);
        assert_eq!(due.len(), 1, "{due:?}");
        assert_eq!(due[0]["count"], 99);
        assert_eq!(due[0]["users"].as_array().unwrap().len(), 3);
    }
}
