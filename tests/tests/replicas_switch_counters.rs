//! Switch counters with three `lifeline serve` replicas on one PostgreSQL database, each with
//! `[server] switch-counters-interval = "2s"`: every switch is read once per interval across the
//! replicas, not once per replica (each read is kept as a `switch-counters` observation naming its slot
//! and its replica; the slot is the unit of work the replicas claim), and a flap between two reads made
//! by different replicas is still seen (the next reader compares with the previous read kept in the
//! store, not with its own last one).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use lifeline_test_utils::{
    ServeProcess, SimProcess, create_database_blocking, pg_text_rows, postgres_url, unique_loopback,
    wait_until,
};

const SWITCHES: [&str; 3] = ["leaf-a", "leaf-b", "leaf-c"];
const INTERVAL_S: i64 = 2;

fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for leaf in SWITCHES {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\n\
             tier = \"leaf\"\nplatform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
            unique_loopback(),
            22 + offset
        ));
    }
    SimProcess::start(
        &t,
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

/// Every kept read: (switch, slot ms, replica).
fn reads(url: &str) -> Vec<(String, i64, String)> {
    pg_text_rows(
        url,
        "SELECT device, value_json FROM observations WHERE kind = 'switch-counters' ORDER BY id",
    )
    .into_iter()
    .map(|r| {
        let v: serde_json::Value = serde_json::from_str(r[1].as_deref().unwrap_or("{}")).unwrap();
        let slot = v["slot"].as_i64().expect("a kept read names its slot");
        (r[0].clone().unwrap_or_default(), slot, v["replica"].as_str().unwrap_or_default().to_owned())
    })
    .collect()
}

#[test]
fn three_replicas_read_each_switch_once_per_interval() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let sim = fleet(26900);
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\n\
         switch-counters-interval = \"{INTERVAL_S}s\"\nswitch-counters-timeout = \"20s\"\n"
    );
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

    // Twelve intervals with all three up.
    let first = reads(&db.url).iter().map(|r| r.1).max().unwrap_or(0);
    std::thread::sleep(Duration::from_secs(12 * INTERVAL_S as u64));
    let all = reads(&db.url);
    let window: Vec<&(String, i64, String)> = all.iter().filter(|r| r.1 > first).collect();
    let mut per: BTreeMap<(&str, i64), Vec<&str>> = BTreeMap::new();
    for (sw, slot, rep) in &window {
        per.entry((sw.as_str(), *slot)).or_default().push(rep.as_str());
    }
    let twice: Vec<_> = per.iter().filter(|(_, r)| r.len() > 1).collect();
    assert!(twice.is_empty(), "slots read by more than one replica (or twice): {twice:#?}");
    let replicas_seen: BTreeSet<&str> = window.iter().map(|r| r.2.as_str()).collect();
    eprintln!(
        "{} reads in the window by {} replica(s): {replicas_seen:?}",
        window.len(),
        replicas_seen.len()
    );
    for sw in SWITCHES {
        let slots: Vec<i64> = per.keys().filter(|(s, _)| *s == sw).map(|(_, slot)| *slot).collect();
        // Each slot is one interval on the clock; a slot or two may be missed around the edges of the
        // window (a read slower than its interval), never read twice.
        assert!(
            (9..=13).contains(&slots.len()),
            "{sw}: {} slots read in 12 intervals: {slots:?}",
            slots.len()
        );
        assert!(slots.iter().all(|s| s % (INTERVAL_S * 1000) == 0), "{sw}: {slots:?}");
    }
    // Every claim of a slot done once, by the replica whose read is kept.
    let done = pg_text_rows(
        &db.url,
        "SELECT key, holder, outcome FROM replica_work WHERE key LIKE 'slot:counters:%' AND done_at IS NOT NULL",
    );
    for ((sw, slot), rep) in &per {
        let key = format!("slot:counters:{sw}@{slot}");
        let row = done.iter().find(|r| r[0].as_deref() == Some(key.as_str()));
        let row = row.unwrap_or_else(|| panic!("{key} not marked done"));
        assert_eq!((row[1].as_deref(), row[2].as_deref()), (Some(rep[0]), Some("ok")), "{key}");
    }

    // A flap between two reads is evidence whichever replicas made them: leaf-b's own fault opens once.
    sim.fault("leaf-b", "link-flap=Ethernet8");
    let fault = wait_until("leaf-b's link-flap fault", Duration::from_secs(30), || {
        pg_text_rows(
            &db.url,
            "SELECT device, message FROM faults WHERE kind = 'switch-link-flap' AND state <> 'resolved'",
        )
        .into_iter()
        .next()
    });
    assert_eq!(fault[0].as_deref(), Some("leaf-b"), "{fault:?}");
    assert!(fault[1].as_deref().unwrap_or("").contains("link-flap on Ethernet8"), "{fault:?}");
    let open = pg_text_rows(&db.url, "SELECT count(*)::text FROM faults WHERE kind = 'switch-link-flap'");
    assert_eq!(open[0][0].as_deref(), Some("1"), "one fault, not one per replica");
}
