//! `lifeline media insert|eject|show` as an operator types them, against a `lifeline sim` process: two
//! Redfish BMCs of different flavours (the collection under the System, and under the Manager) and one
//! IPMI-only BMC, which says in words that it has no virtual media.

use lifeline_test_utils::{SimProcess, output_json as json, output_text, unique_loopback};

fn start_sim() -> SimProcess {
    lifeline_test_utils::three_flavour_sim()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const IMAGE: &str = "https://10.9.0.1/images/ubuntu-24.04-autoinstall.iso";

#[test]
fn media_insert_boot_once_show_eject() {
    let sim = start_sim();
    let o = sim.lifeline(&["media", "show", "n1", "n2"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    insta::assert_snapshot!("media_show_empty", stdout(&o));

    // Without --yes and without a terminal: refused, nothing sent.
    let o = sim.lifeline(&["media", "insert", "n1", IMAGE]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("refusing without --yes"), "{}", output_text(&o));
    // A bad URL is a usage error naming what is wrong.
    let o = sim.lifeline(&["media", "insert", "n1", "ftp://h/x.iso", "--yes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(output_text(&o).contains("scheme `ftp`"), "{}", output_text(&o));

    let o = sim.lifeline(&["media", "insert", "n1", "n2", IMAGE, "--boot-once", "--yes", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    for (i, slot) in [(0, "Cd"), (1, "CD")] {
        assert_eq!(v[i]["confirmed"], true, "{v:#}");
        assert_eq!(v[i]["slot"], slot, "{v:#}");
        assert_eq!(v[i]["now"]["image"], IMAGE, "{v:#}");
        assert_eq!(
            (v[i]["boot"]["now"]["bmc_value"].as_str(), v[i]["boot"]["now"]["enabled"].as_str()),
            (Some("Cd"), Some("once")),
            "{v:#}"
        );
    }
    let v = json(&sim.lifeline(&["boot", "show", "n2", "--json"]));
    assert_eq!(v[0]["settings"]["target"], "cdrom", "{v:#}");

    let o = sim.lifeline(&["media", "show", "n1", "n2"]);
    insta::assert_snapshot!("media_show_inserted", stdout(&o));
    let v = json(&sim.lifeline(&["media", "show", "n2", "--json"]));
    assert_eq!(v[0]["collection"]["owner"], "manager", "{v:#}");
    assert_eq!(v[0]["slots"][0]["inserted"], true, "{v:#}");

    // IPMI only: not supported, in words; exit 1.
    let o = sim.lifeline(&["media", "show", "n3"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(stdout(&o).contains("virtual media is not supported over IPMI"), "{}", output_text(&o));

    let o = sim.lifeline(&["media", "eject", "n1", "n2", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    assert!(v[0]["now"]["image"].is_null() && v[1]["now"]["image"].is_null(), "{v:#}");
    let v = json(&sim.lifeline(&["media", "eject", "n1", "--json"]));
    assert_eq!(v[0]["sent"].as_array().map(Vec::len), Some(0), "nothing inserted, nothing sent: {v:#}");

    let log = json(&sim.lifeline(&["audit", "log", "--json"]));
    let n = |a: &str| log.as_array().unwrap().iter().filter(|r| r["action"] == a).count();
    assert!(n("media.insert") >= 2 && n("media.eject") >= 2, "inserts and ejects audited: {log:#}");
}

fn redfish_fleet(n: usize) -> SimProcess {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for i in 1..=n {
        let flavor = ["generic", "idrac-like", "ilo-like", "openbmc-like"][i % 4];
        t.push_str(&format!(
            "\n[[device]]\nname = \"g{i}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = 20443, protocol = \"redfish\", flavor = \"{flavor}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n",
            unique_loopback()
        ));
    }
    SimProcess::start(&t, 20000, &[("LIFELINE_BMC_PASSWORD", "s3cret-pw")])
}

#[test]
fn bios_drift_on_one_node_of_eight_found_and_fixed_by_apply() {
    let sim = redfish_fleet(8);
    let golden = sim.dir.path().join("golden.toml");
    std::fs::write(
        &golden,
        "[attributes]\nSriovGlobalEnable = \"Enabled\"\nMmioAbove4Gb = \"Enabled\"\nNumaNodesPerSocket = 1\n\n\
         [role.gpu-node.attributes]\nAcsControl = \"Disabled\"\nWorkloadProfile = \"HighPerformance\"\n",
    )
    .unwrap();
    let v = json(&sim.lifeline(&["bios", "show", "g1", "--json"]));
    assert_eq!(v[0]["attributes"]["SriovGlobalEnable"], "Enabled", "{v:#}");
    let o = sim.lifeline(&["bios", "diff", "all", "--profile", golden.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "no drift at first: {}", output_text(&o));

    // Someone turns SR-IOV off and ACS on on g5 (staged, applied at its reset): now it drifts.
    let bad = sim.dir.path().join("bad.toml");
    std::fs::write(&bad, "[attributes]\nSriovGlobalEnable = \"Disabled\"\nAcsControl = \"Enabled\"\n")
        .unwrap();
    let o = sim.lifeline(&[
        "bios",
        "apply",
        "g5",
        "--profile",
        bad.to_str().unwrap(),
        "--yes",
        "--timeout",
        "60",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));

    let o = sim.lifeline(&["bios", "diff", "all", "--profile", golden.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "drift found: {}", output_text(&o));
    let v = json(&o);
    let drifted: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["drift"].as_array().unwrap().is_empty())
        .map(|r| r["bmc"].as_str().unwrap())
        .collect();
    assert_eq!(drifted, ["g5"], "{v:#}");
    let attrs: Vec<&str> =
        v[4]["drift"].as_array().unwrap().iter().map(|d| d["attribute"].as_str().unwrap()).collect();
    assert_eq!(attrs, ["AcsControl", "SriovGlobalEnable"], "{v:#}");

    // Without --profile and without [[bios-profile]] in the configuration: a usage error saying both.
    let o = sim.lifeline(&["bios", "diff", "all"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("[[bios-profile]]"), "{}", output_text(&o));
    // The same golden settings as the configuration's per-role profiles (inline; a number as text).
    let config = sim.dir.path().join("lifeline.toml");
    std::fs::write(
        &config,
        "[[bios-profile]]\nattributes = { SriovGlobalEnable = \"Enabled\", MmioAbove4Gb = \"Enabled\", \
         NumaNodesPerSocket = \"1\" }\n\n[[bios-profile]]\nrole = \"gpu-node\"\n\
         attributes = { AcsControl = \"Disabled\", WorkloadProfile = \"HighPerformance\" }\n",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let o = sim.lifeline(&["bios", "diff", "all", "--config", cfg, "--json"]);
    assert_eq!(o.status.code(), Some(1), "drift found from the configuration: {}", output_text(&o));
    assert_eq!(json(&o)[4]["drift"].as_array().unwrap().len(), 2, "{}", output_text(&o));
    assert_eq!(json(&o)[0]["checked"], 5, "{}", output_text(&o));

    // Apply the configuration's profiles to all eight: only g5 is changed and reset; read back, no drift.
    let o = sim.lifeline(&["bios", "apply", "all", "--config", cfg, "--yes", "--timeout", "60", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    for r in v.as_array().unwrap() {
        let changed = r["changes"].as_object().unwrap().len();
        assert_eq!((changed > 0, r["applied"].as_bool()), (r["bmc"] == "g5", Some(true)), "{r:#}");
    }
    assert_eq!(v[4]["staged"]["staged"], true, "{v:#}");
    assert!(v[4]["reset"].is_string(), "{v:#}");
    let o = sim.lifeline(&["bios", "diff", "all", "--profile", golden.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "fixed: {}", output_text(&o));
    let o = sim.lifeline(&["bios", "diff", "all", "--config", cfg]);
    assert_eq!(o.status.code(), Some(0), "fixed: {}", output_text(&o));
    let resets = sim.actions("g5").len();
    assert!(resets >= 2, "g5 was reset twice (drift, then the fix): {:?}", sim.actions("g5"));
    assert!(sim.actions("g1").is_empty(), "nodes without drift are left alone: {:?}", sim.actions("g1"));
}
