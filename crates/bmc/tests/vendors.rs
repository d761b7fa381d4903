//! `lifeline sel`, `health` and `power cycle` against Redfish services in the big vendors' shapes: the
//! mockups of `crates/redfish/tests/mockups` (HPE iLO 5, OpenBMC bmcweb; see `make_mockups.py` there) served
//! by a real sushy-static (GET only: resets answer 204 and change nothing, like a BMC that acknowledges a
//! reset it never performs), and sushy-emulator, which has no LogServices at all.
//!
//! What must hold on every shape: the critical entries and parts are reported, nothing else is reported
//! as failed, the log each entry came from is named, a missing event log is said explicitly, and a power
//! cycle is never `confirmed` without evidence that the host lost power.

mod common;

use std::time::Duration;

use common::*;
use lifeline_bmc::*;
use lifeline_types::{Health, PowerAction, PowerState};

fn options() -> BmcOptions {
    BmcOptions {
        power: PowerOptions {
            timeout: Duration::from_secs(3),
            poll_interval: Duration::from_millis(100),
            cycle_grace: Duration::from_millis(1500),
            ..PowerOptions::default()
        },
        ..quick_options()
    }
}

fn failed(h: &HealthSummary) -> Vec<(String, Health)> {
    h.sensors.iter().filter(|s| s.health != Health::Ok).map(|s| (s.name.clone(), s.health)).collect()
}

#[tokio::test]
async fn hpe_ilo5_iml_iel_legacy_power_supplies_and_a_cycle_without_powercycle() {
    let Some(st) = vendor_static("hpe-ilo5") else { return };
    let (pool, _) = pool_with(options());
    let bmc = pool.bmc(http_target("ilo", &st.1));

    let log = bmc.events(10).await.unwrap();
    assert!(!log.no_log_service, "{log:#?}");
    let ids: Vec<&str> = log.logs.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["Managers/1/IEL", "Systems/1/IML"], "{log:#?}");
    assert_eq!(log.entries.len(), 5, "{log:#?}");
    let critical: Vec<_> = log.entries.iter().filter(|e| e.severity == Health::Critical).collect();
    assert_eq!(critical.len(), 1, "{log:#?}");
    assert_eq!(critical[0].message, "Power Supply Failure (Power Supply 2, Bay 2)");
    assert_eq!(critical[0].log.as_deref(), Some("Systems/1/IML"));
    assert!(log.entries.windows(2).all(|w| w[0].time >= w[1].time), "newest first: {log:#?}");

    let h = bmc.health().await.unwrap();
    assert_eq!(h.health, Health::Critical);
    assert_eq!(
        failed(&h),
        [
            ("HpeServerPowerSupply (bay 2)".to_owned(), Health::Critical),
            ("PSU redundancy (Failover, 2 of 2 needed)".to_owned(), Health::Warning)
        ],
        "{h:#?}"
    );
    let bay1 = h.sensors.iter().find(|s| s.name == "HpeServerPowerSupply (bay 1)").expect("bay 1");
    assert_eq!(bay1.output_watts, Some(312.0));
    assert!(
        h.sensors.iter().any(|s| s.name == "PowerControl member 0" && s.reading == Some(312.0)),
        "{h:#?}"
    );
    assert!(!h.sensors.iter().any(|s| s.name.starts_with("/redfish")), "no URI labels: {h:#?}");

    // iLO 5 offers no PowerCycle: ForceOff, wait for Off, On. The mockup never goes Off: the report (not a
    // bare error) says ForceOff was sent and On was not.
    let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert!(!r.confirmed && r.action_sent, "{r:#?}");
    assert_eq!(r.commands, ["ComputerSystem.Reset ForceOff"], "{r:#?}");
    assert_eq!(r.observed, PowerState::On);
    assert!(r.note.as_deref().is_some_and(|n| n.contains("On was not sent")), "{r:#?}");
}

#[tokio::test]
async fn openbmc_event_logs_power_subsystem_and_a_powercycle_never_seen_off() {
    let Some(st) = vendor_static("openbmc") else { return };
    let (pool, _) = pool_with(options());
    let bmc = pool.bmc(http_target("obmc", &st.1));

    let log = bmc.events(10).await.unwrap();
    assert!(!log.no_log_service, "{log:#?}");
    let ids: Vec<&str> = log.logs.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["Managers/bmc/EventLog", "Systems/system/EventLog"], "{log:#?}");
    assert!(log.logs.iter().all(|l| l.kind == "event"));
    assert_eq!(log.entries.len(), 4, "journal, dump and POST codes are not events: {log:#?}");
    assert!(!log.entries.iter().any(|e| e.message.starts_with("not an event")), "{log:#?}");
    let critical: Vec<_> = log.entries.iter().filter(|e| e.severity == Health::Critical).collect();
    assert_eq!(critical.len(), 1, "{log:#?}");
    assert_eq!(critical[0].log.as_deref(), Some("Systems/system/EventLog"));

    let h = bmc.health().await.unwrap();
    assert_eq!(h.health, Health::Critical);
    assert_eq!(
        failed(&h),
        [
            ("powersupply1".to_owned(), Health::Critical),
            ("PSU redundancy (Failover, 2 of 2 needed)".to_owned(), Health::Warning)
        ],
        "LossOfInput makes the Warning supply critical: {h:#?}"
    );
    let psu0 = h.sensors.iter().find(|s| s.name == "powersupply0").expect("psu0");
    assert_eq!((psu0.reading, psu0.output_watts), (Some(320.0), Some(305.0)));
    assert_eq!(
        h.sensors.iter().find(|s| s.name == "powersupply1").unwrap().line_input.as_deref(),
        Some("LossOfInput")
    );

    // bmcweb offers PowerCycle; this BMC acknowledges it and never goes Off, and LastResetTime stays put.
    let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert_eq!(r.commands, ["ComputerSystem.Reset PowerCycle"]);
    assert_eq!(r.confirmation, Confirmation::OffNotObserved, "{r:#?}");
    assert!(!r.confirmed, "never confirmed with [on] as the only transition: {r:#?}");
    assert!(r.transitions.iter().all(|t| t.state == PowerState::On));
}

/// sushy-emulator serves no LogServices: the result says so explicitly instead of an empty, clean log.
#[tokio::test]
async fn no_log_service_is_explicit() {
    let Some(s) = sushy() else { return };
    let (pool, _) = pool_with(BmcOptions { tls: TlsPolicy::CaFile(s.ca.clone()), ..quick_options() });
    let log = pool.bmc(s.target("emu", "gpu-node-1")).events(5).await.unwrap();
    assert!(log.no_log_service && log.entries.is_empty() && log.logs.is_empty(), "{log:#?}");
    assert!(log.warnings.iter().any(|w| w.contains("no SEL-like log service found")), "{log:#?}");
}
