//! Against the real sushy-tools peers (shared/peers/start-redfish-emulator.sh): sushy-emulator (HTTPS, Basic,
//! `--instant-power`) and sushy-static serving the project mockup. Skips loudly without them, fails with
//! `OOB_PEERS_REQUIRED=1`.
//!
//! Power tests use only `gpu-node-4` (by name, which sushy redirects to its UUID path) so that tests of other
//! crates sharing the emulator can use nodes 1-3.

use std::path::PathBuf;
use std::sync::Arc;

use lifeline_redfish::*;
use lifeline_test_utils::peer_endpoints;
use lifeline_types::{Health, PowerAction, PowerState};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

struct Emulator {
    url: String,
    creds: Credentials,
    ca: PathBuf,
}

fn emulator() -> Option<Emulator> {
    let rows = peer_endpoints("redfish")?;
    let r =
        rows.iter().find(|r| r[0] == "sushy-emulator").expect("sushy-emulator row in redfish/endpoints.txt");
    assert!(r[1].starts_with("https://"), "the emulator must run with TLS (no --http): {r:?}");
    Some(Emulator { url: r[1].clone(), creds: Credentials::new(&r[2], &r[3]), ca: PathBuf::from(&r[4]) })
}

fn static_mockup() -> Option<String> {
    let rows = peer_endpoints("redfish")?;
    match rows.iter().find(|r| r[0] == "sushy-static") {
        Some(r) => Some(r[1].clone()),
        None if lifeline_test_utils::peers_required() => panic!("sushy-static required but not started"),
        None => {
            eprintln!("SKIP: sushy-static not running (--static-port 0?)");
            None
        }
    }
}

async fn connect_ca(e: &Emulator) -> Client {
    Client::connect(
        BmcTarget::new("sushy", &e.url),
        e.creds.clone(),
        TlsTrust::CaFile(e.ca.clone()),
        ClientOptions::default(),
    )
    .await
    .expect("connect to sushy-emulator")
}

#[tokio::test]
async fn emulator_systems_power_state_and_thermal() {
    let Some(e) = emulator() else { return };
    let c = connect_ca(&e).await;
    assert_eq!(c.profile().platform, "sushy-emulator");
    assert!(c.profile().no_session_service());
    assert_eq!(c.auth_in_use(), AuthInUse::Basic);

    let systems = c.systems().await.unwrap();
    assert!(systems.items.len() >= 4, "{:?}", systems.items.iter().map(|s| &s.odata_id).collect::<Vec<_>>());
    for s in &systems.items {
        assert!(matches!(s.power_state, Some(PowerState::On | PowerState::Off)), "{s:?}");
        let (types, _) = c.reset_types(s).await.unwrap();
        assert!(types.unwrap().contains(&"ForceOff".to_string()));
        assert_eq!(s.status.health, Some(Health::Ok));
        assert!(s.odata_id.contains("5a1e0000-"), "member ids are UUIDs: {}", s.odata_id);
    }
    assert!(systems.items.iter().any(|s| s.name.as_deref() == Some("gpu-node-1")));

    let chassis = c.chassis().await.unwrap();
    let ch = &chassis.items[0];
    assert!(ch.sensors.is_none() && ch.thermal.is_some(), "sushy has legacy Thermal only: {ch:?}");
    let sensors = c.sensors(ch).await.unwrap();
    let cpu: Vec<_> = sensors.readings.iter().filter(|r| r.name.as_deref() == Some("CPU Temp")).collect();
    assert!(!cpu.is_empty(), "{sensors:?}");
    assert_eq!(cpu[0].reading, Some(41.0));
    assert_eq!(cpu[0].units.as_deref(), Some("Cel"));
    assert_eq!(cpu[0].upper_critical, Some(45.0));
    assert!(sensors.readings.iter().any(|r| r.kind.as_deref() == Some("Fan")), "{sensors:?}");
    c.close().await.unwrap();
}

#[tokio::test]
async fn emulator_reset_changes_power_state() {
    let Some(e) = emulator() else { return };
    let c = connect_ca(&e).await;
    // By name: sushy answers 307 to the UUID path, which the client follows.
    let sys = c.system("/redfish/v1/Systems/gpu-node-4").await.unwrap();
    assert!(sys.odata_id.ends_with("5a1e0000-0000-4000-8000-000000000004"), "{}", sys.odata_id);

    // Start from On whatever an earlier run left.
    c.power(&sys, PowerAction::On).await.unwrap();
    let off = c.power(&sys, PowerAction::Off).await.unwrap();
    assert_eq!(off.plan, Some(ResetPlan::Single("ForceOff".into())));
    assert_eq!((off.before, off.after), (PowerState::On, PowerState::Off));

    // Off again: nothing is sent.
    let again = c.power(&sys, PowerAction::Off).await.unwrap();
    assert_eq!(again.plan, None);

    let on = c.power(&sys, PowerAction::On).await.unwrap();
    assert_eq!(on.plan, Some(ResetPlan::Single("On".into())));
    assert_eq!((on.before, on.after), (PowerState::Off, PowerState::On));

    // Cycle: sushy advertises no PowerCycle (and the quirk table says it answers 501), so ForceOff, wait
    // for Off, On (ForceRestart would keep power on).
    let cycle = c.power(&sys, PowerAction::Cycle).await.unwrap();
    assert_eq!(cycle.plan, Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() }));
    assert_eq!(cycle.after, PowerState::On);

    // The quirk is real: asking for Nmi (advertised!) is refused by the emulator.
    let nmi = c.reset(&sys, "Nmi").await.unwrap_err();
    assert_eq!(nmi.status(), Some(501), "{nmi}");
    assert!(c.profile().unsupported_reset_types().contains(&"Nmi".to_string()));

    // Raw reset + read back.
    c.reset(&sys, "ForceOff").await.unwrap();
    assert_eq!(c.power_state(&sys).await.unwrap(), PowerState::Off);
    // Cycle of an Off host powers it on.
    let cyc_off = c.power(&sys, PowerAction::Cycle).await.unwrap();
    assert_eq!(cyc_off.plan, Some(ResetPlan::Single("On".into())));
    assert_eq!(cyc_off.after, PowerState::On);
}

#[tokio::test]
async fn emulator_wrong_password_is_an_http_401_naming_the_bmc() {
    let Some(e) = emulator() else { return };
    let c = Client::connect(
        BmcTarget::new("sushy-badpw", &e.url),
        Credentials::new("admin", "wrong"),
        TlsTrust::CaFile(e.ca.clone()),
        ClientOptions::default(),
    )
    .await
    .expect("the service root needs no auth");
    let err = c.systems().await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    assert_eq!(err.bmc(), "sushy-badpw");
    assert!(err.to_string().contains("/redfish/v1/Systems"), "{err}");
}

fn server_fingerprint(e: &Emulator) -> lifeline_types::Fingerprint {
    let pem = e.ca.with_file_name("server.pem");
    let der = CertificateDer::from_pem_file(&pem).expect("server.pem next to ca.pem");
    fingerprint_der(der.as_ref())
}

#[tokio::test]
async fn emulator_tofu_pin_and_refusal_of_a_changed_certificate() {
    let Some(e) = emulator() else { return };
    let real = server_fingerprint(&e);
    let store = Arc::new(MemoryPinStore::new());
    let trust_tofu = TlsTrust::Pin { store: store.clone(), explicit: None };
    let target = BmcTarget::new("sushy-pin", &e.url);

    // First use: pinned, and the pin is the SHA-256 of the emulator's real leaf certificate.
    let c = Client::connect(target.clone(), e.creds.clone(), trust_tofu.clone(), ClientOptions::default())
        .await
        .unwrap();
    assert_eq!(store.get_pin("sushy-pin").await.unwrap(), Some(real));
    assert_eq!(c.peer_certificate().unwrap().0, real);
    assert!(!c.systems().await.unwrap().items.is_empty());

    // A stored pin that differs (as after a certificate replacement): refused, both fingerprints named.
    let stale = lifeline_types::Fingerprint([7; 32]);
    store.set_pin("sushy-pin", stale).await.unwrap();
    let err = Client::connect(target.clone(), e.creds.clone(), trust_tofu.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    match &err {
        RedfishError::CertificateChanged { pinned, presented, .. } => {
            assert_eq!((*pinned, *presented), (stale, real))
        }
        other => panic!("expected CertificateChanged, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&stale.to_string()) && msg.contains(&real.to_string()), "{msg}");

    // Operator looks first: the stored pin and the presented certificate, nothing changed.
    let seen = presented_certificate(&target, store.as_ref(), &ClientOptions::default()).await.unwrap();
    assert_eq!(seen, TrustOutcome { previous: Some(stale), current: real });
    assert_eq!(store.get_pin("sushy-pin").await.unwrap(), Some(stale));
    // A confirmation of another fingerprint (the one pinned, or one seen earlier) stores nothing.
    let err = trust(&target, store.as_ref(), None, stale, &ClientOptions::default()).await.unwrap_err();
    match &err {
        RedfishError::NotConfirmed { expected, presented, .. } => {
            assert_eq!((*expected, *presented), (stale, real))
        }
        other => panic!("expected NotConfirmed, got {other}"),
    }
    assert_eq!(store.get_pin("sushy-pin").await.unwrap(), Some(stale));
    // Operator re-pins with the fingerprint shown (`lifeline bmc trust --fingerprint`): connects again.
    let out = trust(&target, store.as_ref(), None, real, &ClientOptions::default()).await.unwrap();
    assert_eq!(out, TrustOutcome { previous: Some(stale), current: real });
    Client::connect(target.clone(), e.creds.clone(), trust_tofu, ClientOptions::default()).await.unwrap();

    // An inventory pin wins over the store.
    let inv = TlsTrust::Pin { store: store.clone(), explicit: Some(stale) };
    let err =
        Client::connect(target.clone(), e.creds.clone(), inv, ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, RedfishError::CertificateChanged { .. }), "{err}");
    let err = trust(&target, store.as_ref(), Some(stale), real, &ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, RedfishError::InventoryPinMismatch { .. }), "{err}");
}

#[tokio::test]
async fn static_mockup_power_sensors_sel_and_services() {
    let Some(url) = static_mockup() else { return };
    let c = Client::connect(
        BmcTarget::new("static", &url),
        Credentials::new("admin", "password"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        ClientOptions::default(),
    )
    .await
    .unwrap();
    assert!(c.service_root().session_service.is_some());

    let systems = c.systems().await.unwrap();
    assert_eq!(systems.items.len(), 1);
    let sys = &systems.items[0];
    assert_eq!(sys.power_state, Some(PowerState::On));
    assert_eq!(sys.status.overall(), Some(Health::Warning));
    assert_eq!(sys.serial_number.as_deref(), Some("SN-STATIC-0001"));
    // sushy-static answers the session login with 204 and no token: the client fell back to Basic.
    assert_eq!(c.auth_in_use(), AuthInUse::Basic);
    let (types, _) = c.reset_types(sys).await.unwrap();
    let types = types.unwrap();
    assert_eq!(
        plan_reset(PowerAction::Cycle, Some(&types), &[]),
        Some(ResetPlan::Single("PowerCycle".into()))
    );

    let chassis = c.chassis().await.unwrap();
    let ch = &chassis.items[0];
    let sensors = c.sensors(ch).await.unwrap();
    // Four sensors from the Sensors collection, plus what only legacy Power carries: the four power supplies
    // (the failed PSU3 is visible there and nowhere else), the power control and the 12 V rail; and, the
    // collection being sparse, the temperatures and fans only legacy Thermal lists.
    let from = |src| sensors.readings.iter().filter(|r| r.source == src).count();
    assert_eq!(from(model::SensorSource::Sensors), 4, "{sensors:?}");
    assert_eq!(from(model::SensorSource::Power), 6, "{sensors:?}");
    // CPU0, GPU0-2 and Fan1-3: Inlet Temp, GPU3 Temp and Fan0 are in the collection already.
    assert_eq!(from(model::SensorSource::Thermal), 7, "{sensors:?}");
    assert!(sensors.readings.iter().all(|r| r.chassis.as_deref() == Some("1")), "{sensors:?}");
    let gpu = sensors.readings.iter().find(|r| r.name.as_deref() == Some("GPU3 Temp")).unwrap();
    assert_eq!((gpu.reading, gpu.health), (Some(87.0), Some(Health::Warning)));
    assert_eq!(gpu.source, model::SensorSource::Sensors);
    let psu3 = sensors.readings.iter().find(|r| r.name.as_deref() == Some("PSU3")).unwrap();
    assert_eq!((psu3.kind.as_deref(), psu3.health), (Some("PowerSupply"), Some(Health::Critical)));
    assert_eq!(sensors.health(), Health::Critical);

    // Legacy path of the same chassis: Thermal + Power (one PSU failed).
    let legacy = model::Chassis { sensors: None, ..ch.clone() };
    let old = c.sensors(&legacy).await.unwrap();
    assert!(old.readings.iter().any(|r| r.source == model::SensorSource::Thermal));
    let psus: Vec<_> = old.readings.iter().filter(|r| r.kind.as_deref() == Some("PowerSupply")).collect();
    assert_eq!(psus.len(), 4, "{old:?}");
    assert!(psus.iter().any(|p| p.health == Some(Health::Critical)), "{psus:?}");

    let sel = c.sel(100).await.unwrap();
    let bmc_sel = sel.items.iter().find(|l| l.log.contains("/Managers/")).expect("manager SEL");
    assert_eq!(bmc_sel.entries.len(), 3);
    let e2 = &bmc_sel.entries[1];
    assert_eq!(e2.severity, Some(Health::Critical));
    assert_eq!(e2.message.as_deref(), Some("PSU3: Power Supply AC lost"));
    assert!(e2.created_at.is_some());

    let ss = c.session_service().await.unwrap().unwrap();
    assert_eq!(ss.session_timeout, Some(1800));
    let es = c.event_service().await.unwrap().unwrap();
    assert_eq!(es.service_enabled, Some(true));
    let subs = c.subscriptions().await.unwrap();
    assert!(subs.warnings.is_empty(), "{:?}", subs.warnings);
}

/// sushy-emulator ignores `$expand` (it lists bare links, as some BMCs do) and has no SessionService (it
/// answers the speculative login of first contact with 401): the members are still read one by one, Basic
/// is used. It has no log services: the guessed `{member}/LogServices` paths answer 404, and since no
/// document names them that is "no log service", not a warning.
#[tokio::test]
async fn emulator_ignoring_expand_and_refusing_the_early_login_still_reads_everything() {
    let Some(e) = emulator() else { return };
    let c = connect_ca(&e).await;
    assert_eq!(c.auth_in_use(), AuthInUse::Basic);
    assert_eq!(c.session_logins(), 0, "nothing adopted from the refused login");
    let l = c.members("/redfish/v1/Systems?$expand=.($levels=1)").await.unwrap();
    assert!(l.items.len() >= 4, "{:?}", l.warnings);
    assert!(l.items.iter().all(|(_, v)| v.get("PowerState").is_some()), "members fetched, not bare links");
    let logs = c.event_logs(10).await.unwrap();
    assert!(logs.services == 0 && logs.logs.is_empty() && logs.warnings.is_empty(), "{logs:?}");
    c.close().await.unwrap();
}
