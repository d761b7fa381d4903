//! Switch-side evidence on the rail faults, end to end: `lifeline serve` over a `lifeline sim` fleet whose
//! GPU nodes' rails are cabled to two SONiC leaves (inventory `rail.leaf` / `rail.port`).
//!
//! - counters on a schedule: `link-flap=PORT` on two of leaf-a's rail-0 ports; the scheduled counters
//!   read sees the carrier transitions rise (the leaf's own `switch-link-flap` fault, naming the ports),
//!   and the shared rail fault of the nodes cabled there carries it as evidence; once the flapping stops,
//!   a read in which nothing rose resolves the leaf's fault;
//! - config-change correlation: leaf-a's MTU is lowered on its rail-0 ports (the simulator's running
//!   config, `port-mtu=PORT:MTU`), the scheduled backup takes the new version, the nodes' rail-0 goes
//!   down: the leaf's shared fault says what changed where, and a restore of the version before the
//!   change waits for an operator's approval (not run, no node power action).

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, unique_loopback, wait_until};
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";
const NODES: [&str; 4] = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"];

/// gpu-node-01..03's rails on leaf-a, gpu-node-04's on leaf-b: rail mlx5_0 on EthernetN*8 (the
/// simulator's SONiC ports), mlx5_1 on EthernetN*8+4. IPMI BMCs, so every node's console is logged.
fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for leaf in ["leaf-a", "leaf-b"] {
        let mgmt = format!("{{ address = \"{}\", port = {} }}", unique_loopback(), 22 + offset);
        t.push_str(&format!(
            "\n[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\n\
             tier = \"leaf\"\nplatform = \"sonic\"\nmanagement = {mgmt}\n"
        ));
    }
    for (i, node) in NODES.iter().enumerate() {
        let n = i as u16 + 1;
        let leaf = if n <= 3 { "leaf-a" } else { "leaf-b" };
        let bmc = format!(
            "{{ address = \"{}\", port = {}, protocol = \"ipmi\" }}",
            unique_loopback(),
            623 + offset
        );
        let rails: String = (0..2u16)
            .map(|r| {
                format!(
                    "{{ hca = \"mlx5_{r}\", netdev = \"rdma{r}\", subnet = \"127.{s}.{r}.0/24\", address = \"127.{s}.{r}.1\", \
                     mtu = 9000, leaf = \"{leaf}\", port = \"Ethernet{}\" }},\n",
                    n * 8 + r * 4,
                    s = 210 + n
                )
            })
            .collect();
        t.push_str(&format!(
            "\n[[device]]\nname = \"{node}\"\nrole = \"gpu-node\"\nrack = \"r1\"\nbmc = {bmc}\n\
             gpus = {{ count = 2, model = \"NVIDIA H100 80GB HBM3\" }}\nrail = [\n{rails}]\n"
        ));
    }
    SimProcess::start(
        &t,
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

fn serve(sim: &SimProcess, server: &str) -> ServeProcess {
    let rb = lifeline_test_utils::workspace_root().join("runbooks");
    let config = format!(
        "[runbooks]\ndir = \"{}\"\n\n[server]\nsweep-interval = \"0s\"\n{server}\n[correlation]\nhold = \"3s\"\n",
        rb.display()
    );
    ServeProcess::start_with(sim, &config)
}

fn no_node_power_actions(sim: &SimProcess) {
    for n in NODES {
        let power: Vec<Value> = sim
            .actions(n)
            .into_iter()
            .filter(|a| a["action"].as_str().is_some_and(|x| x.starts_with("power")))
            .collect();
        assert!(power.is_empty(), "{n}: {power:#?}");
    }
}

#[test]
fn a_flapping_leaf_port_is_evidence_on_the_rail_fault_of_the_nodes_cabled_to_it() {
    let sim = fleet(26700);
    add_user(&sim, "ann", "operator", PASSWORD);
    let srv = serve(&sim, "switch-counters-interval = \"2s\"\nswitch-counters-timeout = \"20s\"\n");
    let s = login(&srv.addr, "ann", PASSWORD);
    s.consoles_connected(&NODES);

    // gpu-node-01's and -02's rail-0 ports.
    sim.fault("leaf-a", "link-flap=Ethernet8");
    sim.fault("leaf-a", "link-flap=Ethernet16");
    let flap = wait_until("leaf-a's link-flap fault from its counters", Duration::from_secs(60), || {
        s.open_faults().into_iter().find(|f| {
            f["device"] == "leaf-a"
                && f["kind"] == "switch-link-flap"
                && f["detail"]["ports"].as_array().is_some_and(|p| p.len() == 2)
        })
    });
    assert_eq!(flap["detail"]["ports"], serde_json::json!(["Ethernet8", "Ethernet16"]), "{flap:#}");
    assert!(flap["message"].as_str().unwrap().contains("link-flap on Ethernet8, Ethernet16"), "{flap:#}");
    assert!(!s.open_faults().iter().any(|f| f["device"] == "leaf-b"), "leaf-b does not flap");

    for n in &NODES[..3] {
        sim.fault(n, "rail-down=mlx5_0");
    }
    let shared = wait_until("the shared rail fault with the flap evidence", Duration::from_secs(60), || {
        s.open_faults().into_iter().find(|f| {
            f["device"] == "leaf-a"
                && f["kind"] == "shared-rail-down"
                && f["detail"]["evidence"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|e| e["kind"] == "switch-link-flap"))
        })
    });
    let members: Vec<&str> = shared["detail"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["device"].as_str().unwrap())
        .collect();
    assert_eq!(members, &NODES[..3], "{shared:#}");
    let ev = &shared["detail"]["evidence"].as_array().unwrap()[0];
    assert_eq!(ev["switch"], "leaf-a");
    assert_eq!(ev["ports"], serde_json::json!(["Ethernet8", "Ethernet16"]), "{shared:#}");
    let m = shared["message"].as_str().unwrap();
    assert!(m.contains("gpu-node-01 (Ethernet8)") && m.contains("; leaf-a counters at "), "{m}");
    assert!(m.contains("link-flap on Ethernet8, Ethernet16"), "{m}");
    no_node_power_actions(&sim);

    // The flapping stops: the next read in which no flap counter rose resolves the leaf's own fault.
    sim.fault("leaf-a", "clear");
    wait_until("leaf-a's link-flap fault resolved", Duration::from_secs(30), || {
        (!s.open_faults().iter().any(|f| f["device"] == "leaf-a" && f["kind"] == "switch-link-flap"))
            .then_some(())
    });
}

#[test]
fn a_backup_seeing_an_mtu_change_on_the_rail_ports_is_evidence_and_offers_a_restore() {
    let sim = fleet(26800);
    add_user(&sim, "ann", "operator", PASSWORD);
    // Version 1 by hand (it also pins the switch's host key); then an operator lowers the MTU of three
    // rail-0 ports (gpu-node-01..03) on the running switch.
    let o = sim.lifeline(&["backup", "run", "leaf-a"]);
    assert!(o.status.success(), "{}", lifeline_test_utils::output_text(&o));
    for p in ["Ethernet8", "Ethernet16", "Ethernet24"] {
        sim.fault("leaf-a", &format!("port-mtu={p}:1500"));
    }
    let srv =
        serve(&sim, "\n[[backup-schedule]]\ntargets = [\"leaf-a\"]\ncron = \"* * * * *\"\nretries = 1\n");
    let s = login(&srv.addr, "ann", PASSWORD);
    s.consoles_connected(&NODES);
    for n in &NODES[..3] {
        sim.fault(n, "rail-down=mlx5_0");
    }
    // The rail fault forms at once; the evidence comes with the next scheduled backup (within a minute
    // and a bit), which re-raises the shared fault with it.
    let shared = wait_until("the shared rail fault with the config change", Duration::from_secs(150), || {
        s.open_faults().into_iter().find(|f| {
            f["device"] == "leaf-a"
                && f["kind"] == "shared-rail-down"
                && f["detail"]["evidence"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|e| e["kind"] == "config-change"))
        })
    });
    let m = shared["message"].as_str().unwrap();
    assert!(m.starts_with("rail-down on 3 of 3 dependents of leaf-a ports of rail mlx5_0"), "{m}");
    assert!(m.contains("; leaf-a config changed at "), "{m}");
    assert!(m.contains("(backup v1 → v2): mtu 9000 → 1500 on Ethernet8, Ethernet16, Ethernet24"), "{m}");
    let ev = shared["detail"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "config-change")
        .unwrap();
    assert_eq!(ev["restore"]["version"], 1, "{ev:#}");
    assert_eq!(ev["restore"]["runbook"], "switch-config-restore", "{ev:#}");

    // The restore is offered, waiting for an operator: nothing is pushed to the switch without one.
    let runs = wait_until("the restore offered", Duration::from_secs(30), || {
        let (_, runs) = s.call("GET", "/api/v1/runs?target=leaf-a", None);
        runs.as_array().filter(|r| !r.is_empty()).cloned()
    });
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(
        (runs[0]["runbook"].as_str(), runs[0]["state"].as_str(), runs[0]["vars"]["version"].as_str()),
        (Some("switch-config-restore"), Some("waiting-approval"), Some("1")),
        "{:#}",
        runs[0]
    );
    std::thread::sleep(Duration::from_secs(3));
    let (_, again) = s.call("GET", "/api/v1/runs?target=leaf-a", None);
    assert_eq!(again.as_array().unwrap().len(), 1, "offered once: {again:#}");
    assert_eq!(again[0]["state"], "waiting-approval");
    no_node_power_actions(&sim);
}
