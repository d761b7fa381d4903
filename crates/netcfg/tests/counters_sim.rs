//! Switch counters read over SSH from the simulator's switches, every platform: two reads a moment apart
//! with one port flapping (`link-flap`) and another in a pause storm (`pfc-storm`) rise on exactly those
//! two ports, as a link-flap and a PFC storm; healthy ports, whose traffic grows, rise nowhere.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use lifeline_netcfg::counters::{Evidence, Thresholds, read_counters, rising};
use lifeline_netcfg::index::MemoryHostKeyPins;
use lifeline_netcfg::ssh::SshAuth;
use lifeline_sim::switch::{SwitchState, serve};
use lifeline_types::Platform;

#[tokio::test]
async fn a_flapping_port_and_a_storming_port_rise_on_every_platform() {
    for (platform, flap, storm, ports) in [
        (Platform::Sonic, "Ethernet16", "Ethernet8", vec![]),
        (Platform::Eos, "Ethernet3/1", "Ethernet2/1", vec![]),
        (Platform::Ios, "Ethernet1/3", "Ethernet1/2", vec![]),
        (Platform::Cumulus, "swp3", "swp2", vec!["swp1".to_owned(), "swp2".to_owned(), "swp3".to_owned()]),
    ] {
        let ip = lifeline_test_utils::unique_loopback();
        let l = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let addr = l.local_addr().unwrap();
        let state = Arc::new(SwitchState::new("leaf-03", platform, "leaf", "admin", "s1m-pass"));
        let task = tokio::spawn(serve(l, state.clone()));
        let target = common::target(
            "leaf-03",
            &addr.ip().to_string(),
            addr.port(),
            "admin",
            SshAuth::Password("s1m-pass".into()),
            platform,
        );
        let pins = Arc::new(MemoryHostKeyPins::default());
        let before = read_counters(&target, pins.clone(), &ports).await.unwrap();
        assert!(before.failed.is_empty(), "{platform:?}: {:?}", before.failed);
        assert!(before.snapshot.ports.len() >= 3, "{platform:?}: {:#?}", before.snapshot);
        state.flaps.start(flap);
        state.pfc.start(storm);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let now = read_counters(&target, pins, &ports).await.unwrap();
        let r = rising(&before.snapshot, &now.snapshot, &Thresholds::default());
        let seen: BTreeSet<(String, Evidence)> = r.iter().map(|x| (x.port.clone(), x.evidence)).collect();
        let flapped = lifeline_netcfg::counters::port_key(flap);
        let stormed = lifeline_netcfg::counters::port_key(storm);
        assert!(
            seen.iter()
                .any(|(p, e)| lifeline_netcfg::counters::port_key(p) == flapped && *e == Evidence::LinkFlap),
            "{platform:?}: {r:#?}"
        );
        assert!(
            seen.iter()
                .any(|(p, e)| lifeline_netcfg::counters::port_key(p) == stormed && *e == Evidence::Pause),
            "{platform:?}: {r:#?}"
        );
        let others: Vec<_> = r
            .iter()
            .filter(|x| ![&flapped, &stormed].contains(&&lifeline_netcfg::counters::port_key(&x.port)))
            .collect();
        assert!(others.is_empty(), "{platform:?}: healthy ports rose: {others:#?}");
        task.abort();
    }
}
