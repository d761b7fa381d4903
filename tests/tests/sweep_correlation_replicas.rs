//! Sweep faults correlated across replicas: three `lifeline serve` replicas on one PostgreSQL database
//! share the BMCs out between their sweeps, with a fault policy that answers any `bmc-unreachable` (and,
//! through `*`, any fault) with the `bmc-unreachable` runbook automatically.
//!
//! Every BMC behind one OOB switch stops answering: each replica sees only its share of them (a third or
//! so of the switch's eight, below the score's half), so a decision per replica would make eight node
//! faults and eight node runbooks. Decided over every replica's sweep of a slot: ONE open fault on the
//! switch listing all eight, no member fault, no run and no power action on any member; when they answer
//! again the round that reads them all clear (across the replicas) resolves it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use lifeline_test_utils::{
    ServeProcess, SimProcess, create_database_blocking, pg_text_rows, postgres_url, unique_loopback,
    wait_until,
};

const BEHIND_A: u16 = 8;
const NODES: u16 = 10;

/// node-1..node-8 cabled to oob-a, node-9 and node-10 to oob-b; all in rack r1 on one PDU.
fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for sw in ["oob-a", "oob-b"] {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{sw}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"oob\"\nplatform = \"sonic\"\n\
             management = {{ address = \"{}\", port = {} }}\n",
            unique_loopback(),
            22 + offset
        ));
    }
    for n in 1..=NODES {
        let sw = if n <= BEHIND_A { "oob-a" } else { "oob-b" };
        t.push_str(&format!(
            "\n[[device]]\nname = \"node-{n}\"\nrole = \"head-node\"\nrack = \"r1\"\npdus = [\"pdu-r1\"]\n\
             oob-switch = \"{sw}\"\noob-port = \"Gi1/0/{n}\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n",
            unique_loopback(),
            623 + offset,
        ));
    }
    SimProcess::start(
        &t,
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

const CONFIG: &str = "[server]\nsweep-interval = \"3s\"\nconsole-logging = false\n\n\
    [[fault-policy]]\nkind = \"bmc-unreachable\"\nrunbook = \"bmc-unreachable\"\nmode = \"auto\"\n\n\
    [[fault-policy]]\nkind = \"*\"\nrunbook = \"bmc-unreachable\"\nmode = \"auto\"\n";

/// Unresolved faults: (kind, device, detail).
fn unresolved(url: &str) -> Vec<(String, String, serde_json::Value)> {
    pg_text_rows(url, "SELECT kind, device, detail_json FROM faults WHERE state <> 'resolved' ORDER BY id")
        .into_iter()
        .map(|r| {
            let detail = serde_json::from_str(r[2].as_deref().unwrap_or("{}")).unwrap();
            (r[0].clone().unwrap_or_default(), r[1].clone().unwrap_or_default(), detail)
        })
        .collect()
}

/// The kept sweep batches: (replica, devices it found unreachable).
fn batches(url: &str) -> Vec<(String, Vec<String>)> {
    pg_text_rows(url, "SELECT value_json FROM observations WHERE kind = 'sweep-batch' ORDER BY id")
        .into_iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(r[0].as_deref().unwrap_or("{}")).unwrap();
            let found = v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["unit"]["device"].as_str().unwrap().to_owned())
                .collect();
            (v["replica"].as_str().unwrap().to_owned(), found)
        })
        .collect()
}

fn count(url: &str, sql: &str) -> i64 {
    pg_text_rows(url, sql)[0][0].as_deref().unwrap_or("0").parse().unwrap()
}

#[test]
fn an_oob_switch_whose_bmcs_are_swept_by_three_replicas_is_one_fault() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let sim = fleet(27300);
    let rb = lifeline_test_utils::workspace_root().join("runbooks");
    let config = format!("[runbooks]\ndir = \"{}\"\n\n{CONFIG}", rb.display());
    let db_args = ["--database-url", db.url.as_str()];
    let replicas: Vec<ServeProcess> =
        (0..3).map(|_| ServeProcess::start_args(&sim, &config, &db_args)).collect();
    wait_until("three replicas live", Duration::from_secs(60), || {
        replicas
            .iter()
            .all(|r| {
                let m = lifeline_test_utils::http_get(&format!("http://{}/metrics", r.addr));
                m.lines().any(|l| l.trim() == "lifeline_replicas 3")
            })
            .then_some(())
    });
    // A round decided with all three up, nothing open.
    let decided = count(&db.url, "SELECT count(*)::text FROM observations WHERE kind = 'sweep-decision'");
    wait_until("a round decided with all three replicas", Duration::from_secs(30), || {
        (count(&db.url, "SELECT count(*)::text FROM observations WHERE kind = 'sweep-decision'")
            > decided + 1)
            .then_some(())
    });
    assert!(unresolved(&db.url).is_empty(), "{:#?}", unresolved(&db.url));

    let members: Vec<String> = (1..=BEHIND_A).map(|n| format!("node-{n}")).collect();
    for n in &members {
        sim.fault(n, "bmc-unresponsive");
    }
    let (_, _, detail) = wait_until("one fault on oob-a", Duration::from_secs(120), || {
        unresolved(&db.url).into_iter().find(|f| f.0 == "shared-bmc-unreachable" && f.1 == "oob-a")
    });
    let listed: BTreeSet<&str> =
        detail["members"].as_array().unwrap().iter().map(|m| m["device"].as_str().unwrap()).collect();
    assert_eq!(listed, members.iter().map(String::as_str).collect(), "{detail:#}");
    assert_eq!(detail["score"]["fraction"], 1.0, "{detail:#}");

    // The members were found by more than one replica (each replica's share of oob-a alone, decided
    // alone, is either below the score — node faults — or a fault listing only its share).
    let mut by_replica: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (replica, found) in batches(&db.url) {
        by_replica.entry(replica).or_default().extend(found);
    }
    let finders: Vec<(&String, &BTreeSet<String>)> =
        by_replica.iter().filter(|(_, f)| !f.is_empty()).collect();
    eprintln!("members found per replica: {finders:#?}");
    assert!(finders.len() >= 2, "the members were swept by one replica only: {finders:#?}");

    // Several rounds later: still one fault, no member fault, no run and no action on any member.
    std::thread::sleep(Duration::from_secs(12));
    let open = unresolved(&db.url);
    assert_eq!(open.len(), 1, "{open:#?}");
    assert_eq!(count(&db.url, "SELECT count(*)::text FROM faults WHERE device LIKE 'node-%'"), 0);
    assert_eq!(count(&db.url, "SELECT count(*)::text FROM runbook_runs"), 0, "no runbook on any device");
    for n in &members {
        assert!(sim.actions(n).is_empty(), "{n}: {:#?}", sim.actions(n));
    }
    assert_eq!(
        count(&db.url, "SELECT count(*)::text FROM faults WHERE kind = 'shared-bmc-unreachable'"),
        1,
        "one fault, not one per replica or per round"
    );

    // They answer again: the round that reads all eight clear, across the replicas, resolves it.
    for n in &members {
        sim.fault(n, "clear");
    }
    wait_until("oob-a's fault resolved", Duration::from_secs(90), || {
        unresolved(&db.url).is_empty().then_some(())
    });
    assert_eq!(
        count(
            &db.url,
            "SELECT count(*)::text FROM faults WHERE kind = 'shared-bmc-unreachable' AND state = 'resolved'"
        ),
        1
    );
}

/// No fault policy: a runbook answering the lone BMC's fault would act on the simulator.
const CONFIG_NO_POLICY: &str = "[server]\nsweep-interval = \"3s\"\nconsole-logging = false\n";

/// The kept decisions: (slot, replica id), oldest first.
fn decisions(url: &str) -> Vec<(i64, String)> {
    pg_text_rows(url, "SELECT value_json FROM observations WHERE kind = 'sweep-decision' ORDER BY id")
        .into_iter()
        .map(|r| {
            let v: serde_json::Value = serde_json::from_str(r[0].as_deref().unwrap_or("{}")).unwrap();
            (v["slot_ms"].as_i64().unwrap(), v["replica"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The replica that decides the sweep rounds dies after it decided a BMC alone; the replica that takes over
/// rebuilds the correlation from the store, so when the BMC's switch's other BMC goes dark the switch's
/// fault links the lone BMC's fault. This checks the linking across a decider's death end to end; it does
/// not isolate the rebuild: the successor may have decided some of the earlier rounds itself (deciders
/// alternate while the preferred one is slow) and then holds the lone BMC already — with the rebuild
/// switched off it passed so. `correlate::rebuild`'s unit tests are the ones that fail without it.
#[test]
fn a_new_decider_links_the_bmc_the_dead_one_decided_alone() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let sim = fleet(27800);
    let db_args = ["--database-url", db.url.as_str()];
    let mut replicas: Vec<ServeProcess> =
        (0..3).map(|_| ServeProcess::start_args(&sim, CONFIG_NO_POLICY, &db_args)).collect();
    wait_until("three replicas live", Duration::from_secs(60), || {
        replicas
            .iter()
            .all(|r| {
                let m = lifeline_test_utils::http_get(&format!("http://{}/metrics", r.addr));
                m.lines().any(|l| l.trim() == "lifeline_replicas 3")
            })
            .then_some(())
    });

    // node-9, one of oob-b's two BMCs, goes dark alone: its own fault, decided by the current decider.
    sim.fault("node-9", "bmc-unresponsive");
    let (lone_id, _) = wait_until("node-9's own fault", Duration::from_secs(60), || {
        pg_text_rows(
            &db.url,
            "SELECT id::text, state FROM faults WHERE kind = 'bmc-unreachable' AND device = 'node-9'",
        )
        .into_iter()
        .next()
        .map(|r| (r[0].clone().unwrap().parse::<i64>().unwrap(), r[1].clone()))
    });
    // The replica that decided the newest slot (its id names its pid) is killed.
    let (slot, decider) = decisions(&db.url).pop().expect("a decision");
    let i = replicas
        .iter()
        .position(|r| decider.contains(&format!("pid {} ", r.pid())))
        .unwrap_or_else(|| panic!("no replica is {decider}"));
    replicas[i].kill9();
    let (_, next) = wait_until("another replica decides", Duration::from_secs(90), || {
        decisions(&db.url).into_iter().rev().find(|(s, r)| *s > slot && *r != decider)
    });
    eprintln!("decider {decider} killed; {next} decides");

    // node-10 goes dark too: oob-b (2 of 2) is blamed, and node-9's own fault is linked to it.
    sim.fault("node-10", "bmc-unresponsive");
    let (_, _, detail) = wait_until("one fault on oob-b", Duration::from_secs(60), || {
        unresolved(&db.url).into_iter().find(|f| f.0 == "shared-bmc-unreachable" && f.1 == "oob-b")
    });
    let listed: BTreeSet<&str> =
        detail["members"].as_array().unwrap().iter().map(|m| m["device"].as_str().unwrap()).collect();
    assert_eq!(listed, BTreeSet::from(["node-10", "node-9"]), "{detail:#}");
    assert_eq!(detail["linked_faults"], serde_json::json!([lone_id]), "{detail:#}");
    assert_eq!(
        count(&db.url, "SELECT count(*)::text FROM faults WHERE device = 'node-10'"),
        0,
        "node-10 is a member, not a fault of its own"
    );
}
