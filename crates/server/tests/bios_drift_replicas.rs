//! The scheduled BIOS drift read with two replicas on one store: each interval's read is one unit of work,
//! so the first replica to claim it reads the BMC and the other finds it done (the BMC is read once, not
//! once per replica); the drift it stored is what `GET /api/v1/bios/drift`'s engine read returns. Against
//! Lifeline's simulated Redfish BMC, whose BIOS has `NumaNodesPerSocket = 1` where the profile wants 4.

mod common;

use std::sync::Arc;
use std::time::Duration;

use lifeline_engine::{Identity, Lifeline};
use lifeline_server::SystemClock;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_reads_each_interval_and_the_drift_is_stored() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ip = std::net::IpAddr::V4(lifeline_test_utils::unique_loopback());
    let spec = lifeline_sim::ServerSpec::bare("rfnode", ip, "admin", "password");
    let fleet = lifeline_sim::Fleet::start(
        lifeline_sim::FleetSpec { servers: vec![spec], switches: vec![] },
        lifeline_sim::SimOptions::for_tests(),
    )
    .await
    .expect("fleet starts");
    let ep = fleet.endpoint("rfnode", lifeline_sim::EndpointKind::Redfish).expect("a Redfish endpoint");
    let bmc = fleet.redfish("rfnode").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let inline = format!("{{ address = \"{}\", port = {}, protocol = \"redfish\" }}", ep.address, ep.port);
    let config = "[server]\nbios-drift-interval = \"1h\"\nconsole-logging = false\n\n[[bios-profile]]\n\
                  attributes = { SriovGlobalEnable = \"Enabled\", NumaNodesPerSocket = \"4\" }\n";
    let settings = common::one_bmc_settings(dir.path(), "rfnode", &inline, Some(config));
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
        replicas.push(lifeline_server::serve::state(base, Arc::new(SystemClock), false).await.unwrap());
    }
    let every = lifeline_server::scheduler::bios_drift::interval(&replicas[0]).expect("configured");
    assert_eq!(every, Duration::from_secs(3600));

    let gets_before = bmc.requests().get;
    let first = lifeline_server::scheduler::bios_drift::read_once(&replicas[0], every).await.unwrap();
    assert_eq!(first, Some(1), "the first replica reads this interval's BIOS");
    let read_gets = bmc.requests().get - gets_before;
    assert!(read_gets > 0, "the BMC was read");
    let second = lifeline_server::scheduler::bios_drift::read_once(&replicas[1], every).await.unwrap();
    assert_eq!(second, None, "the other replica finds this interval's read done");
    assert_eq!(bmc.requests().get - gets_before, read_gets, "and reads nothing");

    for s in &replicas {
        let rows = s.base.bios_drifts(None).await.unwrap();
        assert_eq!(rows.len(), 1, "{rows:#?}");
        assert_eq!((rows[0].device.as_str(), rows[0].checked, rows[0].error.as_deref()), ("rfnode", 2, None));
        let attrs: Vec<&str> =
            rows[0].drift.as_array().unwrap().iter().map(|d| d["attribute"].as_str().unwrap()).collect();
        assert_eq!(attrs, ["NumaNodesPerSocket"], "{rows:#?}");
        assert_eq!(rows[0].drift[0]["current"], 1);
    }
    drop(fleet);
}
