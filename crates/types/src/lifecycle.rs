//! Where a fault record and a runbook run are in their lives: closed sets of words that the store keeps,
//! the API returns and the web console colours, spelled once here so no front end invents a seventh.

use crate::kebab_enum;

kebab_enum! {
    /// A fault record's state: opened by a rule or a report, acknowledged by a person, resolved when its
    /// evidence is gone.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum FaultState {
        Open => "open",
        Acked => "acked",
        Resolved => "resolved",
    }
}

kebab_enum! {
    /// A runbook run's state. `running` and `waiting-approval` are in progress; the others are final.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum RunState {
        Running => "running",
        WaitingApproval => "waiting-approval",
        Succeeded => "succeeded",
        Failed => "failed",
        Escalated => "escalated",
        Aborted => "aborted",
        /// Not admitted (the blast-radius guard, a lease held elsewhere): nothing ran.
        Refused => "refused",
    }
}

kebab_enum! {
    /// A runbook step's state as a run's view shows it: folded from the step journal (`ok`, `failed`,
    /// `timeout`, `skipped` are recorded outcomes; `running`, `unknown`, `waiting-approval` follow from
    /// an intent or a decision without an outcome; `pending` has no journal row yet).
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum StepState {
        Pending => "pending",
        Running => "running",
        Ok => "ok",
        Failed => "failed",
        Timeout => "timeout",
        Skipped => "skipped",
        /// Its intent was journaled but no outcome, and no process drives the run: it may or may not
        /// have acted.
        Unknown => "unknown",
        WaitingApproval => "waiting-approval",
    }
}

impl RunState {
    /// The states in which a run still occupies its target (and counts against the blast-radius guard).
    pub const ACTIVE: &'static [RunState] = &[RunState::Running, RunState::WaitingApproval];

    /// Whether the run can still act.
    pub fn in_progress(self) -> bool {
        RunState::ACTIVE.contains(&self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in RunState::ALL {
            assert_eq!(s.as_str().parse::<RunState>(), Ok(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in FaultState::ALL {
            assert_eq!(s.as_str().parse::<FaultState>(), Ok(*s));
        }
        for s in StepState::ALL {
            assert_eq!(s.as_str().parse::<StepState>(), Ok(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert!("succeeded".parse::<StepState>().is_err(), "a run's word is not a step's");
        assert!("done".parse::<RunState>().is_err());
    }

    /// The schema lists the words the JSON carries (what a client of the OpenAPI document compares).
    #[cfg(feature = "schema")]
    #[test]
    fn the_schema_lists_the_json_words() {
        fn words<T: utoipa::PartialSchema>() -> serde_json::Value {
            serde_json::to_value(T::schema()).unwrap()["enum"].clone()
        }
        let all = |w: &[&str]| serde_json::json!(w);
        assert_eq!(words::<RunState>(), all(&RunState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()));
        assert_eq!(words::<StepState>(), all(&StepState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()));
        assert_eq!(
            words::<FaultState>(),
            all(&FaultState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>())
        );
        assert_eq!(
            words::<crate::AuditOutcome>(),
            all(&crate::AuditOutcome::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>())
        );
        assert_eq!(words::<crate::PowerState>()[3], "powering-off");
    }
}
