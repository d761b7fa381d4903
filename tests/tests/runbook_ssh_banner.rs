//! The `ssh-banner` post-condition through a run, against `lifeline sim`'s switches: a SONiC and an IOS
//! switch pass with their platform's banner (OpenSSH, Cisco's own); the same runbook on a switch looping in
//! its boot (no banner at all) and a runbook expecting another banner (ONIE rescue's dropbear) end
//! `escalated` with what was seen, never `succeeded`.

use lifeline_test_utils::{SimProcess, output_json as json, output_text as text, unique_loopback};

const OFFSET: u16 = 27500;

fn runbook(expect: &str) -> String {
    format!(
        "# Fault: x\n# Touches: x\n# Never: x\n# Worst case: x\nname = \"nos-banner\"\ndescription = \"d\"\n\
         targets = [\"switch\"]\nfault = \"f\"\ntouches = \"t\"\nnever-touches = \"n\"\nworst-case = \"w\"\n\n\
         [[step]]\nname = \"port\"\nkind = \"wait-for\"\ntcp = \"management\"\ntimeout = \"5s\"\non-failure = \"continue\"\n\n\
         [[verify]]\nname = \"nos\"\nkind = \"ssh-banner\"\nexpect = '{expect}'\ntimeout = \"4s\"\ninterval = \"1s\"\n"
    )
}

fn switches(offset: u16) -> SimProcess {
    let mut inv = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n",
    );
    // One rack each: the blast-radius guard counts a rack's switches in recovery.
    for (name, platform) in [("leaf-sonic", "sonic"), ("leaf-ios", "ios")] {
        inv.push_str(&format!(
            "\n[[rack]]\nname = \"r-{name}\"\nsite = \"s\"\n\n[[device]]\nname = \"{name}\"\nrole = \"switch\"\nrack = \"r-{name}\"\nfabric = \"backend\"\nplatform = \"{platform}\"\n\
             management = {{ address = \"{}\", port = {} }}\nbmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n",
            unique_loopback(),
            22 + offset,
            unique_loopback(),
            623 + offset
        ));
    }
    SimProcess::start(&inv, offset, &[("LIFELINE_BMC_PASSWORD", "pw")])
}

fn run(sim: &SimProcess, expect: &str, target: &str) -> (serde_json::Value, String, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nos-banner.toml"), runbook(expect)).unwrap();
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "nos-banner",
        target,
        "--yes",
        "--json",
        "--runbooks",
        dir.path().to_str().unwrap(),
    ]);
    let v = json(&o);
    let post =
        v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "nos").cloned().unwrap_or_default();
    let msg = post["message"].as_str().unwrap_or_else(|| panic!("no post-condition `nos`: {}", text(&o)));
    (v.clone(), msg.to_owned(), o.status.code())
}

#[test]
fn the_platforms_banner_passes_and_a_loop_or_another_banner_escalates() {
    let sim = switches(OFFSET);
    let (v, msg, code) = run(&sim, "platform", "leaf-sonic");
    assert_eq!((v["state"].as_str(), code), (Some("succeeded"), Some(0)), "{v:#}");
    assert!(msg.contains("SSH-2.0-OpenSSH_") && msg.contains("platform sonic"), "{msg}");
    let (v, msg, _) = run(&sim, "platform", "leaf-ios");
    assert_eq!(v["state"], "succeeded", "{v:#}");
    assert!(msg.contains("SSH-2.0-Cisco-1.25") && msg.contains("platform ios"), "{msg}");

    // A rescue environment's banner is not the NOS's.
    let (v, msg, code) = run(&sim, r"^SSH-2\.0-dropbear_", "leaf-sonic");
    assert_eq!((v["state"].as_str(), code), (Some("escalated"), Some(1)), "{v:#}");
    assert!(msg.contains("does not match") && msg.contains("OpenSSH"), "{msg}");

    // A switch looping in its boot sends no banner at all.
    sim.fault("leaf-ios", "boot-loop");
    let (v, msg, code) = run(&sim, "platform", "leaf-ios");
    assert_eq!((v["state"].as_str(), code), (Some("escalated"), Some(1)), "{v:#}");
    assert!(msg.contains("no banner matching") && !msg.contains("Cisco-1.25`"), "{msg}");
    let post = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "nos").unwrap();
    assert_eq!(post["post_condition"], true, "{post}");
    assert!(post["evidence_digest"].as_str().unwrap().starts_with("sha256:"), "{post}");
}
