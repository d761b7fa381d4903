//! Vendor flavors as data: resource ids, allowed resets, where the SEL lives, session-limit replies, latency.
//!
//! Keeping quirks in one table (not `if idrac` scattered through handlers) mirrors how Lifeline's client
//! treats quirks, and makes the differences between vendors reviewable in one screen. The table in the
//! crate's README.md summarises every flavor (ids, resets, log layout, PSU layout).

use std::time::Duration;

use http::StatusCode;
use serde_json::{Value, json};

use crate::spec::RedfishFlavor;

/// The log services a flavor exposes. Every layout shows the same host events (the host's SEL); they
/// differ in where the services are, what they are called and how an entry is typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLayout {
    /// One LogService (`sel_id`, under the System or the Manager), `EntryType: SEL` with sensor fields.
    Sel,
    /// HPE iLO: the IML under the System (host events, `EntryType: Oem`, `OemRecordFormat: Hpe-IML`) and
    /// the IEL under the Manager (iLO's own events: the power and BMC actions executed, `Hpe-iLOEventLog`).
    /// No SEL service.
    HpeImlIel,
    /// OpenBMC bmcweb: an `EventLog` under the System (host events) and one under the Manager (BMC
    /// events: the actions executed), both `EntryType: Event` with a registry `MessageId`. No SEL service.
    OpenbmcEventLogs,
}

/// Where PSUs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerLayout {
    /// `Chassis/{id}/Power` with `PowerSupplies[]` (deprecated in 2020.4, still what most BMCs serve).
    Legacy,
    /// Only `Chassis/{id}/PowerSubsystem/PowerSupplies/{id}` with `LineInputStatus` and a redundancy group.
    SubsystemOnly,
}

/// Everything that differs between flavors.
#[derive(Debug)]
pub struct Flavor {
    pub kind: RedfishFlavor,
    pub vendor: &'static str,
    pub product: &'static str,
    pub redfish_version: &'static str,
    pub system_id: &'static str,
    pub chassis_id: &'static str,
    pub manager_id: &'static str,
    /// Id of the LogService holding the host's events (the SEL; iLO's IML; bmcweb's System EventLog).
    pub sel_id: &'static str,
    /// Whether that service is under the System (else under the Manager).
    pub sel_under_system: bool,
    /// Which log services exist and how their entries look.
    pub logs: LogLayout,
    /// Legacy `Chassis/{id}/Power`, or only `PowerSubsystem`.
    pub power: PowerLayout,
    /// `ResetType@Redfish.AllowableValues` of `ComputerSystem.Reset`.
    pub resets: &'static [&'static str],
    /// Base latency of every response, before `time_scale` (OpenBMC on an AST2500 is slow).
    pub latency: Duration,
    /// `$expand=.` / `$expand=*` with `$levels=1` (iDRAC 9, iLO 5 and later, DMTF-conformant services);
    /// bmcweb builds leave it off by default (`insecure-enable-redfish-query`), Supermicro X11 lacks it.
    pub expand: bool,
    /// `Status.HealthRollup` on the ComputerSystem (the system and everything it depends on: the chassis'
    /// fans, PSUs, sensors). iDRAC 9, iLO 5 and DMTF's mockups (`public-rackmount1`) report it; Supermicro
    /// X11/X12 and current bmcweb report only `Health`, so a client must read the chassis to cover them.
    pub health_rollup: bool,
    /// iDRAC answers `On` on a powered-on system with 409 instead of doing nothing.
    pub on_while_on_conflict: bool,
    /// Supermicro rejects a boot override PATCH without `BootSourceOverrideEnabled`.
    pub boot_patch_needs_enabled: bool,
}

const GENERIC: Flavor = Flavor {
    kind: RedfishFlavor::Generic,
    vendor: "Lifeline",
    product: "Lifeline Simulated BMC",
    redfish_version: "1.15.0",
    system_id: "Self",
    chassis_id: "Self",
    manager_id: "Self",
    sel_id: "SEL",
    sel_under_system: false,
    logs: LogLayout::Sel,
    power: PowerLayout::Legacy,
    resets: &[
        "On",
        "ForceOff",
        "GracefulShutdown",
        "GracefulRestart",
        "ForceRestart",
        "Nmi",
        "ForceOn",
        "PushPowerButton",
        "PowerCycle",
    ],
    latency: Duration::ZERO,
    expand: true,
    health_rollup: true,
    on_while_on_conflict: false,
    boot_patch_needs_enabled: false,
};

const IDRAC: Flavor = Flavor {
    kind: RedfishFlavor::IdracLike,
    vendor: "Dell",
    product: "Integrated Dell Remote Access Controller",
    redfish_version: "1.17.0",
    system_id: "System.Embedded.1",
    chassis_id: "System.Embedded.1",
    manager_id: "iDRAC.Embedded.1",
    sel_id: "Sel",
    sel_under_system: false,
    logs: LogLayout::Sel,
    power: PowerLayout::Legacy,
    // iDRAC 9 before 7.x: no PowerCycle; ForceOn absent too.
    resets: &[
        "On",
        "ForceOff",
        "ForceRestart",
        "GracefulRestart",
        "GracefulShutdown",
        "PushPowerButton",
        "Nmi",
    ],
    latency: Duration::from_millis(120),
    expand: true,
    health_rollup: true,
    on_while_on_conflict: true,
    boot_patch_needs_enabled: false,
};

const ILO: Flavor = Flavor {
    kind: RedfishFlavor::IloLike,
    vendor: "HPE",
    product: "ProLiant XD685 Gen11",
    redfish_version: "1.13.0",
    system_id: "1",
    chassis_id: "1",
    manager_id: "1",
    sel_id: "IML",
    sel_under_system: true,
    logs: LogLayout::HpeImlIel,
    power: PowerLayout::Legacy,
    resets: &[
        "On",
        "ForceOff",
        "GracefulShutdown",
        "ForceRestart",
        "Nmi",
        "PushPowerButton",
        "GracefulRestart",
    ],
    latency: Duration::from_millis(60),
    expand: true,
    health_rollup: true,
    on_while_on_conflict: false,
    boot_patch_needs_enabled: false,
};

const SUPERMICRO: Flavor = Flavor {
    kind: RedfishFlavor::SupermicroLike,
    vendor: "Supermicro",
    product: "SYS-821GE-TNHR",
    redfish_version: "1.11.0",
    system_id: "1",
    chassis_id: "1",
    manager_id: "1",
    sel_id: "Log1",
    sel_under_system: false,
    logs: LogLayout::Sel,
    power: PowerLayout::Legacy,
    resets: &["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"],
    latency: Duration::from_millis(80),
    expand: false,
    health_rollup: false,
    on_while_on_conflict: false,
    boot_patch_needs_enabled: true,
};

const OPENBMC: Flavor = Flavor {
    kind: RedfishFlavor::OpenbmcLike,
    vendor: "OpenBMC",
    product: "OpenBMC bmcweb",
    redfish_version: "1.17.0",
    system_id: "system",
    chassis_id: "chassis",
    manager_id: "bmc",
    sel_id: "EventLog",
    sel_under_system: true,
    logs: LogLayout::OpenbmcEventLogs,
    power: PowerLayout::Legacy,
    resets: &[
        "On",
        "ForceOff",
        "ForceOn",
        "ForceRestart",
        "GracefulRestart",
        "GracefulShutdown",
        "PowerCycle",
        "Nmi",
    ],
    latency: Duration::from_millis(400),
    expand: false,
    health_rollup: false,
    on_while_on_conflict: false,
    boot_patch_needs_enabled: false,
};

const POWERSUBSYSTEM: Flavor = Flavor {
    kind: RedfishFlavor::PowerSubsystem,
    vendor: "Lifeline",
    product: "Lifeline Simulated BMC (PowerSubsystem)",
    redfish_version: "1.17.0",
    system_id: "1",
    chassis_id: "1",
    manager_id: "1",
    sel_id: "SEL",
    sel_under_system: false,
    logs: LogLayout::Sel,
    power: PowerLayout::SubsystemOnly,
    resets: &["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle"],
    latency: Duration::ZERO,
    expand: true,
    health_rollup: true,
    on_while_on_conflict: false,
    boot_patch_needs_enabled: false,
};

impl Flavor {
    pub fn get(kind: RedfishFlavor) -> &'static Flavor {
        match kind {
            RedfishFlavor::Generic => &GENERIC,
            RedfishFlavor::IdracLike => &IDRAC,
            RedfishFlavor::IloLike => &ILO,
            RedfishFlavor::SupermicroLike => &SUPERMICRO,
            RedfishFlavor::OpenbmcLike => &OPENBMC,
            RedfishFlavor::PowerSubsystem => &POWERSUBSYSTEM,
        }
    }

    /// What the BMC answers when its session table is full.
    ///
    /// iDRAC: 503 with `Base.1.x.GeneralError` and extended info `IDRAC.2.x.RAC0218` ("The maximum number of
    /// user sessions is reached."), as seen in client bug reports. Others: 503 with the DMTF Base registry's
    /// `SessionLimitExceeded`.
    pub fn session_limit_error(&self) -> (StatusCode, Value) {
        match self.kind {
            RedfishFlavor::IdracLike => (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": {
                    "code": "Base.1.12.GeneralError",
                    "message": "A general error has occurred. See ExtendedInfo for more information",
                    "@Message.ExtendedInfo": [{
                        "Message": "The maximum number of user sessions is reached.",
                        "MessageArgs": [],
                        "MessageArgs@odata.count": 0,
                        "MessageId": "IDRAC.2.9.RAC0218",
                        "RelatedProperties": [],
                        "RelatedProperties@odata.count": 0,
                        "Resolution": "Close one or more sessions before opening another session.",
                        "Severity": "Informational"
                    }]
                }}),
            ),
            _ => (
                StatusCode::SERVICE_UNAVAILABLE,
                super::error_body(
                    "SessionLimitExceeded",
                    "The session establishment failed due to the number of simultaneous sessions exceeding the \
                     limit of the implementation.",
                    "Reduce the number of other sessions before trying to establish the session or increase the \
                     limit of simultaneous sessions (if supported).",
                    &[],
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_quirks() {
        assert!(!Flavor::get(RedfishFlavor::IdracLike).resets.contains(&"PowerCycle"));
        assert_eq!(Flavor::get(RedfishFlavor::IloLike).system_id, "1");
        assert_eq!(Flavor::get(RedfishFlavor::OpenbmcLike).system_id, "system");
        assert_eq!(Flavor::get(RedfishFlavor::IdracLike).system_id, "System.Embedded.1");
        for f in RedfishFlavor::EVERY {
            let fl = Flavor::get(f);
            assert!(fl.resets.contains(&"On") && fl.resets.contains(&"ForceOff"), "{f}");
            let (status, body) = fl.session_limit_error();
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(body["error"]["@Message.ExtendedInfo"][0]["MessageId"].is_string());
        }
    }
}
