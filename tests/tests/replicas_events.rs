//! BMC events with two `lifeline serve` replicas on one PostgreSQL database, `[server] events = "push"` on
//! both (each with its own receiver): each Redfish BMC is subscribed by exactly one replica (its
//! `events:NAME` claim's holder; the BMC's one Lifeline subscription points at that replica's receiver,
//! and it is subscribed once, not over and over by both), and when the holder of some is SIGKILLed, the
//! other replica takes them over and re-subscribes them to its own receiver.

#[path = "runbook_support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use lifeline_test_utils::{
    ServeProcess, create_database_blocking, output_json as json, pg_text_rows, postgres_url, unique_loopback,
    wait_until,
};
use support::*;

const NODES: [&str; 6] = ["ev-node-1", "ev-node-2", "ev-node-3", "ev-node-4", "ev-node-5", "ev-node-6"];

/// `server (pid PID on HOST) #TAG` → PID.
fn pid_of(holder: &str) -> u32 {
    holder.split("(pid ").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// BMC → holder pid of its `events:` claim.
fn holders(url: &str) -> BTreeMap<String, u32> {
    pg_text_rows(url, "SELECT key, holder FROM replica_work WHERE key LIKE 'events:%' AND done_at IS NULL")
        .into_iter()
        .map(|r| {
            let key = r[0].clone().unwrap_or_default();
            (key.trim_start_matches("events:").to_owned(), pid_of(&r[1].clone().unwrap_or_default()))
        })
        .collect()
}

/// The destinations of Lifeline's subscriptions on one BMC.
fn our_destinations(sim: &lifeline_test_utils::SimProcess, node: &str) -> Vec<String> {
    let o = sim.lifeline(&["bmc", "subscribe", node, "--list", "--json"]);
    json(&o)[0]["subscriptions"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter(|x| x["ours"] == true)
                .map(|x| x["destination"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `bmc.subscribe` audit rows per BMC.
fn subscribes(url: &str) -> BTreeMap<String, usize> {
    pg_text_rows(
        url,
        "SELECT target, count(*)::text FROM audit_log WHERE action = 'bmc.subscribe' GROUP BY target",
    )
    .into_iter()
    .map(|r| (r[0].clone().unwrap_or_default(), r[1].as_deref().unwrap_or("0").parse().unwrap_or(0)))
    .collect()
}

#[test]
fn each_bmc_has_one_event_subscriber_and_a_killed_one_is_taken_over() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let fleet = nodes(&NODES.map(|n| (n, "r1", "redfish")));
    let sim = start(&fleet, 26500);
    let db_args = ["--database-url", db.url.as_str()];
    // Each replica its own receiver (the config file is read at start, so the second write is the
    // second replica's).
    let ips: Vec<String> = (0..2).map(|_| unique_loopback().to_string()).collect();
    let config = |ip: &str| {
        format!(
            "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"{ip}:0\"\n"
        )
    };
    let mut replicas: Vec<ServeProcess> =
        ips.iter().map(|ip| ServeProcess::start_args(&sim, &config(ip), &db_args)).collect();
    let pids: Vec<u32> = replicas.iter().map(ServeProcess::pid).collect();
    // A destination names its replica by the receiver's address (`http://IP:PORT/...`).
    let receiver_of = |pid: u32| format!("//{}:", ips[pids.iter().position(|p| *p == pid).unwrap()]);

    // Both replicas see each other; then the claims settle (the first replica started alone and took
    // every BMC; the second one's share moves to it): every BMC claimed by one replica and subscribed to
    // that replica's receiver only, the same in two looks a few ticks apart.
    wait_until("both replicas live", Duration::from_secs(60), || {
        replicas
            .iter()
            .all(|r| {
                let m = lifeline_test_utils::http_get(&format!("http://{}/metrics", r.addr));
                m.lines().any(|l| l.trim() == "lifeline_replicas 2")
            })
            .then_some(())
    });
    let settled = |h: &BTreeMap<String, u32>| {
        h.len() == NODES.len()
            && h.values().all(|p| pids.contains(p))
            && h.iter().all(|(node, pid)| {
                let d = our_destinations(&sim, node);
                d.len() == 1 && d[0].contains(&receiver_of(*pid))
            })
    };
    let held = wait_until("every BMC's events claimed and subscribed", Duration::from_secs(90), || {
        let h = holders(&db.url);
        if !settled(&h) {
            return None;
        }
        std::thread::sleep(Duration::from_secs(8));
        (holders(&db.url) == h && settled(&h)).then_some(h)
    });
    eprintln!("holders: {held:?} (replicas {pids:?})");
    // Both replicas stay up for a while: nobody subscribes a BMC again (no tug of war).
    let base = subscribes(&db.url);
    assert_eq!(base.len(), NODES.len(), "{base:?}");
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(subscribes(&db.url), base, "a BMC subscribed again with both replicas up");
    assert_eq!(holders(&db.url), held, "claims moved while both replicas lived");

    // Kill the holder of the most BMCs (any, if they are split evenly): its BMCs move to the other.
    let mut per: BTreeMap<u32, usize> = BTreeMap::new();
    for p in held.values() {
        *per.entry(*p).or_default() += 1;
    }
    let victim_pid = *per.iter().max_by_key(|(_, n)| **n).unwrap().0;
    let victim = pids.iter().position(|p| *p == victim_pid).unwrap();
    let heir_pid = pids[1 - victim];
    let moved: Vec<String> = held.iter().filter(|(_, p)| **p == victim_pid).map(|(n, _)| n.clone()).collect();
    replicas[victim].kill9();
    eprintln!("SIGKILL replica {victim_pid} holding {moved:?}");
    wait_until("the killed replica's BMCs taken over and re-subscribed", Duration::from_secs(60), || {
        let h = holders(&db.url);
        let ok = h.len() == NODES.len()
            && h.values().all(|p| *p == heir_pid)
            && moved.iter().all(|node| {
                let d = our_destinations(&sim, node);
                d.len() == 1 && d[0].contains(&receiver_of(heir_pid))
            });
        ok.then_some(())
    });
    let after = subscribes(&db.url);
    for node in NODES {
        let want = base[node] + usize::from(moved.iter().any(|m| m == node));
        assert_eq!(after.get(node), Some(&want), "{node}: {after:?} (before the kill {base:?})");
    }
}
