//! A fault record's kind: an open set. Most kinds are fixed by the engine's rules, but `console-<finding>`
//! comes from the console rule table (a data file an operator may extend) and `shared-<kind>` from the
//! correlation, so a closed enum would refuse a kind the next rule file adds. The kind is therefore a
//! string; this module is the one place that lists the kinds Lifeline writes and the families that stay
//! open, and the API's schema is made from it (the known kinds as examples, a `pattern` that admits
//! exactly them and the open families).

use serde::{Deserialize, Serialize};

/// A fault record's kind (`bmc-unreachable`, `console-kernel-panic`, `shared-sel-critical`, …).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FaultKind(pub String);

impl FaultKind {
    /// The kinds the engine's own rules and Lifeline's schedulers raise (docs/faults.md).
    pub const KNOWN: &'static [&'static str] = &[
        "bmc-unreachable",
        "health-critical",
        "sel-critical",
        "gpu-missing",
        "backup-failed",
        "switch-link-flap",
        "switch-pfc-storm",
        "switch-pfc-watchdog",
        "switch-port-errors",
        "switch-port-drops",
        "cabling",
        "agent-report",
        "rail-down",
    ];

    /// The open families: `console-<finding>` (a console rule's name, from the rule table) and
    /// `shared-<kind>` (several devices' faults of one kind explained by one part they share).
    pub const FAMILIES: &'static [&'static str] = &["console-", "shared-"];

    /// The schema's pattern: a known kind, or an open family's prefix followed by a kebab-case word.
    pub const PATTERN: &'static str = "^(bmc-unreachable|health-critical|sel-critical|gpu-missing|backup-failed|switch-link-flap|switch-pfc-storm|switch-pfc-watchdog|switch-port-errors|switch-port-drops|cabling|agent-report|rail-down|(console|shared)-[a-z0-9]+(-[a-z0-9]+)*)$";

    /// Whether `kind` is one this version writes: a known kind, or an open family's prefix and a
    /// kebab-case word (what [`FaultKind::PATTERN`] admits).
    pub fn is_valid(kind: &str) -> bool {
        if FaultKind::KNOWN.contains(&kind) {
            return true;
        }
        FaultKind::FAMILIES.iter().any(|f| {
            kind.strip_prefix(f).is_some_and(|rest| {
                !rest.is_empty()
                    && rest.split('-').all(|w| {
                        !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    })
            })
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

#[cfg(feature = "schema")]
impl utoipa::PartialSchema for FaultKind {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "A fault record's kind: one of the known kinds (the examples), or an open family \
                 (`console-<finding>` from the console rule table, `shared-<kind>` from the correlation).",
            ))
            .pattern(Some(FaultKind::PATTERN))
            .examples(FaultKind::KNOWN.iter().copied().chain(["console-kernel-panic", "shared-sel-critical"]))
            .into()
    }
}

#[cfg(feature = "schema")]
impl utoipa::ToSchema for FaultKind {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kinds_and_open_families() {
        for k in FaultKind::KNOWN {
            assert!(FaultKind::is_valid(k), "{k}");
        }
        for k in ["console-kernel-panic", "console-gpu-xid", "shared-bmc-unreachable", "console-oom-kill"] {
            assert!(FaultKind::is_valid(k), "{k}");
        }
        for k in ["", "console-", "console--x", "shared-Sel", "kernel-panic", "bmc_unreachable", "console-x-"]
        {
            assert!(!FaultKind::is_valid(k), "{k}");
        }
        assert_eq!(serde_json::to_value(FaultKind("cabling".into())).unwrap(), "cabling");
    }

    /// The pattern the schema publishes names every known kind and every family, and nothing else (a
    /// hand-written regex and the lists could drift apart).
    #[test]
    fn the_pattern_lists_every_known_kind_and_family() {
        let body = FaultKind::PATTERN.trim_start_matches("^(").trim_end_matches(")$");
        let alternatives: Vec<&str> = body.split('|').collect();
        for k in FaultKind::KNOWN {
            assert!(alternatives.contains(k), "{k} is not in the pattern");
        }
        let families: Vec<&str> = FaultKind::FAMILIES.iter().map(|f| f.trim_end_matches('-')).collect();
        assert!(
            body.contains(&format!("({})-[a-z0-9]+(-[a-z0-9]+)*", families.join("|"))),
            "families {families:?} in {body}"
        );
        assert_eq!(alternatives.len(), FaultKind::KNOWN.len() + families.len(), "{alternatives:?}");
    }
}
