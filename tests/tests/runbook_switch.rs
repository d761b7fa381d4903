//! `switch-boot-loop` end to end against `lifeline sim`: a SONiC leaf whose config drifted and that loops in
//! its boot. After approval it is power-cycled once through its BMC, broken into the ONIE rescue shell over
//! SOL, its last good config is restored once, and the run checks the running config equals it.
//! (The simulator's management port keeps answering during a boot loop, so the rescue is forced with
//! `--var force-rescue=true`, as an operator who sees the loop on the console would.)

use lifeline_test_utils::{
    SimProcess, output_json as json, output_text as text, unique_loopback, workspace_root,
};

const OFFSET: u16 = 25300;

#[test]
fn switch_boot_loop_cycles_once_rescues_and_restores_the_last_good_config() {
    let (sw, bmc) = (unique_loopback(), unique_loopback());
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\nbmc = {{ address = \"{bmc}\", port = {}, protocol = \"ipmi\" }}\n",
        22 + OFFSET,
        623 + OFFSET
    );
    let sim = SimProcess::start(&inv, OFFSET, &[("LIFELINE_BMC_PASSWORD", "pw")]);
    let o = sim.lifeline(&["backup", "run", "leaf", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
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
        "--var",
        "force-rescue=true",
        "--runbooks",
        rb.to_str().unwrap(),
    ]);
    let v = json(&o);
    assert_eq!(v["state"], "waiting-approval", "{v:#}");
    assert!(sim.actions("leaf").is_empty(), "nothing before approval: {:?}", sim.actions("leaf"));
    let id = v["run"].as_str().unwrap().to_owned();
    let o = sim.lifeline(&["runbook", "approve", &id, "--json"]);
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
            ("mgmt-answers", "ok"),
            ("cycle", "ok"),
            ("rescue", "ok"),
            ("mgmt-up", "ok"),
            ("restore", "ok"),
            ("same-as-backup", "ok")
        ]
    );
    let acts: Vec<String> =
        sim.actions("leaf").iter().map(|a| a["action"].as_str().unwrap().to_owned()).collect();
    let power = acts.iter().filter(|a| a.starts_with("power-")).count();
    let writes = acts.iter().filter(|a| *a == "config-apply" || *a == "config-reload").count();
    assert!((1..=2).contains(&power) && writes == 1, "one cycle (IPMI: off then on), one restore: {acts:?}");
    let rescue = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "rescue").unwrap();
    assert!(rescue["evidence_digest"].as_str().unwrap().starts_with("sha256:"));
}
