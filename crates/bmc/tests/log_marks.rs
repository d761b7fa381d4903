//! Per-log high-water marks in a sweep: with marks, a row carries every entry new since the last read of
//! each log (however many arrived, more than the newest N shown), once. The simulator appends the entries
//! between sweeps (faults, a power cycle), and its own SEL is the count to match; also over the replay of a
//! captured iLO 5 tree (oldest-first logs of 218 and 143 entries) when the corpus is there.

mod common;

use std::sync::Arc;

use common::corpus::unpack;
use common::*;
use lifeline_bmc::*;
use lifeline_sim::{Fault, Fleet, FleetSpec, RedfishFlavor, SimOptions};
use lifeline_types::{BmcProtocol, Health, PowerAction};

fn opts(marks: &Marks) -> SweepOptions {
    SweepOptions { events: 2, marks: Some(Arc::new(marks.clone())), ..SweepOptions::default() }
}

/// Sweeps once with `marks` and returns the row's window, moving `marks` on as the engine does.
async fn sweep(pool: &BmcPool, t: &BmcTarget, marks: &mut Marks) -> (SweepRow, LogWindow) {
    let row = pool.sweep(vec![t.clone()], &opts(marks), |_, _| {}).await.remove(0);
    assert!(row.ok(), "{row:#?}");
    let w = row.window.clone().expect("a window");
    let kept = marks.entry(t.name.clone()).or_default();
    for m in &w.marks {
        kept.retain(|k| k.log != m.log);
        kept.push(m.clone());
    }
    (row, w)
}

/// Appends entries on the simulated host (a PSU failure, markup, a power cycle) and returns how many.
async fn append(fleet: &lifeline_sim::RunningFleet, name: &str, bmc: &Bmc) -> usize {
    let host = fleet.host(name).unwrap();
    let before = host.sel_entries().len();
    fleet.devices().inject(name, &Fault::PsuFail { psu: 1 }).await.unwrap();
    fleet.devices().inject(name, &Fault::SelMarkup).await.unwrap();
    fleet.devices().clear(name).await.unwrap();
    let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert!(r.confirmed, "{r:#?}");
    host.sel_entries().len() - before
}

#[tokio::test]
async fn a_sweep_with_marks_sees_every_entry_since_the_last_once() {
    let sim = sim(&[RedfishFlavor::IdracLike]).await;
    let t = sim.target("n-idrac-like", BmcProtocol::Redfish);
    let pool = pin_pool();
    let mut marks = Marks::new();
    let (_, first) = sweep(&pool, &t, &mut marks).await;
    assert!(first.entries.len() <= 2, "a first read counts the newest 2 only: {first:#?}");
    let added = append(&sim.fleet, "n-idrac-like", &pool.bmc(t.clone())).await;
    assert!(added > 2, "more new entries than a sweep shows ({added})");
    let (row, second) = sweep(&pool, &t, &mut marks).await;
    assert_eq!(row.events.len(), 2);
    assert_eq!(second.entries.len(), added, "{second:#?}");
    assert!(second.entries.iter().any(|e| e.severity == Health::Critical), "the PSU failure: {second:#?}");
    assert!(second.incomplete.is_empty());
    let (_, third) = sweep(&pool, &t, &mut marks).await;
    assert!(third.entries.is_empty(), "nothing new, nothing again: {third:#?}");
}

#[tokio::test]
async fn a_replayed_ilo5_tree_hands_over_only_the_appended_entries() {
    let name = "hpe-ilo5-dl325-gen10plus";
    let Some((_dir, root)) = unpack(name) else { return };
    let mut s = lifeline_sim::ServerSpec::bare(
        name,
        std::net::IpAddr::V4(lifeline_test_utils::unique_loopback()),
        "admin",
        "password",
    );
    s.bmc.replay = Some(root);
    let fleet = Fleet::start(FleetSpec { servers: vec![s], switches: vec![] }, SimOptions::for_tests())
        .await
        .expect("replay fleet");
    let sim = Sim { fleet };
    let t = sim.target(name, BmcProtocol::Redfish);
    let pool = pin_pool();
    let mut marks = Marks::new();
    let (_, first) = sweep(&pool, &t, &mut marks).await;
    let logs: Vec<&str> = first.marks.iter().map(|m| m.log.as_str()).collect();
    assert_eq!(logs, ["Managers/1/IEL", "Systems/1/IML"], "{first:#?}");
    assert_eq!(first.marks.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["218", "143"]);
    let bmc = pool.bmc(t.clone());
    let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
    assert!(r.confirmed);
    let added = sim.fleet.host(name).unwrap().sel_entries().len();
    let (_, second) = sweep(&pool, &t, &mut marks).await;
    assert_eq!(second.entries.len(), added, "{second:#?}");
    assert!(second.entries.iter().all(|e| e.log.as_deref() == Some("Systems/1/IML")), "{second:#?}");
    eprintln!(
        "{name}: first window {} entries, {added} appended by a power cycle, second window {}",
        first.entries.len(),
        second.entries.len()
    );
    let (_, third) = sweep(&pool, &t, &mut marks).await;
    assert!(third.entries.is_empty(), "{third:#?}");
}
