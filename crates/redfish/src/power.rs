//! Choosing Redfish reset types for an operator's power action.
//!
//! Why a separate pure module: the mapping from `PowerAction` to `ResetType` differs per BMC (what its
//! `AllowableValues` lists, minus what the quirk table says is advertised but broken) and a wrong choice is a
//! destructive mistake on a production node, so it is a table with unit tests, not ad-hoc string matching.

use serde::Serialize;

use lifeline_types::PowerAction;

/// The reset types the DMTF schema lists as the common base, assumed when a BMC advertises nothing.
pub const ASSUMED_RESET_TYPES: &[&str] =
    &["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart"];

/// One or two reset requests that together perform an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ResetPlan {
    /// One `ResetType`.
    Single(String),
    /// `off` (wait until the system reports Off), then `on`: a cycle on a BMC without PowerCycle, or a reset
    /// on one with neither ForceRestart nor PowerCycle.
    OffThenOn { off: String, on: String },
}

impl ResetPlan {
    pub fn reset_types(&self) -> Vec<&str> {
        match self {
            ResetPlan::Single(t) => vec![t],
            ResetPlan::OffThenOn { off, on } => vec![off, on],
        }
    }
}

/// Preferred reset types per action, best first.
fn preferences(action: PowerAction) -> &'static [&'static str] {
    match action {
        PowerAction::On => &["On", "ForceOn"],
        // A fence agent's "off" must be immediate; graceful shutdown is the separate `Soft` action.
        PowerAction::Off => &["ForceOff"],
        PowerAction::Soft => &["GracefulShutdown"],
        // A cycle removes power (`PowerAction::Cycle`: "PowerCycle or ForceOff+On"): ForceRestart reboots
        // without power loss, which does not clear a wedged GPU or NIC, so it is never a cycle's fallback.
        PowerAction::Cycle => &["PowerCycle"],
        PowerAction::Reset => &["ForceRestart", "PowerCycle"],
    }
}

/// Choose how to perform `action` given the BMC's advertised types (`None`: it did not say) and the reset
/// types the quirk table marks unsupported. Matching is exact (Redfish enum values are case-sensitive).
pub fn plan_reset(
    action: PowerAction,
    allowed: Option<&[String]>,
    unsupported: &[String],
) -> Option<ResetPlan> {
    let usable = |t: &str| {
        let advertised = match allowed {
            Some(a) => a.iter().any(|x| x == t),
            None => ASSUMED_RESET_TYPES.contains(&t),
        };
        advertised && !unsupported.iter().any(|u| u == t)
    };
    if let Some(t) = preferences(action).iter().find(|t| usable(t)) {
        return Some(ResetPlan::Single((*t).to_owned()));
    }
    if matches!(action, PowerAction::Cycle | PowerAction::Reset) {
        let off = preferences(PowerAction::Off).iter().find(|t| usable(t))?;
        let on = preferences(PowerAction::On).iter().find(|t| usable(t))?;
        return Some(ResetPlan::OffThenOn { off: (*off).to_owned(), on: (*on).to_owned() });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn cycle_is_power_cycle_else_off_on_never_a_restart() {
        let all = v(&["On", "ForceOff", "ForceRestart", "PowerCycle"]);
        assert_eq!(
            plan_reset(PowerAction::Cycle, Some(&all), &[]),
            Some(ResetPlan::Single("PowerCycle".into()))
        );
        // iDRAC 9 before 7.x: no PowerCycle; ForceRestart would keep power on.
        let no_pc = v(&["On", "ForceOff", "ForceRestart"]);
        assert_eq!(
            plan_reset(PowerAction::Cycle, Some(&no_pc), &[]),
            Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() })
        );
        // A BMC that can only restart cannot cycle: no plan (the caller reports NoResetType).
        assert_eq!(plan_reset(PowerAction::Cycle, Some(&v(&["ForceRestart"])), &[]), None);
        // Reset keeps its order: ForceRestart, then PowerCycle.
        assert_eq!(
            plan_reset(PowerAction::Reset, Some(&all), &[]),
            Some(ResetPlan::Single("ForceRestart".into()))
        );
        let off_on = v(&["On", "ForceOff"]);
        assert_eq!(
            plan_reset(PowerAction::Cycle, Some(&off_on), &[]),
            Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() })
        );
        // Quirk: PowerCycle advertised but broken.
        assert_eq!(
            plan_reset(PowerAction::Cycle, Some(&all), &v(&["PowerCycle"])),
            Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() })
        );
    }

    #[test]
    fn other_actions() {
        let sushy =
            v(&["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"]);
        assert_eq!(plan_reset(PowerAction::On, Some(&sushy), &[]), Some(ResetPlan::Single("On".into())));
        assert_eq!(
            plan_reset(PowerAction::Off, Some(&sushy), &[]),
            Some(ResetPlan::Single("ForceOff".into()))
        );
        assert_eq!(
            plan_reset(PowerAction::Soft, Some(&sushy), &[]),
            Some(ResetPlan::Single("GracefulShutdown".into()))
        );
        assert_eq!(
            plan_reset(PowerAction::Reset, Some(&sushy), &[]),
            Some(ResetPlan::Single("ForceRestart".into()))
        );
        let only_force_on = v(&["ForceOn", "ForceOff"]);
        assert_eq!(
            plan_reset(PowerAction::On, Some(&only_force_on), &[]),
            Some(ResetPlan::Single("ForceOn".into()))
        );
        assert_eq!(plan_reset(PowerAction::Soft, Some(&only_force_on), &[]), None);
        assert_eq!(plan_reset(PowerAction::Off, Some(&v(&["On"])), &[]), None);
        assert_eq!(plan_reset(PowerAction::Cycle, Some(&v(&["On"])), &[]), None);
        // Case matters: "forceoff" is not a Redfish value.
        assert_eq!(plan_reset(PowerAction::Off, Some(&v(&["forceoff"])), &[]), None);
    }

    #[test]
    fn nothing_advertised_assumes_the_base_set() {
        assert_eq!(
            plan_reset(PowerAction::Cycle, None, &[]),
            Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() })
        );
        assert_eq!(plan_reset(PowerAction::On, None, &[]), Some(ResetPlan::Single("On".into())));
    }
}
