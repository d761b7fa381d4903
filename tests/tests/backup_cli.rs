//! `lifeline backup …` against switches served by `lifeline sim`, through the SQL store end to end.

use std::net::Ipv4Addr;

use lifeline_test_utils::{SimProcess, output_json as json, output_text as text, unique_loopback};
use serde_json::Value;

const SWITCHES: &[(&str, &str)] =
    &[("leaf-a", "sonic"), ("leaf-spare", "sonic"), ("stor-1", "eos"), ("fe-1", "cumulus"), ("oob-1", "ios")];

fn inventory(ips: &[Ipv4Addr], port: u16) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for ((name, platform), ip) in SWITCHES.iter().zip(ips) {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{name}\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
             platform = \"{platform}\"\nmanagement = {{ address = \"{ip}\", port = {port} }}\n"
        ));
    }
    t
}

fn start() -> SimProcess {
    let ips: Vec<Ipv4Addr> = SWITCHES.iter().map(|_| unique_loopback()).collect();
    let offset = 21000;
    SimProcess::start(&inventory(&ips, 22 + offset), offset, &[("LIFELINE_SWITCH_PASSWORD", "sw-pass")])
}

fn run(sim: &SimProcess, args: &[&str]) -> std::process::Output {
    sim.lifeline(args)
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["switch"].as_str().unwrap().to_owned(), r["outcome"].as_str().unwrap().to_owned()))
        .collect()
}

fn latest_blob(sim: &SimProcess, switch: &str) -> String {
    let v = json(&run(sim, &["backup", "history", switch, "--json"]));
    v.as_array().unwrap().last().unwrap()["sha256"].as_str().unwrap().to_owned()
}

#[test]
fn backup_diff_restore_and_host_key_pinning() {
    let sim = start();

    // First run: a version per platform, raw configs sealed for restore.
    let o = run(&sim, &["backup", "run", "--keep-raw", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(outcomes(&json(&o)).iter().all(|(_, r)| r == "ok"), "{}", text(&o));
    let sealed = sim.data.join("sealed");
    assert!(sealed.join("oob-1").is_dir(), "raw copies are sealed on disk");
    let o = run(&sim, &["backup", "run", "--json"]);
    assert!(outcomes(&json(&o)).iter().all(|(_, r)| r == "unchanged"), "{}", text(&o));

    // A change made through the simulator appears as exactly that diff.
    sim.fault("stor-1", "config-change");
    let o = run(&sim, &["backup", "run", "stor-1", "--keep-raw", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("stor-1".to_owned(), "ok".to_owned())]);
    let d = json(&run(&sim, &["backup", "diff", "stor-1", "--json"]));
    assert_eq!((d["from"].as_u64(), d["to"].as_u64()), (Some(1), Some(2)));
    let diff = d["diff"].as_str().unwrap();
    let minus: Vec<&str> = diff.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).collect();
    let plus: Vec<&str> = diff.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).collect();
    assert_eq!((minus.len(), plus.len()), (1, 1), "{diff}");

    // Restore to a spare: its running config becomes the version.
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("changes to apply"), "{}", text(&o));
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare"]);
    assert_eq!(o.status.code(), Some(2), "no --yes and no terminal: refused");
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare", "--yes", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["detail"]["verified"], true);
    let o = run(&sim, &["backup", "run", "leaf-spare", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("leaf-spare".to_owned(), "ok".to_owned())]);
    assert_eq!(
        latest_blob(&sim, "leaf-spare"),
        latest_blob(&sim, "leaf-a"),
        "spare now runs leaf-a's config"
    );

    // A changed host key is refused, naming both fingerprints, until re-pinned.
    sim.fault("oob-1", "ssh-key-change");
    let o = run(&sim, &["backup", "run", "oob-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(text(&o).matches("sha256:").count(), 2, "{}", text(&o));
    let look = run(&sim, &["backup", "trust", "oob-1", "--json"]);
    assert_eq!(look.status.code(), Some(1), "a look re-pins nothing: {}", text(&look));
    let fp = lifeline_test_utils::presented_fingerprint(&look);
    let o = run(&sim, &["backup", "trust", "oob-1", "--fingerprint", &fp]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("re-pinned"), "{}", text(&o));
    assert_eq!(run(&sim, &["backup", "run", "oob-1"]).status.code(), Some(0));

    // Git export: one file per switch, one commit per version.
    let git = sim.data.join("git");
    let o = run(&sim, &["backup", "export", "--git", git.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["commits"], 7, "5 first versions + stor-1 v2 + leaf-spare v2");
    for (name, _) in SWITCHES {
        assert!(git.join(name).exists(), "{name} exported");
    }

    // Audited.
    let v = json(&run(&sim, &["audit", "log", "--json", "--limit", "100"]));
    let actions: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["action"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert!(actions.contains(&("backup.restore", "ok")), "{actions:?}");
    assert!(actions.contains(&("backup.trust", "ok")), "{actions:?}");
    assert!(actions.contains(&("backup.run", "failed")), "{actions:?}");
}

/// A Cumulus switch managed by ifupdown2 and FRR files (inventory `config-source = "files"`): backed up as
/// its two files, secrets in frr.conf masked, a changed line seen as that diff, and restored from the
/// sealed raw copy so that the switch's files are again the first version's (the backup after it equals
/// version 1).
#[test]
fn cumulus_managed_by_files_is_backed_up_diffed_and_restored() {
    let mut inv = inventory(&[], 0);
    inv.push_str(&format!(
        "\n[[device]]\nname = \"fe-files\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"frontend\"\ntier = \"leaf\"\n\
         platform = \"cumulus\"\nconfig-source = \"files\"\nmanagement = {{ address = \"{}\", port = 21122 }}\n",
        unique_loopback()
    ));
    let sim = SimProcess::start(&inv, 21100, &[("LIFELINE_SWITCH_PASSWORD", "sw-pass")]);
    let o = run(&sim, &["backup", "run", "fe-files", "--keep-raw", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("fe-files".to_owned(), "ok".to_owned())], "{}", text(&o));

    let shown = text(&run(&sim, &["backup", "show", "fe-files"]));
    assert!(shown.contains("# lifeline-file: /etc/network/interfaces"), "{shown}");
    assert!(shown.contains("# lifeline-file: /etc/frr/frr.conf"), "{shown}");
    assert!(shown.contains("iface swp8") && shown.contains("router bgp"), "{shown}");
    assert!(!shown.contains("bgp-pass-") && !shown.contains("ospf-key-"), "FRR secrets masked: {shown}");

    sim.fault("fe-files", "config-change");
    let o = run(&sim, &["backup", "run", "fe-files", "--keep-raw", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("fe-files".to_owned(), "ok".to_owned())], "{}", text(&o));
    let d = json(&run(&sim, &["backup", "diff", "fe-files", "--json"]));
    let diff = d["diff"].as_str().unwrap();
    let changed: Vec<&str> = diff
        .lines()
        .filter(|l| {
            (l.starts_with('-') && !l.starts_with("---")) || (l.starts_with('+') && !l.starts_with("+++"))
        })
        .collect();
    assert_eq!(changed.len(), 2, "one frr.conf line moved: {diff}");
    assert!(
        changed.iter().all(|l| l.contains("ip route 10.255.") && l.contains("nexthop-vrf mgmt")),
        "{diff}"
    );

    let v1 = json(&run(&sim, &["backup", "history", "fe-files", "--json"]))[0]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = run(&sim, &["backup", "restore", "fe-files", "--version", "1", "--yes", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["detail"]["verified"], true, "{}", text(&o));
    let applied: Vec<_> =
        sim.actions("fe-files").into_iter().filter(|a| a["action"] == "config-apply").collect();
    assert_eq!(applied.len(), 1, "ifreload ran once: {applied:?}");
    let o = run(&sim, &["backup", "run", "fe-files", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("fe-files".to_owned(), "ok".to_owned())], "{}", text(&o));
    assert_eq!(latest_blob(&sim, "fe-files"), v1, "the switch's files are version 1's again");
}
