//! `switch-boot-loop` end to end against `lifeline sim`: a SONiC leaf whose config drifted and that loops in
//! its boot. After approval it is power-cycled once through its BMC, broken into the ONIE rescue shell over
//! SOL, its last good config is restored once, and its post-conditions prove the recovery on fresh
//! observations: SSH answers on the management port and the running config equals the backup. A looping
//! switch serves no SSH (as real ones do not), so nothing forces the rescue. The negative twin: a runbook
//! whose steps skip the rescue ends `escalated` with the failing evidence, never `succeeded`, while the
//! simulator still shows the switch looping.

use lifeline_test_utils::{
    SimProcess, output_json as json, output_text as text, unique_loopback, workspace_root,
};

const OFFSET: u16 = 25300;

#[test]
fn switch_boot_loop_cycles_once_rescues_and_restores_the_last_good_config() {
    let sim = backed_up_leaf(OFFSET);
    sim.fault("leaf", "config-change");
    sim.fault("leaf", "boot-loop");
    let rb = workspace_root().join("runbooks");
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "switch-boot-loop",
        "leaf",
        "--yes",
        "--json",
        "--runbooks",
        rb.to_str().unwrap(),
    ]);
    let v = json(&o);
    assert_eq!(v["state"], "waiting-approval", "{v:#}");
    assert!(sim.actions("leaf").is_empty(), "nothing before approval: {:?}", sim.actions("leaf"));
    let id = v["run"].as_str().unwrap().to_owned();
    // A rescue shell does not mend a looping image: once the run has reached it, the technician repairs
    // the switch by hand (the simulator's `clear`: the NOS boots again) while the run waits for the
    // management plane; the run then restores the config and proves both on fresh observations.
    let approve = sim.spawn_lifeline(&["runbook", "approve", &id, "--json"]);
    let rescued = (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let v = json(&sim.lifeline(&["runbook", "status", &id, "--json"]));
        v["steps"].as_array().is_some_and(|s| s.iter().any(|s| s["name"] == "rescue" && s["state"] == "ok"))
    });
    assert!(rescued, "the run reaches the rescue shell");
    let looping = sim_device(&sim, "leaf");
    assert!(looping["faults"].as_array().unwrap().iter().any(|f| f == "boot-loop"), "{looping}");
    sim.fault("leaf", "clear");
    let o = approve.wait_with_output().unwrap();
    let v = json(&o);
    assert_eq!(v["state"], "succeeded", "{v:#}\n{}", text(&o));
    let states: Vec<(&str, &str)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("mgmt-answers", "failed"),
            ("cycle", "ok"),
            ("rescue", "ok"),
            ("mgmt-up", "ok"),
            ("restore", "ok"),
            ("mgmt-ssh", "ok"),
            ("same-as-backup", "ok")
        ]
    );
    let info = sim_device(&sim, "leaf");
    assert_eq!(
        (info["phase"].as_str(), info["faults"].as_array().map(Vec::len)),
        (Some("os-up"), Some(0)),
        "{info}"
    );
    let acts: Vec<String> =
        sim.actions("leaf").iter().map(|a| a["action"].as_str().unwrap().to_owned()).collect();
    let power = acts.iter().filter(|a| a.starts_with("power-")).count();
    let writes = acts.iter().filter(|a| *a == "config-apply" || *a == "config-reload").count();
    assert!((1..=2).contains(&power) && writes == 1, "one cycle (IPMI: off then on), one restore: {acts:?}");
    let rescue = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "rescue").unwrap();
    assert!(rescue["evidence_digest"].as_str().unwrap().starts_with("sha256:"));
}

/// A simulated SONiC leaf with an IPMI BMC at port offset `offset`, its config backed up once.
fn backed_up_leaf(offset: u16) -> SimProcess {
    let (sw, bmc) = (unique_loopback(), unique_loopback());
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\nbmc = {{ address = \"{bmc}\", port = {}, protocol = \"ipmi\" }}\n",
        22 + offset,
        623 + offset
    );
    let sim = SimProcess::start(&inv, offset, &[("LIFELINE_BMC_PASSWORD", "pw")]);
    let o = sim.lifeline(&["backup", "run", "leaf", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    sim
}

/// The simulator's own view of one device (phase, faults).
fn sim_device(sim: &SimProcess, name: &str) -> serde_json::Value {
    let all: serde_json::Value =
        serde_json::from_str(&lifeline_test_utils::http_get(&format!("{}/devices", sim.control_url())))
            .unwrap();
    all.as_array().unwrap().iter().find(|d| d["name"] == name).cloned().unwrap()
}

/// A runbook whose steps would call a looping switch fine (a port probe, an event log read) still cannot
/// end `succeeded`: its post-conditions re-observe the switch and find no management plane.
#[test]
fn a_boot_loop_the_steps_leave_in_place_ends_escalated_with_its_evidence() {
    const OFF: u16 = 25400;
    let sim = backed_up_leaf(OFF);
    sim.fault("leaf", "boot-loop");
    let dir = tempfile::tempdir().unwrap();
    let rb = "# Fault: x\n# Touches: x\n# Never: x\n# Worst case: x\nname = \"probe-only\"\ndescription = \"d\"\ntargets = [\"switch\"]\nfault = \"f\"\ntouches = \"t\"\nnever-touches = \"n\"\nworst-case = \"w\"\n\n[[step]]\nname = \"port\"\nkind = \"wait-for\"\ntcp = \"management\"\ntimeout = \"5s\"\non-failure = \"continue\"\n\n[[step]]\nname = \"events\"\nkind = \"sel\"\nnewest = 5\n\n[[verify]]\nname = \"mgmt-ssh\"\nkind = \"wait-for\"\nssh = \"management\"\ntimeout = \"6s\"\ninterval = \"1s\"\n";
    std::fs::write(dir.path().join("probe-only.toml"), rb).unwrap();
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "probe-only",
        "leaf",
        "--yes",
        "--json",
        "--runbooks",
        dir.path().to_str().unwrap(),
    ]);
    let v = json(&o);
    assert_eq!(v["state"], "escalated", "{v:#}\n{}", text(&o));
    let post = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "mgmt-ssh").unwrap();
    assert_eq!(post["state"], "failed", "{post}");
    assert_eq!(post["post_condition"], true, "{post}");
    assert!(post["message"].as_str().unwrap().contains("not reached"), "{post}");
    assert!(post["evidence_digest"].as_str().unwrap().starts_with("sha256:"));
    let info = sim_device(&sim, "leaf");
    assert!(info["faults"].as_array().unwrap().iter().any(|f| f == "boot-loop"), "still looping: {info}");
    assert_eq!(o.status.code(), Some(1), "an escalated run is not a success: {}", text(&o));
}
