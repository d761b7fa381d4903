//! Probation and lemons: re-admission is not the end of a repair. A node Lifeline re-admits is watched for
//! `[probation] window`; a fault or a failing in-band check within it is a *recurrence*, which drains the
//! node again and counts against it. A few nodes cause most exclusions (the "lemons" operators ask for):
//! a node with `lemon-threshold` recurrences within `lemon-window` is listed as one with its history, and
//! with `lemon-readmit = "refuse"` is not re-admitted again until a human releases it.
//!
//! This module is the pure part: the settings and the judgement. The store keeps what happened
//! (`lifeline_store::probation`); the operations that record, drain and refuse are in
//! [`crate::ops::probation`].

use std::time::Duration;

use lifeline_store::{LemonReleaseRow, ProbationRow, RecurrenceRow};
use serde::Serialize;

use crate::config::ProbationConfig;
use crate::error::{EngineError, Result};

/// The cause recorded when a probation check (not a fault) failed.
pub const CHECK_CAUSE: &str = "probation-check";

/// `[probation]`, read once with its defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Zero disables probation.
    pub window: Duration,
    pub check_interval: Duration,
    pub lemon_threshold: u32,
    pub lemon_window: Duration,
    pub refuse_lemons: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: Duration::from_secs(24 * 3600),
            check_interval: Duration::from_secs(3600),
            lemon_threshold: 3,
            lemon_window: Duration::from_secs(30 * 24 * 3600),
            refuse_lemons: true,
        }
    }
}

impl Settings {
    pub fn from_config(c: &ProbationConfig) -> Result<Settings> {
        let d = Settings::default();
        let dur = |v: &Option<String>, key: &str, default: Duration| match v {
            None => Ok(default),
            Some(t) => humantime::parse_duration(t)
                .map_err(|e| EngineError::bad_argument(format!("[probation] {key} = \"{t}\": {e}"))),
        };
        let s = Settings {
            window: dur(&c.window, "window", d.window)?,
            check_interval: dur(&c.check_interval, "check-interval", d.check_interval)?,
            lemon_threshold: c.lemon_threshold.unwrap_or(d.lemon_threshold),
            lemon_window: dur(&c.lemon_window, "lemon-window", d.lemon_window)?,
            refuse_lemons: match c.lemon_readmit.as_deref() {
                None | Some("refuse") => true,
                Some("allow") => false,
                Some(other) => {
                    return Err(EngineError::bad_argument(format!(
                        "[probation] lemon-readmit = \"{other}\": expected \"refuse\" or \"allow\""
                    )));
                }
            },
        };
        if s.lemon_threshold == 0 {
            return Err(EngineError::bad_argument(
                "[probation] lemon-threshold = 0: a lemon needs at least 1 recurrence",
            ));
        }
        if s.check_interval.is_zero() {
            return Err(EngineError::bad_argument(
                "[probation] check-interval = 0: give a positive duration",
            ));
        }
        Ok(s)
    }

    pub fn enabled(&self) -> bool {
        !self.window.is_zero()
    }

    fn since(&self, now_ms: i64) -> i64 {
        now_ms - i64::try_from(self.lemon_window.as_millis()).unwrap_or(i64::MAX)
    }

    /// The earliest recurrence time that still counts towards the score at `now_ms`.
    pub fn counted_since(&self, now_ms: i64) -> i64 {
        self.since(now_ms)
    }

    /// When a probation started at `readmitted_at_ms` ends.
    pub fn until(&self, readmitted_at_ms: i64) -> i64 {
        readmitted_at_ms.saturating_add(i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX))
    }

    /// Whether an `on` probation's in-band check is due at `now_ms`.
    pub fn check_due(&self, p: &ProbationRow, now_ms: i64) -> bool {
        let every = i64::try_from(self.check_interval.as_millis()).unwrap_or(i64::MAX);
        p.state == "on"
            && now_ms < p.until_ms
            && now_ms - p.last_check_ms.unwrap_or(p.readmitted_at_ms) >= every
    }
}

/// The recurrence score of a node: its recurrences within the lemon window. A count, not a decayed
/// figure, so an operator can check it against the listed history by hand.
pub fn score(s: &Settings, history: &[RecurrenceRow], now_ms: i64) -> u32 {
    let since = s.counted_since(now_ms);
    u32::try_from(history.iter().filter(|r| r.at_ms >= since).count()).unwrap_or(u32::MAX)
}

/// A node with recurrences, as listed (`lifeline fault lemons`, `GET /api/v1/lemons`).
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub node: String,
    /// Recurrences within the lemon window.
    pub score: u32,
    pub threshold: u32,
    pub lemon: bool,
    /// Whether a lemon's re-admission waits for a human (`lemon-readmit = "refuse"` and no unused release).
    pub readmit_refused: bool,
    /// The node's newest probation.
    pub probation: Option<ProbationRow>,
    /// Every recurrence within the lemon window, oldest first.
    pub history: Vec<RecurrenceRow>,
    /// Humans' releases of the node, oldest first.
    pub releases: Vec<LemonReleaseRow>,
}

/// Judges one node from what the store holds.
pub fn standing(
    s: &Settings,
    node: &str,
    probation: Option<ProbationRow>,
    history: Vec<RecurrenceRow>,
    releases: Vec<LemonReleaseRow>,
    now_ms: i64,
) -> Standing {
    let since = s.counted_since(now_ms);
    let history: Vec<RecurrenceRow> = history.into_iter().filter(|r| r.at_ms >= since).collect();
    let score = score(s, &history, now_ms);
    let lemon = score >= s.lemon_threshold;
    let released = releases.iter().any(|r| r.used_at_ms.is_none());
    Standing {
        node: node.to_owned(),
        score,
        threshold: s.lemon_threshold,
        lemon,
        readmit_refused: lemon && s.refuse_lemons && !released,
        probation,
        history,
        releases,
    }
}

/// Why a lemon is not re-admitted, in words that name its recurrences.
pub fn refusal(s: &Settings, st: &Standing) -> String {
    let causes: Vec<String> = st.history.iter().map(|r| r.cause.clone()).collect();
    format!(
        "`{}` is a lemon: {} recurrence(s) after re-admission within {} ({}), threshold {}; \
         re-admission needs a human: lifeline fault release-lemon {} --reason TEXT",
        st.node,
        st.score,
        humantime::format_duration(Duration::from_secs(s.lemon_window.as_secs())),
        causes.join(", "),
        st.threshold,
        st.node
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    fn rec(at_ms: i64, cause: &str) -> RecurrenceRow {
        RecurrenceRow {
            id: at_ms,
            device: "gpu-node-01".into(),
            at_ms,
            cause: cause.into(),
            fault: None,
            readmitted_at_ms: at_ms - H,
            detail: serde_json::Value::Null,
        }
    }

    #[test]
    fn defaults_and_bad_values() {
        let s = Settings::from_config(&ProbationConfig::default()).unwrap();
        assert_eq!(s, Settings::default());
        assert!(s.enabled());
        let c = |f: fn(&mut ProbationConfig)| {
            let mut c = ProbationConfig::default();
            f(&mut c);
            Settings::from_config(&c).map_err(|e| e.to_string())
        };
        assert!(!c(|c| c.window = Some("0s".into())).unwrap().enabled());
        assert!(c(|c| c.window = Some("soon".into())).unwrap_err().contains("[probation] window = \"soon\""));
        assert!(c(|c| c.lemon_threshold = Some(0)).unwrap_err().contains("lemon-threshold = 0"));
        assert!(
            c(|c| c.lemon_readmit = Some("maybe".into())).unwrap_err().contains("\"refuse\" or \"allow\"")
        );
        assert!(!c(|c| c.lemon_readmit = Some("allow".into())).unwrap().refuse_lemons);
        assert!(c(|c| c.check_interval = Some("0s".into())).unwrap_err().contains("check-interval"));
    }

    #[test]
    fn a_lemon_is_refused_until_a_human_releases_it_and_old_recurrences_fall_out() {
        let s = Settings {
            lemon_threshold: 2,
            lemon_window: Duration::from_secs(24 * 3600),
            ..Settings::default()
        };
        let now = 100 * H;
        let hist =
            vec![rec(now - 30 * H, "rail-down"), rec(now - 5 * H, "rail-down"), rec(now - H, CHECK_CAUSE)];
        let st = standing(&s, "gpu-node-01", None, hist.clone(), vec![], now);
        assert_eq!((st.score, st.lemon, st.readmit_refused), (2, true, true));
        assert_eq!(st.history.len(), 2, "the one outside the window is not listed");
        let why = refusal(&s, &st);
        assert!(
            why.contains("2 recurrence(s) after re-admission within 1day (rail-down, probation-check)"),
            "{why}"
        );
        assert!(why.contains("lifeline fault release-lemon gpu-node-01"), "{why}");

        let release = LemonReleaseRow {
            id: 1,
            device: "gpu-node-01".into(),
            by: "cli:ops".into(),
            reason: "board swapped".into(),
            at_ms: now,
            used_at_ms: None,
        };
        let st = standing(&s, "gpu-node-01", None, hist.clone(), vec![release.clone()], now);
        assert!(st.lemon && !st.readmit_refused, "released once");
        let used = LemonReleaseRow { used_at_ms: Some(now), ..release };
        assert!(standing(&s, "gpu-node-01", None, hist.clone(), vec![used], now).readmit_refused);

        let allow = Settings { refuse_lemons: false, ..s.clone() };
        assert!(!standing(&allow, "gpu-node-01", None, hist.clone(), vec![], now).readmit_refused);
        // One recurrence is under the threshold: not a lemon.
        let st = standing(&s, "gpu-node-01", None, hist[2..].to_vec(), vec![], now);
        assert_eq!((st.score, st.lemon), (1, false));
    }

    #[test]
    fn checks_fall_due_every_interval_within_the_window_only() {
        let s = Settings { window: Duration::from_secs(4 * 3600), ..Settings::default() };
        let p = ProbationRow {
            device: "n".into(),
            readmitted_at_ms: 0,
            until_ms: s.until(0),
            report_digest: None,
            state: "on".into(),
            checks: 0,
            last_check_ms: None,
        };
        assert!(!s.check_due(&p, H - 1));
        assert!(s.check_due(&p, H));
        let checked = ProbationRow { last_check_ms: Some(H), checks: 1, ..p.clone() };
        assert!(!s.check_due(&checked, H + 10));
        assert!(s.check_due(&checked, 2 * H));
        assert!(!s.check_due(&p, 4 * H), "the window is over");
        assert!(!s.check_due(&ProbationRow { state: "recurred".into(), ..p }, 2 * H));
    }
}
