//! `lifeline boot`, `bmc reset`, `bmc info`, `sdr` and `fru` as an operator types them, against a
//! `lifeline sim` process (two Redfish BMCs of different flavours and one IPMI BMC) and, for `boot` and
//! `bmc info`, against the real ipmi_sim and sushy-emulator peers with `--bmc` URLs.

use lifeline_test_utils::{SimProcess, lifeline_bin, output_json as json, output_text, peer_endpoints};

fn start_sim() -> SimProcess {
    lifeline_test_utils::three_flavour_sim()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn count(sim: &SimProcess, device: &str, action: &str) -> usize {
    sim.actions(device).iter().filter(|a| a["action"] == action).count()
}

#[test]
fn boot_device_over_both_protocols_read_back() {
    let sim = start_sim();
    let o = sim.lifeline(&["boot", "show", "all"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    insta::assert_snapshot!("boot_show_default", stdout(&o));

    let o = sim.lifeline(&["boot", "n1", "n3", "pxe", "--persistent", "--uefi"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    insta::assert_snapshot!("boot_pxe_persistent", stdout(&o));

    let o = sim.lifeline(&["boot", "n2", "bios", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    assert_eq!(v[0]["confirmation"], "confirmed", "{v:#}");
    assert_eq!(
        (v[0]["now"]["bmc_value"].as_str(), v[0]["now"]["enabled"].as_str()),
        (Some("BiosSetup"), Some("once"))
    );
    assert!(v[0]["sent"][0].as_str().unwrap().contains("If-Match"), "the sim gives an ETag: {v:#}");

    let v = json(&sim.lifeline(&["boot", "show", "n3", "--json"]));
    assert_eq!(v[0]["settings"]["target"], "pxe", "{v:#}");
    assert_eq!(v[0]["settings"]["raw"], "e004000000", "valid, persistent, EFI, PXE: {v:#}");

    // Usage errors: no device, an unknown device.
    assert_eq!(sim.lifeline(&["boot", "n1"]).status.code(), Some(2));
    let o = sim.lifeline(&["boot", "n1", "floppy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(output_text(&o).contains("not a boot device"), "{}", output_text(&o));

    let log = json(&sim.lifeline(&["audit", "log", "--json"]));
    let sets = log.as_array().unwrap().iter().filter(|r| r["action"] == "boot.set").count();
    assert!(sets >= 3, "intent and outcome of every boot change are audited: {log:#}");
}

#[test]
fn bmc_reset_is_confirmed_by_the_bmc_answering_again() {
    let sim = start_sim();
    // Destructive: refused without --yes when there is no terminal; nothing sent.
    let o = sim.lifeline(&["bmc", "reset", "n3"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert_eq!(count(&sim, "n3", "bmc-reset"), 0);

    for (dev, proto, sent) in
        [("n3", "ipmi", "Cold Reset (App 0x02)"), ("n1", "redfish", "Manager.Reset ForceRestart")]
    {
        let o = sim.lifeline(&["bmc", "reset", dev, "--yes", "--json", "--timeout", "60"]);
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        let v = json(&o);
        assert_eq!(
            (v[0]["protocol"].as_str(), v[0]["answering"].as_bool()),
            (Some(proto), Some(true)),
            "{v:#}"
        );
        assert!(v[0]["sent"].as_str().unwrap().starts_with(sent), "{v:#}");
        assert_eq!(v[0]["went_away"], true, "the sim stops answering for a few seconds: {v:#}");
        assert_eq!(count(&sim, dev, "bmc-reset"), 1, "{:?}", sim.actions(dev));
    }
    // Warm over Redfish is GracefulRestart, which the sim's Manager lists.
    let v = json(&sim.lifeline(&["bmc", "reset", "n2", "--warm", "--yes", "--json"]));
    assert!(v[0]["sent"].as_str().unwrap().starts_with("Manager.Reset GracefulRestart"), "{v:#}");
    // The BMC answers every verb again afterwards.
    assert_eq!(sim.lifeline(&["power", "status", "all"]).status.code(), Some(0));
}

#[test]
fn bmc_info_sdr_and_fru() {
    let sim = start_sim();
    let o = sim.lifeline(&["bmc", "info", "all"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    insta::assert_snapshot!("bmc_info", stdout(&o));
    let o = sim.lifeline(&["bmc", "info", "all", "--group-by", "version"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    insta::assert_snapshot!("bmc_info_by_version", stdout(&o));
    let v = json(&sim.lifeline(&["bmc", "info", "n3", "--json"]));
    let mac = v[0]["bmc_mac"].as_str().expect("a MAC over IPMI");
    assert_eq!(mac.len(), 17, "{v:#}");

    let o = sim.lifeline(&["sdr", "n3"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).contains("n3 (ipmi)") && stdout(&o).contains(" ok "), "{}", stdout(&o));
    let v = json(&sim.lifeline(&["sdr", "n1", "--json"]));
    assert!(!v[0]["sensors"].as_array().unwrap().is_empty(), "{v:#}");

    let o = sim.lifeline(&["fru", "n1", "n3"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(stdout(&o).contains("Product Serial"), "{}", stdout(&o));
}

/// `--bmc` URLs against the real peers: ipmi_sim (boot flags as ipmitool reads them) and sushy-emulator.
#[test]
fn boot_and_info_against_real_peers() {
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(lifeline_bin())
            .args(["--data-dir", data.path().to_str().unwrap()])
            .args(args)
            .env("LIFELINE_BMC_PASSWORD", "password")
            .env_remove("LIFELINE_INVENTORY")
            .env_remove("LIFELINE_CONFIG")
            .output()
            .unwrap()
    };
    if let Some(rows) = peer_endpoints("ipmi") {
        // bmc3: the shared ipmi_sim whose boot flags no other test changes.
        let r = rows.iter().find(|r| r[0] == "bmc3").expect("bmc3 row");
        let url = format!("ipmi://admin@{}:{}", r[1], r[2]);
        let o = run(&["boot", "--bmc", &url, "cdrom", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        let v = json(&o);
        assert_eq!(v[0]["now"]["target"], "cdrom", "{v:#}");
        let ipmitool = std::process::Command::new("ipmitool")
            .args(["-I", "lanplus", "-C", "3", "-H", &r[1], "-p", &r[2], "-U", "admin", "-P", "password"])
            .args(["chassis", "bootparam", "get", "5"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&ipmitool.stdout);
        assert!(text.contains("Force Boot from CD/DVD"), "{text}");
        let raw = v[0]["now"]["raw"].as_str().unwrap();
        assert!(text.contains(&format!("Boot parameter data: {raw}")), "{raw} vs {text}");
        run(&["boot", "--bmc", &url, "disk"]);
    }
    if let Some(rows) = peer_endpoints("redfish") {
        let r = rows.iter().find(|r| r[0] == "sushy-emulator").expect("sushy row");
        let hostport = r[1].trim_start_matches("https://").split('/').next().unwrap().to_owned();
        let url = format!("redfish://admin@{hostport}");
        let o = run(&["bmc", "info", "--bmc", &url, "--json"]);
        // sushy's four systems share one URL: the first is shown; its Manager says 1.00.
        assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
        assert_eq!(json(&o)[0]["bmc_firmware"], "1.00");
        let o = run(&["bmc", "reset", "--bmc", &url, "--yes"]);
        assert_eq!(o.status.code(), Some(1), "sushy's Manager has no Manager.Reset: {}", output_text(&o));
        assert!(stdout(&o).contains("offers no #Manager.Reset"), "{}", stdout(&o));
    }
}

/// A runbook's `bmc-reset` step without `protocol` resets a Redfish BMC through its Manager.Reset.
#[test]
fn runbook_bmc_reset_step_uses_redfish_for_a_redfish_bmc() {
    let sim = start_sim();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bmc-restart.toml"),
        "name = \"bmc-restart\"\ndescription = \"restart a BMC over its own protocol\"\ntargets = [\"gpu-node\"]\n\
         fault = \"a wedged BMC\"\ntouches = \"the BMC (one reset)\"\nnever-touches = \"the host's power\"\n\
         worst-case = \"the BMC stays down; escalated\"\n\n[[step]]\nname = \"restart\"\nkind = \"bmc-reset\"\n\
         timeout = \"1m\"\non-failure = \"escalate\"\n\n[[verify]]\nname = \"answers\"\nkind = \"wait-for\"\n\
         bmc = \"reachable\"\ntimeout = \"1m\"\n",
    )
    .unwrap();
    let rb = dir.path().to_str().unwrap();
    let o = sim.lifeline(&["runbook", "run", "bmc-restart", "n1", "--yes", "--json", "--runbooks", rb]);
    let v = json(&o);
    assert_eq!(v["state"], "succeeded", "{v:#}\n{}", output_text(&o));
    let acts = sim.actions("n1");
    let resets: Vec<_> = acts.iter().filter(|a| a["action"] == "bmc-reset").collect();
    assert_eq!(resets.len(), 1, "{acts:?}");
    assert_eq!(resets[0]["protocol"], "redfish", "{acts:?}");
}
