//! The per-device attempt budget and its escalation ladder. A node that a power cycle does not fix should
//! not be power-cycled every time its fault comes back: a `[[fault-policy]]` entry with a `ladder` answers
//! the N-th fault of a device within `attempt-window` with the N-th rung (e.g. a warm reset, then a power
//! cycle, then a BMC reset), and once every rung was tried, with a human (notify only). The choice and why
//! it was made are recorded with the fault's decision and audited by the server.
//!
//! Pure: the caller passes the device's earlier policy runs and the time.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::config::FaultPolicy;
use crate::error::{EngineError, Result};

/// Default `attempt-window`.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// One earlier attempt on the device: a run the fault policy started (not one the guard refused).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub run: String,
    pub runbook: String,
    pub at_ms: i64,
}

/// What the ladder says for the next fault of a device.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "next", rename_all = "kebab-case")]
pub enum Rung {
    /// Run this rung (0-based `index`).
    Run { index: usize, runbook: String, vars: BTreeMap<String, String>, why: String },
    /// Every rung was tried within the window: a human decides.
    Human { why: String },
}

/// The window of `p` (`attempt-window`, default 24 h).
pub fn window(p: &FaultPolicy) -> Result<Duration> {
    match &p.attempt_window {
        None => Ok(DEFAULT_WINDOW),
        Some(t) => humantime::parse_duration(t).map_err(|e| {
            EngineError::bad_argument(format!(
                "[[fault-policy]] kind = \"{}\": attempt-window = \"{t}\": {e}",
                p.kind
            ))
        }),
    }
}

/// The rung for the next fault of a device whose earlier policy runs are `prior`; `None` when `p` has no
/// ladder (its single `runbook` answers every fault).
pub fn next_rung(p: &FaultPolicy, prior: &[Attempt], now_ms: i64, window: Duration) -> Option<Rung> {
    if p.ladder.is_empty() {
        return None;
    }
    let since = now_ms - i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let mut recent: Vec<&Attempt> = prior.iter().filter(|a| a.at_ms >= since).collect();
    recent.sort_by_key(|a| a.at_ms);
    let n = recent.len();
    let span = humantime::format_duration(Duration::from_secs(window.as_secs()));
    let tried: Vec<String> = recent.iter().map(|a| format!("{} ({})", a.runbook, a.run)).collect();
    Some(match p.ladder.get(n) {
        Some(r) if n == 0 => Rung::Run {
            index: 0,
            runbook: r.runbook.clone(),
            vars: r.vars.clone(),
            why: format!("first attempt within {span}: rung 1 of {}", p.ladder.len()),
        },
        Some(r) => Rung::Run {
            index: n,
            runbook: r.runbook.clone(),
            vars: r.vars.clone(),
            why: format!(
                "{n} attempt(s) within {span} did not hold ({}): rung {} of {}",
                tried.join(", "),
                n + 1,
                p.ladder.len()
            ),
        },
        None => Rung::Human {
            why: format!(
                "attempt budget spent: {n} attempt(s) within {span} ({}), every rung of the ladder tried; a human decides",
                tried.join(", ")
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LadderRung, PolicyMode};

    fn policy() -> FaultPolicy {
        let rung = |rb: &str, reset: Option<&str>| LadderRung {
            runbook: rb.into(),
            vars: reset.map(|r| BTreeMap::from([("reset".to_owned(), r.to_owned())])).unwrap_or_default(),
        };
        FaultPolicy {
            kind: "sel-critical".into(),
            targets: vec![],
            runbook: None,
            mode: PolicyMode::Auto,
            ladder: vec![
                rung("gpu-node-recover", Some("reset")),
                rung("gpu-node-recover", Some("cycle")),
                rung("bmc-unreachable", None),
            ],
            attempt_window: None,
        }
    }

    fn at(run: &str, rb: &str, at_ms: i64) -> Attempt {
        Attempt { run: run.into(), runbook: rb.into(), at_ms }
    }

    const H: i64 = 3_600_000;

    #[test]
    fn reset_then_cycle_then_bmc_reset_then_a_human() {
        let p = policy();
        let now = 100 * H;
        let mut prior = Vec::new();
        let mut seen = Vec::new();
        for i in 0..4 {
            match next_rung(&p, &prior, now + i, DEFAULT_WINDOW).unwrap() {
                Rung::Run { index, runbook, vars, why } => {
                    assert_eq!(index, i as usize, "{why}");
                    seen.push(format!("{runbook}:{}", vars.get("reset").map_or("-", String::as_str)));
                    prior.push(at(&format!("run-{i}"), &runbook, now + i));
                }
                Rung::Human { why } => {
                    assert!(why.starts_with("attempt budget spent: 3 attempt(s) within 1day"), "{why}");
                    assert!(
                        why.contains(
                            "gpu-node-recover (run-0), gpu-node-recover (run-1), bmc-unreachable (run-2)"
                        ),
                        "{why}"
                    );
                    seen.push("human".into());
                }
            }
        }
        assert_eq!(seen, ["gpu-node-recover:reset", "gpu-node-recover:cycle", "bmc-unreachable:-", "human"]);
    }

    #[test]
    fn attempts_older_than_the_window_do_not_count_and_no_ladder_is_none() {
        let p = policy();
        let now = 100 * H;
        let old = [at("a", "gpu-node-recover", now - 25 * H), at("b", "gpu-node-recover", now - 2 * H)];
        match next_rung(&p, &old, now, DEFAULT_WINDOW).unwrap() {
            Rung::Run { index, why, .. } => {
                assert_eq!(index, 1);
                assert!(
                    why.contains("1 attempt(s) within 1day did not hold (gpu-node-recover (b))"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            next_rung(&p, &old, now, Duration::from_secs(3600)),
            Some(Rung::Run { index: 0, .. })
        ));
        let mut single = p.clone();
        single.ladder.clear();
        single.runbook = Some("gpu-node-recover".into());
        assert_eq!(next_rung(&single, &old, now, DEFAULT_WINDOW), None);
        let mut bad = p;
        bad.attempt_window = Some("soon".into());
        assert!(window(&bad).unwrap_err().to_string().contains("attempt-window = \"soon\""));
    }
}
