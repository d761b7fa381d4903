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

/// A fleet of one BMC replaying the captured tree at `root`.
async fn replay_fleet(name: &str, root: std::path::PathBuf) -> lifeline_sim::RunningFleet {
    let mut s = lifeline_sim::ServerSpec::bare(
        name,
        std::net::IpAddr::V4(lifeline_test_utils::unique_loopback()),
        "admin",
        "password",
    );
    s.bmc.replay = Some(root);
    Fleet::start(FleetSpec { servers: vec![s], switches: vec![] }, SimOptions::for_tests())
        .await
        .expect("replay fleet")
}

#[tokio::test]
async fn a_replayed_ilo5_tree_hands_over_only_the_appended_entries() {
    let name = "hpe-ilo5-dl325-gen10plus";
    let Some((_dir, root)) = unpack(name) else { return };
    let fleet = replay_fleet(name, root).await;
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

/// GETs of log entry collections (pages) among the simulated BMC's newest GETs, from `from` on.
fn entry_pages(gets: &[String], from: usize) -> Vec<String> {
    let page = |p: &str| p.ends_with("/Entries") || p.contains("/Entries?");
    gets[from.min(gets.len())..].iter().filter(|p| page(p)).cloned().collect()
}

/// GETs of single log entries (members a page lists as bare links), from `from` on: their ids.
fn entry_members(gets: &[String], from: usize) -> Vec<u64> {
    gets[from.min(gets.len())..]
        .iter()
        .filter_map(|p| p.rsplit_once("/Entries/").and_then(|(_, id)| id.parse().ok()))
        .collect()
}

/// Over the replay of the iLO 5 DL325 tree with its logs served 20 entries a page (as an iLO pages long
/// logs; the capture holds each log in one document): the first read walks both oldest-first logs whole
/// (218 IEL and 143 IML entries); after a power cycle appends entries to the IML, the second read asks for
/// the first page of each log (its count and order) and then only the tail back to the mark, by
/// `$skip`/`$top`, and still finds every new entry and the newest one.
#[tokio::test]
async fn a_second_read_fetches_only_the_pages_past_the_mark() {
    let name = "hpe-ilo5-dl325-gen10plus";
    let Some((_dir, root)) = unpack(name) else { return };
    let fleet = replay_fleet(name, root).await;
    let rf = fleet.redfish(name).expect("a Redfish BMC");
    rf.set_page_size(Some(20));
    let sim = Sim { fleet };
    let t = sim.target(name, BmcProtocol::Redfish);
    let pool = pin_pool();
    let mut marks = Marks::new();

    let before = rf.recent_gets().len();
    let (_, first) = sweep(&pool, &t, &mut marks).await;
    let whole = entry_pages(&rf.recent_gets(), before);
    assert_eq!(first.marks.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["218", "143"], "{first:#?}");
    assert!(whole.len() >= 11 + 8, "the first read pages through both logs: {whole:#?}");

    let r = pool.bmc(t.clone()).power(PowerAction::Cycle, None).await.unwrap();
    assert!(r.confirmed);
    let added = sim.fleet.host(name).unwrap().sel_entries().len();
    assert!(added > 0);

    let before = rf.recent_gets().len();
    let (row, second) = sweep(&pool, &t, &mut marks).await;
    let since = entry_pages(&rf.recent_gets(), before);
    // The appended entries are listed as bare links (the captured ones are embedded): each is fetched,
    // and no other.
    let mut members = entry_members(&rf.recent_gets(), before);
    members.sort_unstable();
    assert_eq!(members, (144..=143 + added as u64).collect::<Vec<_>>(), "only the new entries are fetched");
    assert_eq!(second.entries.len(), added, "every appended entry: {second:#?}");
    assert!(second.incomplete.is_empty(), "{second:#?}");
    let newest = 143 + added;
    assert_eq!(second.entries[0].id, newest.to_string(), "the newest entry is found: {second:#?}");
    assert_eq!(row.events[0].id, newest.to_string(), "and shown first: {:#?}", row.events);
    for log in ["Managers/1/LogServices/IEL/Entries", "Systems/1/LogServices/IML/Entries"] {
        let pages: Vec<&String> = since.iter().filter(|p| p.contains(log)).collect();
        assert_eq!(pages.len(), 2, "{log}: its first page and the tail holding the mark: {since:#?}");
        assert!(pages[1].contains("$skip="), "{pages:?}");
    }
    eprintln!(
        "{name}: first read {} entry-collection GETs, second {} ({added} appended): {since:?}",
        whole.len(),
        since.len()
    );

    let before = rf.recent_gets().len();
    let (_, third) = sweep(&pool, &t, &mut marks).await;
    assert!(third.entries.is_empty(), "{third:#?}");
    assert_eq!(entry_pages(&rf.recent_gets(), before).len(), 4, "nothing new: still two pages a log");
    assert!(entry_members(&rf.recent_gets(), before).len() <= 2, "at most the newest `keep` fetched again");
}
