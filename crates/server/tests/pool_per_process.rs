//! One BMC pool per process: every context the server derives for a web user, a token or the scheduler is a
//! handle on the same pool (its fan-out and per-BMC limits, per-BMC locks, kept sessions and its one IPMI
//! transport count for the process, not per request), while each handle audits its actions as its own
//! actor. Checked against Lifeline's simulated IPMI BMC: after one actor's read, another actor's handle
//! already holds the transport that read went through, and power actions by two actors are audited as each.

mod common;

use lifeline_engine::{Identity, Lifeline};
use lifeline_types::PowerAction;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_actor_shares_the_process_pool_and_is_audited_as_itself() {
    let ip = std::net::IpAddr::V4(lifeline_test_utils::unique_loopback());
    let spec = lifeline_sim::ServerSpec::bare("node1", ip, "admin", "password");
    let fleet = lifeline_sim::Fleet::start(
        lifeline_sim::FleetSpec { servers: vec![spec], switches: vec![] },
        lifeline_sim::SimOptions::for_tests(),
    )
    .await
    .expect("fleet starts");
    let ep = fleet.endpoint("node1", lifeline_sim::EndpointKind::Ipmi).expect("an IPMI endpoint");

    let dir = tempfile::tempdir().unwrap();
    let bmc = format!("{{ address = \"{}\", port = {}, protocol = \"ipmi\" }}", ep.address, ep.port);
    let settings = common::one_bmc_settings(dir.path(), "node1", &bmc, None);
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    base.open_store().await.unwrap();
    let alice = base.for_actor(Identity::new("web:alice"));
    let bob = base.for_actor(Identity::new("web:bob"));

    let pa = alice.bmc_pool().await.unwrap();
    let pb = bob.bmc_pool().await.unwrap();
    assert!(pa.same_pool(&pb), "two actors' contexts got pools of their own");
    assert!(pa.same_pool(&base.bmc_pool().await.unwrap()));
    assert!(pa.same_pool(&alice.scoped(Some("r1".into())).bmc_pool().await.unwrap()));

    let sel = alice.select_bmcs(&["node1".into()], &[], false).unwrap();
    let rows = alice.power_status(&sel).await.unwrap();
    assert!(rows.iter().all(|r| r.is_ok()), "{rows:?}");
    let seen = pb.ipmi_mux_stats().expect("bob's handle holds the transport alice's read opened");
    assert!(seen.delivered > 0, "{seen:?}");

    let sel = bob.select_bmcs(&["node1".into()], &[], false).unwrap();
    for (who, l) in [("web:alice", &alice), ("web:bob", &bob)] {
        let rows = l.power(&sel, PowerAction::On).await.unwrap();
        assert!(rows.iter().all(|r| r.is_ok()), "{who}: {rows:?}");
    }
    let log = base.audit_log(Some("node1"), 100).await.unwrap();
    for who in ["web:alice", "web:bob"] {
        let mine: Vec<_> =
            log.iter().filter(|r| r.entry.action == "power.on" && r.entry.actor == who).collect();
        assert!(
            mine.iter().any(|r| r.entry.outcome == "started") && mine.iter().any(|r| r.entry.outcome == "ok"),
            "{who}'s power action is not audited as {who}: {log:#?}"
        );
    }
    drop(fleet);
}
