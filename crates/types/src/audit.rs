//! The audit log's words for how an action ended: a closed set the engine's audit writer writes, the
//! store keeps and the API's audit view answers, spelled once here.

use crate::kebab_enum;

kebab_enum! {
    /// How an audited action ended. `started` is the intent row, written before the action; every other
    /// word is an outcome row (or a single row for something decided and done at once).
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum AuditOutcome {
        /// The intent: written before acting (no intent row, no action). Left alone, it says the action
        /// was killed half-way.
        Started => "started",
        Ok => "ok",
        /// Done, and nothing needed changing.
        Unchanged => "unchanged",
        Failed => "failed",
        /// Not done: a rule, a lease or a person said no.
        Refused => "refused",
        Error => "error",
        /// Its process died half-way; written by the next taker of its lease.
        Interrupted => "interrupted",
        /// Done, but the evidence that it took effect could not be read.
        Unverified => "unverified",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_words_round_trip() {
        for o in AuditOutcome::ALL {
            assert_eq!(o.as_str().parse::<AuditOutcome>(), Ok(*o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(AuditOutcome::ALL.len(), 8);
        assert!("done".parse::<AuditOutcome>().is_err());
    }
}
