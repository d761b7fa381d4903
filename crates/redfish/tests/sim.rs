//! Against the Lifeline simulator (`crates/sim`, written independently of this client): one BMC of every
//! flavor (generic, idrac-like, ilo-like, supermicro-like, openbmc-like) over HTTPS with token sessions,
//! per-flavor reset types, session limits and a certificate change.

use std::sync::Arc;
use std::time::Duration;

use lifeline_redfish::*;
use lifeline_sim::{EndpointKind, Fault, Fleet, FleetSpec, RunningFleet, SimOptions};
use lifeline_types::{PowerAction, PowerState};

async fn fleet() -> RunningFleet {
    Fleet::start(FleetSpec::generate(5, 0), SimOptions::for_tests()).await.expect("fleet starts")
}

fn target(f: &RunningFleet, name: &str) -> (BmcTarget, Credentials) {
    let ep = f.endpoint(name, EndpointKind::Redfish).expect("redfish endpoint");
    (
        BmcTarget::new(name, format!("https://{}:{}", ep.address, ep.port)),
        Credentials::new(&ep.username, &ep.password),
    )
}

fn opts() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(10),
        power_poll_interval: Duration::from_millis(20),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flavor_power_sensors_sel_and_logout() {
    let f = fleet().await;
    let expected = [
        ("gpu-node-01", "generic"),
        ("gpu-node-02", "dell-idrac"),
        ("gpu-node-03", "hpe-ilo"),
        ("gpu-node-04", "supermicro"),
        ("gpu-node-05", "openbmc"),
    ];
    for (name, platform) in expected {
        let (t, creds) = target(&f, name);
        let store = Arc::new(MemoryPinStore::new());
        let c = Client::connect(t, creds, TlsTrust::Pin { store: store.clone(), explicit: None }, opts())
            .await
            .unwrap();
        let served = fingerprint_der(f.redfish(name).unwrap().certificate().as_ref());
        assert_eq!(store.get_pin(name).await.unwrap(), Some(served), "{name}: pinned the served certificate");
        assert_eq!(c.profile().platform, platform, "{name}: {:?}", c.service_root());

        let systems = c.systems().await.unwrap();
        assert_eq!(systems.items.len(), 1, "{name}");
        let sys = &systems.items[0];
        assert_eq!(c.auth_in_use(), AuthInUse::Session, "{name}");

        let off = c.power(sys, PowerAction::Off).await.unwrap();
        assert_eq!(off.before, PowerState::On, "{name}");
        c.wait_for(sys, PowerState::Off, Duration::from_secs(10)).await.unwrap();
        let on = c.power(sys, PowerAction::On).await.unwrap();
        assert_eq!(on.plan, Some(ResetPlan::Single("On".into())), "{name}");
        c.wait_for(sys, PowerState::On, Duration::from_secs(10)).await.unwrap();
        let (types, _) = c.reset_types(sys).await.unwrap();
        let cycle = c.power(sys, PowerAction::Cycle).await.unwrap();
        let want = if types.as_ref().unwrap().iter().any(|t| t == "PowerCycle") {
            ResetPlan::Single("PowerCycle".into())
        } else {
            ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() }
        };
        assert_eq!(cycle.plan, Some(want), "{name}: {types:?}");

        let chassis = c.chassis().await.unwrap();
        let sensors = c.sensors(&chassis.items[0]).await.unwrap();
        assert!(!sensors.readings.is_empty(), "{name}: {sensors:?}");
        assert!(sensors.readings.iter().any(|r| r.reading.is_some()), "{name}");

        let sel = c.sel(50).await.unwrap();
        assert!(!sel.items.is_empty(), "{name}: no SEL found: {:?}", sel.warnings);

        assert!(c.sessions_held() >= 1);
        c.close().await.unwrap();
        assert_eq!(f.redfish(name).unwrap().session_count(), 0, "{name}: session left behind");
    }
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ilo_like_session_limit_is_respected() {
    let f = fleet().await;
    let name = "gpu-node-03"; // ilo-like: 4 sessions
    let (t, creds) = target(&f, name);
    let store: Arc<dyn PinStore> = Arc::new(MemoryPinStore::new());
    // Others (the web UI, other tools) hold 3 of the 4 sessions.
    let mut others = Vec::new();
    for _ in 0..3 {
        let o = Client::connect(
            t.clone(),
            creds.clone(),
            TlsTrust::Pin { store: store.clone(), explicit: None },
            opts(),
        )
        .await
        .unwrap();
        o.systems().await.unwrap();
        others.push(o);
    }
    let bmc = f.redfish(name).unwrap();
    assert_eq!(bmc.session_count(), 3);
    let c = Client::connect(
        t,
        creds,
        TlsTrust::Pin { store, explicit: None },
        ClientOptions { max_concurrent_requests: 8, ..opts() },
    )
    .await
    .unwrap();
    let sys = c.systems().await.unwrap().items.remove(0);
    let results = futures::future::join_all((0..16).map(|_| c.system(&sys.odata_id))).await;
    for r in results {
        r.unwrap();
    }
    assert_eq!(bmc.session_count(), 4);
    assert_eq!((c.sessions_held(), c.session_logins()), (1, 1), "16 concurrent reads on the one free slot");
    c.close().await.unwrap();
    for o in &others {
        o.close().await.unwrap();
    }
    assert_eq!(bmc.session_count(), 0);
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_change_is_refused_until_trusted() {
    let f = fleet().await;
    let name = "gpu-node-02";
    let (t, creds) = target(&f, name);
    let store = Arc::new(MemoryPinStore::new());
    let trust_mode = TlsTrust::Pin { store: store.clone(), explicit: None };
    let c = Client::connect(t.clone(), creds.clone(), trust_mode.clone(), opts()).await.unwrap();
    let old = store.get_pin(name).await.unwrap().unwrap();
    c.close().await.unwrap();

    f.devices().inject(name, &"tls-cert-change".parse::<Fault>().unwrap()).await.unwrap();
    let new = fingerprint_der(f.redfish(name).unwrap().certificate().as_ref());
    assert_ne!(old, new);
    let err = Client::connect(t.clone(), creds.clone(), trust_mode.clone(), opts()).await.unwrap_err();
    match err {
        RedfishError::CertificateChanged { pinned, presented, .. } => {
            assert_eq!((pinned, presented), (old, new))
        }
        other => panic!("expected CertificateChanged, got {other:?}"),
    }
    // Re-pinned only to the fingerprint the operator confirmed.
    let out = trust(&t, store.as_ref(), None, new, &opts()).await.unwrap();
    assert_eq!(out.current, new);
    let c = Client::connect(t, creds, trust_mode, opts()).await.unwrap();
    c.systems().await.unwrap();
    c.close().await.unwrap();
    f.shutdown().await;
}
