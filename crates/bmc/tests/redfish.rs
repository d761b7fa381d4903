//! `lifeline-bmc` against real Redfish services: sushy-tools' emulator (HTTPS, Basic auth, `--instant-power`)
//! and sushy-static serving the project mockup and the DMTF `public-rackmount1` mockup. Power tests drive
//! only `gpu-node-3` (the redfish crate's tests use `gpu-node-4`).

mod common;

use std::sync::Arc;

use common::*;
use lifeline_bmc::hygiene::{AttemptOutcome, HygieneOptions};
use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_types::{BmcProtocol, Fingerprint, Health, PowerAction, PowerState};

fn ca_pool(s: &Sushy) -> (BmcPool, Arc<MemoryAuditSink>) {
    let mut o = quick_options();
    o.tls = TlsPolicy::CaFile(s.ca.clone());
    pool_with(o)
}

#[tokio::test]
async fn sushy_confirmed_power_off_on_and_reset() {
    let Some(s) = sushy() else { return };
    let (pool, audit) = ca_pool(&s);
    let bmc = pool.bmc(s.target("sushy-3", "gpu-node-3"));
    if bmc.power_state().await.unwrap() == PowerState::Off {
        bmc.power(PowerAction::On, None).await.unwrap();
    }
    let off = bmc.power(PowerAction::Off, None).await.unwrap();
    assert_eq!(
        (off.confirmation, off.observed, off.protocol),
        (Confirmation::StateReached, PowerState::Off, BmcProtocol::Redfish)
    );
    assert_eq!(off.commands, ["ComputerSystem.Reset ForceOff"]);
    let again = bmc.power(PowerAction::Off, None).await.unwrap();
    assert_eq!((again.confirmation, again.action_sent), (Confirmation::AlreadyInState, false));
    let on = bmc.power(PowerAction::On, None).await.unwrap();
    assert_eq!(on.confirmation, Confirmation::StateReached);
    assert_eq!(on.commands, ["ComputerSystem.Reset On"]);
    // sushy has no PowerCycle (501): a cycle is ForceOff, Off confirmed, then On.
    let cycle = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert_eq!(cycle.commands, ["ComputerSystem.Reset ForceOff", "ComputerSystem.Reset On"], "{cycle:#?}");
    assert_eq!(cycle.confirmation, Confirmation::TransitionObserved, "{cycle:#?}");
    // A reset is ForceRestart: no off phase to observe, so "acknowledged and on".
    let reset = bmc.power(PowerAction::Reset, None).await.unwrap();
    assert_eq!(reset.commands, ["ComputerSystem.Reset ForceRestart"], "{reset:#?}");
    assert_eq!(reset.confirmation, Confirmation::AcknowledgedAndOn, "{reset:#?}");
    assert_eq!(audit.rows().len(), 10);
}

#[tokio::test]
async fn sushy_health_from_legacy_thermal() {
    let Some(s) = sushy() else { return };
    let (pool, _) = ca_pool(&s);
    let h = pool.bmc(s.target("sushy-1", "gpu-node-1")).health().await.unwrap();
    let cpu = h.sensors.iter().find(|x| x.name == "CPU Temp").unwrap_or_else(|| panic!("{h:#?}"));
    assert_eq!((cpu.reading, cpu.units.as_deref()), (Some(41.0), Some("Cel")));
    assert_eq!(h.health, Health::Ok, "{h:#?}");
    let inv = pool.bmc(s.target("sushy-1", "gpu-node-1")).inventory().await.unwrap();
    assert_eq!(inv.protocol, Some(BmcProtocol::Redfish));
    assert!(inv.uuid.as_deref().is_some_and(|u| u.starts_with("5a1e0000")), "{inv:?}");
}

#[tokio::test]
async fn tofu_pin_and_changed_certificate_refusal() {
    let Some(s) = sushy() else { return };
    let store = Arc::new(MemoryPinStore::new());
    let mut o = quick_options();
    o.tls = TlsPolicy::Pin(store.clone());
    let (pool, _) = pool_with(o);
    assert_eq!(pool.bmc(s.target("sushy-tofu", "gpu-node-1")).power_state().await.unwrap(), PowerState::On);
    use lifeline_redfish::PinStore;
    assert!(store.get_pin("sushy-tofu").await.unwrap().is_some(), "pinned on first use");
    // A pin that does not match (as if the certificate had changed): refused, and `auto` must not hide
    // that behind an IPMI fallback.
    store.set_pin("sushy-tofu", Fingerprint([7; 32])).await.unwrap();
    let mut t = s.target("sushy-tofu", "gpu-node-1");
    t.protocol = BmcProtocol::Auto;
    let err = pool.bmc(t).power_state().await.unwrap_err();
    let text = error_chain(&err);
    assert!(text.contains("certificate changed"), "{text}");
    assert!(matches!(err, BmcError::Redfish { .. }), "{text}");
}

#[tokio::test]
async fn auto_picks_redfish_on_sushy() {
    let Some(s) = sushy() else { return };
    let (pool, _) = ca_pool(&s);
    let mut t = s.target("sushy-auto", "gpu-node-2");
    t.protocol = BmcProtocol::Auto;
    t.ipmi_port = 1;
    let bmc = pool.bmc(t);
    assert_eq!(bmc.protocol().await.unwrap(), BmcProtocol::Redfish);
    assert!(matches!(bmc.power_state().await.unwrap(), PowerState::On | PowerState::Off));
}

#[tokio::test]
async fn project_mockup_events_and_health_via_sushy_static() {
    let Some(s) = sushy() else { return };
    let Some(url) = s.static_url.clone() else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(http_target("mockup", &url));
    let h = bmc.health().await.unwrap();
    // The project mockup has one GPU over threshold and one failed PSU.
    assert_eq!(h.health, Health::Critical, "{h:#?}");
    assert!(h.sensors.iter().any(|x| x.health == Health::Critical));
    let log = bmc.events(3).await.unwrap();
    assert!(!log.entries.is_empty() && log.entries.len() <= 3, "{log:#?}");
    let times: Vec<_> = log.entries.iter().filter_map(|e| e.time).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first: {times:?}");
}

#[tokio::test]
async fn dmtf_rackmount_power_sensors_and_sel() {
    let Some(st) = dmtf_static() else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(http_target("rackmount1", &st.1));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    let h = bmc.health().await.unwrap();
    assert!(h.sensors.len() >= 5, "{h:#?}");
    assert!(h.sensors.iter().any(|x| x.reading.is_some() && x.units.is_some()), "{h:#?}");
    let log = bmc.events(5).await.unwrap();
    assert!(!log.entries.is_empty(), "{log:#?}");
    let inv = bmc.inventory().await.unwrap();
    assert!(inv.manufacturer.is_some() && inv.model.is_some() && inv.serial.is_some(), "{inv:#?}");
    // Power on a host that is on: nothing sent (sushy-static accepts POSTs but changes nothing).
    let r = bmc.power(PowerAction::On, None).await.unwrap();
    assert_eq!((r.confirmation, r.action_sent), (Confirmation::AlreadyInState, false));
}

#[tokio::test]
async fn sweep_over_redfish_peers() {
    let Some(s) = sushy() else { return };
    let Some(st) = dmtf_static() else { return };
    let (pool, _) = ca_pool(&s);
    let targets = vec![
        s.target("sushy-1", "gpu-node-1"),
        http_target("rackmount1", &st.1),
        s.target("nosuch", "gpu-node-9"),
    ];
    let rows = pool.sweep(targets, &SweepOptions::default(), |_, _| {}).await;
    assert!(rows[0].ok() && rows[0].power.is_some() && rows[0].health.is_some(), "{:#?}", rows[0]);
    // The DMTF mockup has a SEL; sushy has no LogServices at all (an empty list with a warning, not an error).
    assert!(rows[1].ok() && !rows[1].events.is_empty(), "{:#?}", rows[1]);
    assert!(rows[2].errors.iter().any(|e| e.contains("gpu-node-9")), "{:#?}", rows[2]);
}

#[tokio::test]
async fn hygiene_against_sushy_basic_auth() {
    let Some(s) = sushy() else { return };
    let (pool, audit) = ca_pool(&s);
    let mut t = s.target("sushy-h", "gpu-node-1");
    t.ipmi_port = 1;
    let rows = pool.hygiene_audit(vec![t.clone()], &HygieneOptions::default()).await;
    let r = &rows[0];
    assert!(r.accepted_defaults.is_empty(), "{r:#?}");
    assert_eq!(r.attempts.len(), 2, "{r:#?}");
    assert!(
        r.attempts.iter().all(|a| a.outcome == AttemptOutcome::Refused && a.protocol == BmcProtocol::Redfish),
        "{r:#?}"
    );
    let cert = r.certificate.as_ref().expect("certificate inspected");
    assert!(!cert.self_signed && !cert.expired, "sushy's leaf is issued by the peer CA: {cert:#?}");
    assert_eq!(audit.rows().len(), 4);
    let o = HygieneOptions {
        extra_credentials: vec![(s.user.clone(), s.password.clone())],
        ..Default::default()
    };
    let rows = pool.hygiene_audit(vec![t], &o).await;
    assert_eq!(rows[0].accepted_defaults.len(), 1, "{:#?}", rows[0]);
}
