//! Observed state of a device, the same whichever protocol observed it.

use crate::kebab_enum;

kebab_enum! {
    /// Chassis power as reported by a BMC. Transitional states exist because Redfish reports them and a
    /// confirmed power action must not mistake "powering off" for "off".
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum PowerState {
        On => "on",
        Off => "off",
        PoweringOn => "powering-on",
        PoweringOff => "powering-off",
        Unknown => "unknown",
    }
}

kebab_enum! {
    /// What an operator asks a BMC to do with power.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum PowerAction {
        On => "on",
        Off => "off",
        /// Off, then on (IPMI chassis control 0x02; Redfish PowerCycle or ForceOff+On).
        Cycle => "cycle",
        /// Hard reset without removing power.
        Reset => "reset",
        /// ACPI soft shutdown.
        Soft => "soft",
    }
}

impl PowerAction {
    /// The state a confirmed action waits for, once the action has run.
    pub fn target_state(self) -> PowerState {
        match self {
            PowerAction::Off | PowerAction::Soft => PowerState::Off,
            PowerAction::On | PowerAction::Cycle | PowerAction::Reset => PowerState::On,
        }
    }

    /// Whether the action takes a running host down (the CLI asks for confirmation).
    pub fn is_destructive(self) -> bool {
        !matches!(self, PowerAction::On)
    }
}

kebab_enum! {
    /// Health rollup, ordered from best to worst so that `max` is the rollup of several.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum Health {
        Ok => "ok",
        Warning => "warning",
        Critical => "critical",
        Unknown => "unknown",
    }
}

impl Health {
    /// Worst of two, where `Unknown` only wins over `Ok` (an unreadable sensor must not hide a critical one).
    pub fn worst(self, other: Health) -> Health {
        fn rank(h: Health) -> u8 {
            match h {
                Health::Ok => 0,
                Health::Unknown => 1,
                Health::Warning => 2,
                Health::Critical => 3,
            }
        }
        if rank(other) > rank(self) { other } else { self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_rollup() {
        assert_eq!(Health::Ok.worst(Health::Unknown), Health::Unknown);
        assert_eq!(Health::Unknown.worst(Health::Critical), Health::Critical);
        assert_eq!(Health::Warning.worst(Health::Ok), Health::Warning);
        assert_eq!(Health::Critical.worst(Health::Warning), Health::Critical);
    }

    #[test]
    fn action_targets() {
        assert_eq!(PowerAction::Cycle.target_state(), PowerState::On);
        assert_eq!(PowerAction::Soft.target_state(), PowerState::Off);
        assert!(!PowerAction::On.is_destructive());
    }
}
