//! Discovery outlives the pool: a second pool (a new process, here sharing only the protocol memory that
//! the store would hold) starts with each BMC's IPMI cipher suite and Redfish root and system path, and a
//! stale entry (a system path that is gone) is dropped, rediscovered and written back, against the
//! simulator.

use std::sync::Arc;
use std::time::Duration;

use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, RunningFleet, SimOptions};
use lifeline_types::BmcProtocol;

fn targets(fleet: &RunningFleet) -> Vec<BmcTarget> {
    let mut out = Vec::new();
    for e in fleet.endpoints() {
        let protocol = match e.kind {
            EndpointKind::Redfish => BmcProtocol::Redfish,
            EndpointKind::Ipmi => BmcProtocol::Ipmi,
            _ => continue,
        };
        let mut t = BmcTarget::new(
            format!("{}-{protocol}", e.name),
            e.address.to_string(),
            protocol,
            &e.username,
            &e.password,
        );
        t.redfish_port = e.port;
        t.ipmi_port = e.port;
        out.push(t);
    }
    out
}

fn pool(memory: Arc<MemoryProtocolMemory>, pins: Arc<MemoryPinStore>) -> BmcPool {
    let opts = BmcOptions { tls: TlsPolicy::Pin(pins), ..BmcOptions::default() };
    BmcPool::with_memory(opts, Arc::new(MemoryAuditSink::new()), memory)
}

async fn sweep_all_ok(pool: &BmcPool, targets: &[BmcTarget]) {
    let opts = SweepOptions { per_bmc_timeout: Duration::from_secs(20), ..SweepOptions::default() };
    let rows = pool.sweep(targets.to_vec(), &opts, |_, _| {}).await;
    assert_eq!(rows.len(), targets.len());
    for r in &rows {
        assert!(r.ok(), "{r:#?}");
    }
}

#[tokio::test]
async fn discovery_is_remembered_across_pools_and_stale_paths_are_replaced() {
    let fleet = Fleet::start(FleetSpec::generate(5, 0), SimOptions::for_tests()).await.expect("fleet starts");
    let targets = targets(&fleet);
    let memory = Arc::new(MemoryProtocolMemory::new());
    let pins = Arc::new(MemoryPinStore::new());

    sweep_all_ok(&pool(memory.clone(), pins.clone()), &targets).await;
    let known = memory.recall_discoveries().await.unwrap();
    for t in &targets {
        let d = known.get(&t.name).unwrap_or_else(|| panic!("{}: nothing remembered", t.name));
        match t.protocol {
            // 17 where offered; some flavors offer only 3.
            BmcProtocol::Ipmi => assert!(matches!(d.ipmi_suite, Some(3 | 17)), "{}: {d:?}", t.name),
            _ => {
                let rf = d.redfish.as_ref().unwrap_or_else(|| panic!("{}: no Redfish discovery", t.name));
                assert_eq!(rf.url, t.redfish_url());
                assert!(rf.root.get("Systems").is_some(), "{}: {}", t.name, rf.root);
                assert!(
                    rf.system.as_deref().is_some_and(|s| s.starts_with("/redfish/v1/Systems/")),
                    "{rf:?}"
                );
            }
        }
    }

    // A firmware update moved the system: the remembered path now answers 404.
    let stale = targets.iter().find(|t| t.protocol == BmcProtocol::Redfish).unwrap();
    let mut d = known[&stale.name].clone();
    let good = d.redfish.as_ref().and_then(|r| r.system.clone());
    if let Some(rf) = d.redfish.as_mut() {
        rf.system = Some("/redfish/v1/Systems/moved-away".into());
    }
    memory.remember_discovery(&stale.name, &d).await.unwrap();

    // A new pool (a new process) starts from the memory and still reads every BMC.
    sweep_all_ok(&pool(memory.clone(), pins.clone()), &targets).await;
    let again = memory.recall_discoveries().await.unwrap();
    assert_eq!(
        again[&stale.name].redfish.as_ref().and_then(|r| r.system.clone()),
        good,
        "stale path replaced"
    );
    fleet.shutdown().await;
}
