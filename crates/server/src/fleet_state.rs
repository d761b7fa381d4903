//! The one definition of each state a device is in, as the web console's overview, the fleet filter and
//! the rack grid show it. Every device is in exactly one state: the first of [`DeviceState::ALL`] whose
//! rule holds (a human's attention first, then what Lifeline is doing, then what is broken). The states
//! are derived from what the store already records — fault records, runbook runs and their journal, the
//! readmit decisions in the audit log, the sweep's observations — never stored on their own, so they
//! cannot disagree with the records they summarize.

use chrono::{DateTime, Utc};
use lifeline_types::RunState;
use serde::{Deserialize, Serialize};

/// A device's state (see [`DeviceState::rule`] for each one's definition).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceState {
    Escalated,
    WaitingApproval,
    Verifying,
    Recovering,
    Unreachable,
    Faulted,
    DrainedByLifeline,
    Unknown,
    Healthy,
}

impl DeviceState {
    /// In precedence order: a device is in the first state whose rule holds.
    pub const ALL: [DeviceState; 9] = [
        DeviceState::Escalated,
        DeviceState::WaitingApproval,
        DeviceState::Verifying,
        DeviceState::Recovering,
        DeviceState::Unreachable,
        DeviceState::Faulted,
        DeviceState::DrainedByLifeline,
        DeviceState::Unknown,
        DeviceState::Healthy,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeviceState::Escalated => "escalated",
            DeviceState::WaitingApproval => "waiting-approval",
            DeviceState::Verifying => "verifying",
            DeviceState::Recovering => "recovering",
            DeviceState::Unreachable => "unreachable",
            DeviceState::Faulted => "faulted",
            DeviceState::DrainedByLifeline => "drained-by-lifeline",
            DeviceState::Unknown => "unknown",
            DeviceState::Healthy => "healthy",
        }
    }

    pub fn parse(s: &str) -> Option<DeviceState> {
        DeviceState::ALL.into_iter().find(|d| d.as_str() == s)
    }

    /// The rule, in words (the API documentation and the overview's tooltips say the same).
    pub fn rule(self) -> &'static str {
        match self {
            DeviceState::Escalated => {
                "a runbook run on it ended escalated and no later run succeeded nor did an operator clear it"
            }
            DeviceState::WaitingApproval => "a runbook run on it waits for an operator's approval",
            DeviceState::Verifying => {
                "a runbook run on it is at a verify step or at its post-conditions (proving the fault gone)"
            }
            DeviceState::Recovering => "a runbook run on it is running any other step",
            DeviceState::Unreachable => "its BMC did not answer the last sweep",
            DeviceState::Faulted => "it has a fault record that is open or acknowledged (not resolved)",
            DeviceState::DrainedByLifeline => {
                "Lifeline's own drain (Slurm drain or Kubernetes quarantine) is the newest readmit decision on it"
            }
            DeviceState::Unknown => "no sweep has observed it (never swept yet, or it has no BMC to sweep)",
            DeviceState::Healthy => "none of the above: swept, reachable, no fault, no run, not drained",
        }
    }
}

/// A run that still occupies its device (`running` or `waiting-approval`), as the state rules see it.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveRun {
    pub id: String,
    pub state: RunState,
    /// The step it is at (or waits to run), when its runbook could be read.
    pub step: Option<String>,
    pub step_kind: Option<String>,
    /// The step is one of the runbook's post-conditions.
    pub post_condition: bool,
}

/// What is known of one device, gathered from the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// The last sweep's verdict on the BMC: `None` when never swept (or no BMC).
    pub reachable: Option<bool>,
    /// Fault records not resolved.
    pub unresolved_faults: usize,
    pub active_run: Option<ActiveRun>,
    /// An open escalation: the run's id.
    pub escalated_run: Option<String>,
    /// Lifeline's drain is the newest readmit decision.
    pub drained_by_lifeline: bool,
}

/// The device's one state.
pub fn classify(f: &Facts) -> DeviceState {
    if f.escalated_run.is_some() {
        return DeviceState::Escalated;
    }
    if let Some(r) = &f.active_run {
        if r.state == RunState::WaitingApproval {
            return DeviceState::WaitingApproval;
        }
        if r.post_condition || r.step_kind.as_deref() == Some("verify") {
            return DeviceState::Verifying;
        }
        return DeviceState::Recovering;
    }
    if f.reachable == Some(false) {
        return DeviceState::Unreachable;
    }
    if f.unresolved_faults > 0 {
        return DeviceState::Faulted;
    }
    if f.drained_by_lifeline {
        return DeviceState::DrainedByLifeline;
    }
    if f.reachable.is_none() {
        return DeviceState::Unknown;
    }
    DeviceState::Healthy
}

/// A count per state, every state present (zero included).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub struct StateCounts {
    pub escalated: usize,
    pub waiting_approval: usize,
    pub verifying: usize,
    pub recovering: usize,
    pub unreachable: usize,
    pub faulted: usize,
    pub drained_by_lifeline: usize,
    pub unknown: usize,
    pub healthy: usize,
}

impl StateCounts {
    fn slot(&mut self, s: DeviceState) -> &mut usize {
        match s {
            DeviceState::Escalated => &mut self.escalated,
            DeviceState::WaitingApproval => &mut self.waiting_approval,
            DeviceState::Verifying => &mut self.verifying,
            DeviceState::Recovering => &mut self.recovering,
            DeviceState::Unreachable => &mut self.unreachable,
            DeviceState::Faulted => &mut self.faulted,
            DeviceState::DrainedByLifeline => &mut self.drained_by_lifeline,
            DeviceState::Unknown => &mut self.unknown,
            DeviceState::Healthy => &mut self.healthy,
        }
    }

    pub fn of<'a>(states: impl IntoIterator<Item = &'a DeviceState>) -> StateCounts {
        let mut c = StateCounts::default();
        for s in states {
            *c.slot(*s) += 1;
        }
        c
    }

    pub fn get(&self, s: DeviceState) -> usize {
        let mut c = self.clone();
        *c.slot(s)
    }

    pub fn sum(&self) -> usize {
        DeviceState::ALL.iter().map(|s| self.get(*s)).sum()
    }
}

/// The readmit actions that put a node out of service (Lifeline's drain) and back.
pub const DRAIN_ACTIONS: &[&str] = &["readmit.drain", "readmit.quarantine"];
pub const READMIT_ACTIONS: &[&str] =
    &["readmit.drain", "readmit.quarantine", "readmit.resume", "readmit.release"];
/// Outcomes of a readmit decision that leave the node as the action says.
pub const READMIT_DONE: &[&str] = &["ok", "unchanged"];

/// A run's reason (or a step's message) in a few words: verification problems come as `check-id subject:
/// message` items joined by `; `, one per rail or GPU; the same check failing on several subjects is
/// counted ("10 rails down") instead of listed, and the whole reason stays one click away.
pub fn summarize_reason(reason: &str) -> String {
    // The executor's "step `name`: …" prefix stays in front of the summary.
    let (prefix, body) = match reason.split_once(": ") {
        Some((p, b)) if p.starts_with("step `") && !p.contains(';') => (format!("{p}: "), b),
        _ => (String::new(), reason),
    };
    let items: Vec<&str> = body.split(['\n', ';']).map(str::trim).filter(|s| !s.is_empty()).collect();
    if items.len() <= 1 {
        return shorten(reason.trim(), 160);
    }
    // Keep the order in which each kind of problem first appears.
    let mut groups: Vec<(String, usize, &str)> = Vec::new();
    for it in &items {
        let key = check_id(it).map_or_else(|| (*it).to_owned(), str::to_owned);
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some(g) => g.1 += 1,
            None => groups.push((key, 1, it)),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(key, n, first)| match (*n, phrase(key)) {
            (1, _) => shorten(first, 80),
            (n, Some((_, many))) => format!("{n} {many}"),
            (n, None) => format!("{n}× {key}"),
        })
        .collect();
    shorten(&format!("{prefix}{}", parts.join(", ")), 200)
}

/// `rail.link` in `rail.link mlx5_0/1 (rail 0): state DOWN`.
fn check_id(item: &str) -> Option<&str> {
    let first = item.split_whitespace().next()?;
    let first = first.trim_end_matches(':');
    let ok = first.contains('.')
        && first.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && first.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    ok.then_some(first)
}

/// How a repeated check reads in words (one, many).
fn phrase(check: &str) -> Option<(&'static str, &'static str)> {
    Some(match check {
        "rail.link" => ("rail down", "rails down"),
        "rail.present" => ("rail missing", "rails missing"),
        "rail.speed" => ("rail at the wrong speed", "rails at the wrong speed"),
        "rail.address" => ("rail without its address", "rails without their address"),
        c if c.starts_with("rail.") => ("rail check failed", "rail checks failed"),
        c if c.starts_with("gpu.") => ("GPU check failed", "GPU checks failed"),
        c if c.starts_with("host.") => ("host setting wrong", "host settings wrong"),
        _ => return None,
    })
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub fn ts(ms: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(state: &str, kind: &str, post: bool) -> Option<ActiveRun> {
        Some(ActiveRun {
            id: "r1".into(),
            state: state.parse().expect("a run state"),
            step: Some("s".into()),
            step_kind: Some(kind.into()),
            post_condition: post,
        })
    }

    #[test]
    fn each_rule_and_its_precedence() {
        let swept = Facts { reachable: Some(true), ..Facts::default() };
        assert_eq!(classify(&swept), DeviceState::Healthy);
        assert_eq!(classify(&Facts::default()), DeviceState::Unknown);
        let drained = Facts { drained_by_lifeline: true, ..swept.clone() };
        assert_eq!(classify(&drained), DeviceState::DrainedByLifeline);
        let faulted = Facts { unresolved_faults: 2, ..drained.clone() };
        assert_eq!(classify(&faulted), DeviceState::Faulted);
        let down = Facts { reachable: Some(false), ..faulted.clone() };
        assert_eq!(classify(&down), DeviceState::Unreachable);
        let rec = Facts { active_run: run("running", "power", false), ..down.clone() };
        assert_eq!(classify(&rec), DeviceState::Recovering);
        let ver = Facts { active_run: run("running", "wait-for", true), ..down.clone() };
        assert_eq!(classify(&ver), DeviceState::Verifying);
        let ver2 = Facts { active_run: run("running", "verify", false), ..down.clone() };
        assert_eq!(classify(&ver2), DeviceState::Verifying);
        let wait = Facts { active_run: run("waiting-approval", "power", false), ..down.clone() };
        assert_eq!(classify(&wait), DeviceState::WaitingApproval);
        let esc = Facts { escalated_run: Some("r0".into()), ..wait.clone() };
        assert_eq!(classify(&esc), DeviceState::Escalated);
    }

    #[test]
    fn counts_list_every_state_and_sum_to_the_total() {
        let states = [DeviceState::Healthy, DeviceState::Healthy, DeviceState::DrainedByLifeline];
        let c = StateCounts::of(&states);
        assert_eq!(c.sum(), 3);
        assert_eq!((c.healthy, c.drained_by_lifeline, c.escalated), (2, 1, 0));
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json.as_object().unwrap().len(), DeviceState::ALL.len());
        assert_eq!(json["drained-by-lifeline"], 1);
        for s in DeviceState::ALL {
            assert_eq!(DeviceState::parse(s.as_str()), Some(s));
            let json = serde_json::to_value(s).unwrap();
            assert_eq!(json, s.as_str());
        }
    }

    #[test]
    fn reasons_are_counted_per_check() {
        let mut items: Vec<String> =
            (0..10).map(|i| format!("rail.link mlx5_{i}/1 (rail {i}): state DOWN")).collect();
        items.push("gpu.snapshot gpus: snapshot is 900 s old (limit 300 s)".into());
        let reason = format!("step `verify`: {}", items.join("; "));
        let s = summarize_reason(&reason);
        assert!(s.contains("10 rails down"), "{s}");
        assert!(s.contains("gpu.snapshot gpus: snapshot is 900 s old"), "{s}");
        assert!(s.len() < reason.len());
        assert_eq!(summarize_reason("power did not come on"), "power did not come on");
        let long = "x".repeat(500);
        assert_eq!(summarize_reason(&long).chars().count(), 160);
    }
}
