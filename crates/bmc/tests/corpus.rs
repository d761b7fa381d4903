//! `sel` and `health` over the real-capture corpus (`crates/redfish/tests/corpus`, see
//! `docs/redfish-corpus.md`): Redfish trees captured from physical servers with the DMTF Redfish Mockup
//! Creator, each unpacked into a temporary directory and served by a real sushy-static.
//!
//! The expected results are computed here from the tree's own documents (an oracle that reads the JSON
//! files directly, not through the client): the newest log entry, every Critical entry, every part below
//! the system that is not OK, every system and every GPU. What must hold on every tree: the newest entry
//! shown is the tree's newest, every Critical entry is reported, every non-OK part is reported and nothing
//! else as failed, every system is listed, every GPU is listed with its health, and `sweep` (every
//! sensor) gives the verdict `health` gives.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::corpus::unpack;
use common::*;
use lifeline_bmc::*;
use lifeline_test_utils::redfish_tree::{doc, link, links, members, node_system, norm};
use lifeline_types::Health;
use serde_json::Value;

fn health_of(v: &Value) -> Option<Health> {
    let s = v.pointer("/Status/HealthRollup").or_else(|| v.pointer("/Status/Health"))?.as_str()?;
    match s {
        "OK" => Some(Health::Ok),
        "Warning" => Some(Health::Warning),
        "Critical" => Some(Health::Critical),
        _ => None,
    }
}

fn present(v: &Value) -> bool {
    !matches!(
        v.pointer("/Status/State").and_then(Value::as_str),
        Some("Absent" | "Disabled" | "StandbyOffline")
    )
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s.trim()).ok().map(|t| t.with_timezone(&chrono::Utc))
}

/// One log entry as the tree holds it: id, `Created`, Critical and not resolved.
type Entry = (String, Option<chrono::DateTime<chrono::Utc>>, bool);

/// What the tree says, read from its files.
struct Truth {
    systems: Vec<String>,
    /// Log path -> entries (id, time, critical and not resolved).
    logs: BTreeMap<String, Vec<Entry>>,
    /// Logs captured only in part: the first page, whose `Members@odata.nextLink` the capture does not
    /// hold (Dell's Lclog: 50 of 1326). No server of the tree can give the rest, so Lifeline must say
    /// the log was not read to its end.
    partial: BTreeSet<String>,
    /// Parts below the (first) system and its GPU baseboards, the Managers and firmware items that are not
    /// OK: path -> health.
    bad_parts: BTreeMap<String, Health>,
    /// GPUs of the first system and its GPU baseboards: path -> health.
    gpus: BTreeMap<String, Option<Health>>,
}

fn truth(root: &Path, logs_read: &[String]) -> Truth {
    let systems: Vec<String> = members(root, "/redfish/v1/Systems").into_iter().map(|(id, _)| id).collect();
    let mut logs = BTreeMap::new();
    let mut partial = BTreeSet::new();
    for l in logs_read {
        let coll = doc(root, l).and_then(|s| link(&s, "Entries"));
        if coll
            .as_deref()
            .and_then(|c| doc(root, c))
            .is_some_and(|c| c.get("Members@odata.nextLink").is_some())
        {
            partial.insert(norm(l));
        }
        let entries = coll.map(|e| members(root, &e)).unwrap_or_default();
        let list = entries
            .iter()
            .map(|(id, v)| {
                let eid =
                    v.get("Id").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| id.clone());
                let time = v.get("Created").and_then(Value::as_str).and_then(parse_time);
                let resolved = v.get("Resolved").and_then(Value::as_bool) == Some(true)
                    || v.pointer("/Oem/Hpe/Repaired").and_then(Value::as_bool) == Some(true);
                let critical = v.get("Severity").and_then(Value::as_str) == Some("Critical") && !resolved;
                (eid, time, critical)
            })
            .collect();
        logs.insert(norm(l), list);
    }
    let mut bad_parts = BTreeMap::new();
    let mut gpus = BTreeMap::new();
    let mut note = |id: &str, v: &Value| {
        if let Some(h) = health_of(v).filter(|h| *h != Health::Ok && present(v)) {
            bad_parts.insert(norm(id), h);
        }
    };
    // The target's system (the first) and the GPU baseboards NVIDIA's HGX/GB firmware lists as systems of
    // their own (`HGX_Baseboard_N`): the node's GPUs are theirs.
    let node =
        systems.iter().enumerate().filter(|(i, s)| node_system(*i, s)).filter_map(|(_, s)| doc(root, s));
    for sys in node {
        for (id, p) in link(&sys, "Processors").map(|l| members(root, &l)).unwrap_or_default() {
            if p.get("ProcessorType").and_then(Value::as_str) == Some("GPU") {
                gpus.insert(norm(&id), health_of(&p));
            }
            note(&id, &p);
        }
        for (id, m) in link(&sys, "Memory").map(|l| members(root, &l)).unwrap_or_default() {
            note(&id, &m);
        }
        for (id, s) in link(&sys, "Storage").map(|l| members(root, &l)).unwrap_or_default() {
            note(&id, &s);
            for d in links(&s, "Drives") {
                if let Some(v) = doc(root, &d) {
                    note(&d, &v);
                }
            }
            if let Some(Value::Array(cs)) = s.get("StorageControllers") {
                for (i, c) in cs.iter().enumerate() {
                    note(&format!("{id}#/StorageControllers/{i}"), c);
                }
            }
            for (cid, c) in link(&s, "Controllers").map(|l| members(root, &l)).unwrap_or_default() {
                note(&cid, &c);
            }
        }
    }
    // iLO lists an HGX board's GPUs, NVSwitches and baseboard among its chassis' devices.
    for (_, c) in members(root, "/redfish/v1/Chassis") {
        let Some(devices) = c.pointer("/Oem/Hpe/Links/Devices/@odata.id").and_then(Value::as_str) else {
            continue;
        };
        for (id, d) in members(root, devices) {
            if d.get("DeviceType").and_then(Value::as_str) == Some("GPU") {
                gpus.insert(norm(&id), health_of(&d));
                note(&id, &d);
            }
        }
    }
    for (id, m) in members(root, "/redfish/v1/Managers") {
        note(&id, &m);
    }
    if let Some(inv) = doc(root, "/redfish/v1/UpdateService").and_then(|u| link(&u, "FirmwareInventory")) {
        for (id, f) in members(root, &inv) {
            // Firmware items count whatever their state: a component that failed its update is offline.
            if let Some(h) = health_of(&f).filter(|h| *h != Health::Ok) {
                bad_parts.insert(norm(&id), h);
            }
        }
    }
    Truth { systems, logs, partial, bad_parts, gpus }
}

/// Driver events of one GPU: (kind, number) -> (entries, newest `Created`).
type Tallies = BTreeMap<(String, u32), (usize, Option<chrono::DateTime<chrono::Utc>>)>;

/// `XID n` / `SXID n` in a text, read here on its own (not through the client's parser).
fn xid_in(text: &str) -> Option<(String, u32)> {
    let words: Vec<&str> = text.split(|c: char| c.is_whitespace() || c == ':' || c == ',').collect();
    words.windows(2).find_map(|w| {
        let kind = w[0].to_ascii_uppercase();
        (kind == "XID" || kind == "SXID").then(|| w[1].parse().ok().map(|n| (kind, n))).flatten()
    })
}

/// The oracle for logged GPU driver events: the entries of each GPU baseboard's event log (`EventLog` /
/// `SEL`) that carry an XID or SXID, on the processor of that baseboard the entry's first message argument
/// names (`GPU_0 Driver Event Message`): GPU path -> tallies.
fn driver_events_truth(root: &Path) -> BTreeMap<String, Tallies> {
    let mut out: BTreeMap<String, Tallies> = BTreeMap::new();
    for (sys_id, sys) in members(root, "/redfish/v1/Systems") {
        if !sys_id.trim_end_matches('/').rsplit('/').next().is_some_and(|i| i.starts_with("HGX_Baseboard")) {
            continue;
        }
        let gpus: Vec<(String, String)> = link(&sys, "Processors")
            .map(|l| members(root, &l))
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, p)| p.get("ProcessorType").and_then(Value::as_str) == Some("GPU"))
            .filter_map(|(path, p)| Some((p.get("Id")?.as_str()?.to_owned(), norm(&path))))
            .collect();
        for (_, svc) in link(&sys, "LogServices").map(|l| members(root, &l)).unwrap_or_default() {
            let id = svc.get("Id").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
            if !(id.contains("eventlog") || id == "sel") {
                continue;
            }
            for (_, e) in link(&svc, "Entries").map(|l| members(root, &l)).unwrap_or_default() {
                let args: Vec<&str> = e
                    .get("MessageArgs")
                    .and_then(Value::as_array)
                    .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
                let msg = e.get("Message").and_then(Value::as_str).unwrap_or("");
                let Some(x) = xid_in(msg).or_else(|| args.iter().find_map(|a| xid_in(a))) else { continue };
                let named = args.first().and_then(|a| a.split_whitespace().next()).unwrap_or("");
                let Some((_, gpu)) = gpus.iter().find(|(id, _)| id == named) else { continue };
                let t = out.entry(gpu.clone()).or_default().entry(x).or_default();
                t.0 += 1;
                t.1 = t.1.max(e.get("Created").and_then(Value::as_str).and_then(parse_time));
            }
        }
    }
    out
}

/// NVIDIA GB300 node 2: its baseboard's event log holds 800 XIDs, 200 on each of the four GPUs, each GPU's
/// also in that GPU's own `XID` log service (`Chassis/HGX_GPU_N/LogServices/XID`, the same entries): the
/// tallies `health` gives each GPU are that log's, read from the files, and the figures hand-checked from
/// the capture.
#[tokio::test]
async fn nvidia_gb300_node2_xids_per_gpu() {
    let name = "nvidia-gb300-node2";
    let Some((_dir, root)) = unpack(name) else { return };
    let Some(st) = static_mockup(&root) else { return };
    let (pool, _) = pool_with(quick_options());
    let h = pool.bmc(http_target(name, &st.1)).health().await.unwrap();
    let gpus: Vec<_> = h.gpus.iter().filter(|g| g.role == "gpu").collect();
    assert_eq!(gpus.len(), 4, "{:#?}", h.gpus);
    let mut total = 0;
    for g in &gpus {
        let chassis = doc(&root, &g.resource).and_then(|p| link(&p, "Links/Chassis")).expect("GPU chassis");
        let mut own: BTreeMap<u32, usize> = BTreeMap::new();
        for (_, e) in members(&root, &format!("{chassis}/LogServices/XID/Entries")) {
            let x = xid_in(e.get("Message").and_then(Value::as_str).unwrap_or("")).expect("an XID");
            *own.entry(x.1).or_default() += 1;
        }
        let read: BTreeMap<u32, usize> = g.logged_events.iter().map(|t| (t.number, t.count)).collect();
        assert_eq!(read, own, "{}: its own XID log", g.name);
        assert!(g.logged_events.iter().all(|t| t.kind == "XID" && t.severity == Some(Health::Critical)));
        total += read.values().sum::<usize>();
    }
    assert_eq!(total, 800);
    let of = |id: &str| gpus.iter().find(|g| g.id.as_deref() == Some(id)).expect(id);
    let figures = |id: &str| of(id).logged_events.iter().map(|t| (t.number, t.count)).collect::<Vec<_>>();
    assert_eq!(figures("GPU_0"), vec![(45, 92), (149, 70), (94, 15), (145, 14), (137, 9)]);
    assert_eq!(figures("GPU_1"), vec![(45, 95), (149, 70), (94, 15), (145, 11), (137, 9)]);
    let newest = of("GPU_0").logged_events.iter().find(|t| t.number == 149).unwrap();
    assert_eq!(newest.newest.as_deref(), Some("2026-07-08T18:32:27+00:00"));
    // History, not the verdict: the BMC reports no condition active, every GPU OK.
    assert!(h.conditions.is_empty(), "{:?}", h.conditions);
    assert!(!h.reasons.iter().any(|r| r.contains("XID")), "{:?}", h.reasons);
}

async fn check_tree(name: &str) {
    let Some((_dir, root)) = unpack(name) else { return };
    let Some(st) = static_mockup(&root) else { return };
    let (pool, _) = pool_with(quick_options());
    let target = http_target(name, &st.1);
    let (h, _) = check_served(name, &root, &pool, target.clone()).await;
    // The inventory's GPU count against the GPUs the tree lists: as many, no fault; one more, one missing.
    let n = gpu_count(&h) as u32;
    if n > 0 {
        for (expected, missing) in [(n, None), (n + 1, Some(GpuCount { expected: n + 1, listed: n }))] {
            let mut t = target.clone();
            t.expected_gpus = Some(expected);
            let h = pool.bmc(t).health().await.unwrap();
            assert_eq!(h.gpus_missing, missing, "{name}: expecting {expected}");
            if missing.is_some() {
                assert_eq!(h.health, Health::Critical, "{name}: a missing GPU is critical");
            }
        }
    }
}

/// What must hold of the tree at `root` served at `target` (by sushy-static or the simulator's replay);
/// returns what `health` and `sel` read, for comparisons between the two.
async fn check_served(
    name: &str,
    root: &Path,
    pool: &BmcPool,
    target: BmcTarget,
) -> (HealthSummary, EventLog) {
    let bmc = pool.bmc(target.clone());

    let log = bmc.events(10).await.unwrap();
    let paths: Vec<String> = log.logs.iter().filter_map(|l| l.path.clone()).collect();
    let t = truth(root, &paths);

    // Every log read to its end, the newest entry shown is the tree's newest, every Critical entry reported.
    let all: Vec<_> =
        t.logs.iter().flat_map(|(l, es)| es.iter().map(move |e| (l.clone(), e.clone()))).collect();
    assert_eq!(log.total, Some(all.len()), "{name}: {:#?}", log.logs);
    let truncated: BTreeSet<String> =
        log.logs.iter().filter(|l| l.truncated).filter_map(|l| l.path.as_deref().map(norm)).collect();
    assert_eq!(truncated, t.partial, "{name}: logs not read to their end: {:#?}", log.logs);
    let newest = all
        .iter()
        .filter_map(|(_, (id, time, _))| time.map(|t| (t, id.parse::<u64>().unwrap_or(0), id.clone())))
        .max();
    match (newest, log.entries.first()) {
        (Some((time, _, id)), Some(e)) => {
            assert_eq!((Some(time), &id), (e.time, &e.id), "{name}: newest shown is not the tree's newest");
        }
        (None, _) => {}
        (Some(n), None) => panic!("{name}: newest {n:?} not shown"),
    }
    let critical: BTreeSet<(String, String)> =
        all.iter().filter(|(_, e)| e.2).map(|(l, e)| (l.clone(), e.0.clone())).collect();
    let path_of = |label: &Option<String>| {
        log.logs.iter().find(|s| Some(&s.id) == label.as_ref()).and_then(|s| s.path.clone()).map(|p| norm(&p))
    };
    let reported: BTreeSet<(String, String)> =
        log.critical.iter().map(|e| (path_of(&e.log).unwrap_or_default(), e.id.clone())).collect();
    assert_eq!(reported, critical, "{name}: Critical entries");

    let h = bmc.health().await.unwrap();
    // Every system listed.
    let listed: Vec<String> = h.systems.iter().map(|s| norm(s)).collect();
    let want: Vec<String> = t.systems.iter().map(|s| norm(s)).collect();
    assert_eq!(listed, want, "{name}: systems");
    if t.systems.len() > 1 {
        assert!(
            h.warnings.iter().any(|w| w.contains(&format!("this BMC has {} systems", t.systems.len()))),
            "{name}: {:?}",
            h.warnings
        );
    }
    // Every non-OK part reported, nothing else as failed.
    let parts: BTreeMap<String, Health> =
        h.components.iter().map(|c| (norm(&c.resource), c.health)).collect();
    assert_eq!(parts, t.bad_parts, "{name}: parts below the system");
    // Every GPU listed with its health.
    let gpus: BTreeMap<String, Option<Health>> = h
        .gpus
        .iter()
        .map(|g| (norm(&g.resource), Some(g.health).filter(|h| *h != Health::Unknown)))
        .collect();
    assert_eq!(gpus, t.gpus, "{name}: GPUs");
    // Every GPU driver event its baseboard's event log holds, on the GPU that entry names.
    let logged: BTreeMap<String, Tallies> = h
        .gpus
        .iter()
        .filter(|g| !g.logged_events.is_empty())
        .map(|g| {
            let t = g
                .logged_events
                .iter()
                .map(|x| ((x.kind.clone(), x.number), (x.count, x.newest.as_deref().and_then(parse_time))))
                .collect();
            (norm(&g.resource), t)
        })
        .collect();
    assert_eq!(logged, driver_events_truth(root), "{name}: GPU driver events logged");
    assert!(!h.warnings.iter().any(|w| w.contains("name no GPU")), "{name}: {:?}", h.warnings);
    // No absent or reading-less sensor counted; the verdict has its reasons.
    for s in &h.sensors {
        if matches!(s.state.as_deref(), Some("Absent" | "Disabled" | "StandbyOffline")) {
            assert_eq!((s.health, s.reading), (Health::Unknown, None), "{name}: {s:?}");
        }
    }
    assert_eq!(h.health == Health::Ok, h.reasons.is_empty(), "{name}: {} {:?}", h.health, h.reasons);
    assert_ne!(h.health, Health::Unknown, "{name}: {h:#?}");

    // `sweep` over every sensor reads no parts below the system, and judges what it reads by the same
    // verdict: the same words for the same things, the same health where the parts add nothing, never better
    // than the BMC's own rollup.
    let opts = SweepOptions { all_sensors: true, events: 3, ..SweepOptions::default() };
    let rows = pool.sweep(vec![target], &opts, |_, _| {}).await;
    let row = &rows[0];
    let swept = row.health.expect("swept health");
    let own = |a: &String| !a.starts_with("the BMC's own rollup");
    assert!(
        row.alerts.iter().filter(|a| own(a)).all(|a| h.reasons.contains(a)),
        "{name}: {row:#?} {:?}",
        h.reasons
    );
    if h.components.is_empty() && h.conditions.is_empty() {
        assert_eq!(swept, h.health, "{name}: {row:#?}");
    }
    if let Some(b) = h.bmc_rollup {
        assert_eq!(swept.worst(b), swept, "{name}: {row:#?}");
    }
    assert_eq!(row.events.first().map(|e| &e.id), log.entries.first().map(|e| &e.id), "{name}");
    (h, log)
}

macro_rules! trees {
    ($($test:ident => $tree:literal),* $(,)?) => {
        $(#[tokio::test]
        async fn $test() {
            check_tree($tree).await
        })*
    };
}

trees! {
    hpe_ilo5_dl325_gen10plus => "hpe-ilo5-dl325-gen10plus",
    hpe_ilo5_xl675d_a100 => "hpe-ilo5-xl675d-a100",
    hpe_ilo5_xl675d_a40 => "hpe-ilo5-xl675d-a40",
    hpe_cray_ex425 => "hpe-cray-ex425",
    hpe_cray_ex420 => "hpe-cray-ex420",
    hpe_cray_ex235n_a100 => "hpe-cray-ex235n-a100",
    hpe_cray_ex235a_mi250x => "hpe-cray-ex235a-mi250x",
    gigabyte_ami => "gigabyte-ami",
    intel_s2600 => "intel-s2600",
    openbmc_stock => "openbmc-stock",
    dell_idrac9_xr8620t => "dell-idrac9-xr8620t",
    supermicro_x10sdv => "supermicro-x10sdv",
    supermicro_gb300 => "supermicro-gb300",
    nvidia_gb300_node2 => "nvidia-gb300-node2",
}

/// A server whose BMC replays the captured tree at `root` (the simulator's replay flavour).
fn replay_server(name: &str, root: &Path) -> lifeline_sim::ServerSpec {
    let mut s = lifeline_sim::ServerSpec::bare(
        name,
        std::net::IpAddr::V4(lifeline_test_utils::unique_loopback()),
        "admin",
        "password",
    );
    s.bmc.replay = Some(root.to_owned());
    s
}

/// What two reads of one tree must agree on: everything `health` says but the BMC's name, and of each
/// warning what it is about (the rest names the server's address and quotes its own 404 page).
fn comparable(h: &HealthSummary) -> Value {
    let mut v = serde_json::to_value(h).unwrap();
    v.as_object_mut().unwrap().remove("bmc");
    let about = |w: &String| w.split(": ").next().unwrap_or(w).to_owned();
    v["warnings"] = h.warnings.iter().map(about).collect();
    v
}

fn gpu_count(h: &HealthSummary) -> usize {
    h.gpus.iter().filter(|g| g.role == "gpu").count()
}

/// The tree served by the simulator's replay flavour reads as sushy-static serving it reads (the same
/// verdict, reasons, parts, GPUs, systems, sensors and log), and the simulator's live parts work on it:
/// power status as captured, a confirmed power cycle with the ResetTypes the tree offers (the host's
/// power-on then the newest log entry), the same verdict after it, and `gpu-missing` taking one GPU away.
async fn check_replay(name: &str) {
    use lifeline_sim::{Fault, Fleet, FleetSpec, SimOptions};
    let Some((_dir, root)) = unpack(name) else { return };
    let Some(st) = static_mockup(&root) else { return };
    let (pool, _) = pool_with(quick_options());
    let (want, want_log) = check_served(name, &root, &pool, http_target(name, &st.1)).await;

    let spec = FleetSpec { servers: vec![replay_server(name, &root)], switches: vec![] };
    let fleet = Fleet::start(spec, SimOptions::for_tests()).await.expect("replay fleet");
    let sim = Sim { fleet };
    let target = sim.target(name, lifeline_types::BmcProtocol::Redfish);
    let pool = pin_pool();
    let (h, log) = check_served(name, &root, &pool, target.clone()).await;
    assert_eq!(comparable(&h), comparable(&want), "{name}: replay and sushy-static disagree");
    let ids = |l: &EventLog| l.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&log), ids(&want_log), "{name}");

    let bmc = pool.bmc(target.clone());
    assert_eq!(bmc.power_state().await.unwrap(), lifeline_types::PowerState::On, "{name}: captured On");
    let r = bmc.power(lifeline_types::PowerAction::Cycle, None).await.unwrap();
    assert!(r.confirmed, "{name}: {r:#?}");
    assert_eq!(r.observed, lifeline_types::PowerState::On, "{name}: {r:#?}");
    let after = bmc.events(10).await.unwrap();
    let newest = after.entries.first().expect("an entry");
    assert!(!ids(&want_log).contains(&newest.id), "{name}: the power-on is the newest entry: {newest:?}");
    assert!(newest.time > want_log.entries.first().and_then(|e| e.time), "{name}: {newest:?}");
    assert_eq!(
        comparable(&bmc.health().await.unwrap()),
        comparable(&want),
        "{name}: verdict after the cycle"
    );
    eprintln!(
        "{name} replayed: health {} ({} reasons, {} parts, {} GPUs), {} log entries, newest {}; \
         cycle by {:?}, then newest {} {:?}",
        h.health,
        h.reasons.len(),
        h.components.len(),
        gpu_count(&h),
        log.total.unwrap_or(0),
        want_log.entries.first().map_or("none", |e| e.id.as_str()),
        r.commands,
        newest.id,
        newest.message,
    );

    if gpu_count(&want) > 0 {
        let n = gpu_count(&want) as u32;
        // The inventory's count against the GPUs the BMC lists: all there, no fault.
        let mut counted = target.clone();
        counted.expected_gpus = Some(n);
        let bmc = pool.bmc(counted.clone());
        assert_eq!(bmc.health().await.unwrap().gpus_missing, None, "{name}");
        sim.fleet.devices().inject(name, &Fault::GpuMissing { gpu: 0 }).await.unwrap();
        let h = bmc.health().await.unwrap();
        assert_eq!(h.gpus_missing, Some(GpuCount { expected: n, listed: n - 1 }), "{name}");
        assert_eq!(h.health, Health::Critical, "{name}");
        let why = format!("GPUs: {} of {n} expected listed by the BMC (1 missing)", n - 1);
        assert!(h.reasons.contains(&why), "{name}: {:?}", h.reasons);
        // A sweep reads the GPUs of a target with a count and judges them the same way.
        let opts = SweepOptions { events: 3, ..SweepOptions::default() };
        let row = &pool.sweep(vec![counted], &opts, |_, _| {}).await[0];
        assert_eq!(row.gpus, h.gpus_missing, "{name}: {row:#?}");
        assert_eq!(row.health, Some(Health::Critical), "{name}: {row:#?}");
        assert!(row.alerts.contains(&why), "{name}: {row:#?}");
        assert_eq!(gpu_count(&h), gpu_count(&want) - 1, "{name}: {:#?}", h.gpus);
        let gone: Vec<_> =
            want.gpus.iter().filter(|g| !h.gpus.iter().any(|x| x.resource == g.resource)).collect();
        assert_eq!(gone.len(), 1, "{name}: {gone:#?}");
    }
    sim.fleet.shutdown().await;
}

#[tokio::test]
async fn replay_hpe_ilo5_dl325_gen10plus() {
    check_replay("hpe-ilo5-dl325-gen10plus").await
}

#[tokio::test]
async fn replay_hpe_ilo5_xl675d_a100_hgx() {
    check_replay("hpe-ilo5-xl675d-a100").await
}

#[tokio::test]
async fn replay_supermicro_x10sdv() {
    check_replay("supermicro-x10sdv").await
}

#[tokio::test]
async fn replay_dell_idrac9_xr8620t() {
    check_replay("dell-idrac9-xr8620t").await
}

#[tokio::test]
async fn replay_nvidia_gb300_node2() {
    check_replay("nvidia-gb300-node2").await
}
