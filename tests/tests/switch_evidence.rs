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
//!   change waits for an operator's approval (nothing written to the switch, no node power action); an
//!   operator approves it over the API, the run restores the version and succeeds on its post-condition
//!   (the running config read back equals it), and a fresh read of the switch (`backup restore
//!   --dry-run`, which showed the MTU change before) finds nothing left to restore. The same flow on a
//!   Cumulus (NVUE) leaf, whose rails are cabled to `swpN`.

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, unique_loopback, wait_until};
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";
const NODES: [&str; 4] = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"];

/// The leaves' network OS.
#[derive(Debug, Clone, Copy)]
enum Nos {
    Sonic,
    Cumulus,
}

impl Nos {
    fn platform(self) -> &'static str {
        match self {
            Nos::Sonic => "sonic",
            Nos::Cumulus => "cumulus",
        }
    }

    /// The leaf port node `n`'s rail `r` is cabled to: EthernetN*8+R*4 (the simulator's SONiC ports),
    /// swpN+R*4 (its Cumulus ports, swp1–8).
    fn port(self, n: u16, r: u16) -> String {
        match self {
            Nos::Sonic => format!("Ethernet{}", n * 8 + r * 4),
            Nos::Cumulus => format!("swp{}", n + r * 4),
        }
    }
}

/// gpu-node-01..03's rails on leaf-a, gpu-node-04's on leaf-b: rail mlx5_0 and mlx5_1 on the ports
/// [`Nos::port`] gives. IPMI BMCs, so every node's console is logged.
fn fleet(offset: u16, nos: Nos) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for leaf in ["leaf-a", "leaf-b"] {
        let mgmt = format!("{{ address = \"{}\", port = {} }}", unique_loopback(), 22 + offset);
        t.push_str(&format!(
            "\n[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\n\
             tier = \"leaf\"\nplatform = \"{}\"\nmanagement = {mgmt}\n",
            nos.platform()
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
                     mtu = 9000, leaf = \"{leaf}\", port = \"{}\" }},\n",
                    nos.port(n, r),
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
    let sim = fleet(26700, Nos::Sonic);
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

/// Config writes the switch was made to do (a restore is one).
fn config_writes(sim: &SimProcess, switch: &str) -> usize {
    sim.actions(switch)
        .iter()
        .filter(|a| a["action"] == "config-apply" || a["action"] == "config-reload")
        .count()
}

/// `lifeline backup restore leaf-a --version 1 --dry-run`: what a restore of v1 would change on the
/// running switch, read afresh.
fn left_to_restore(sim: &SimProcess) -> String {
    let o = sim.lifeline(&["backup", "restore", "leaf-a", "--version", "1", "--dry-run", "--json"]);
    assert!(o.status.success(), "{}", lifeline_test_utils::output_text(&o));
    lifeline_test_utils::output_json(&o)["diff"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_backup_seeing_an_mtu_change_on_the_rail_ports_is_evidence_and_offers_a_restore() {
    config_change_is_evidence_and_its_approved_restore_undoes_it(Nos::Sonic, 26800);
}

#[test]
fn the_same_on_a_cumulus_leaf() {
    config_change_is_evidence_and_its_approved_restore_undoes_it(Nos::Cumulus, 27000);
}

fn config_change_is_evidence_and_its_approved_restore_undoes_it(nos: Nos, offset: u16) {
    let sim = fleet(offset, nos);
    add_user(&sim, "ann", "operator", PASSWORD);
    // Version 1 by hand (it also pins the switch's host key); then an operator lowers the MTU of three
    // rail-0 ports (gpu-node-01..03) on the running switch.
    let o = sim.lifeline(&["backup", "run", "leaf-a"]);
    assert!(o.status.success(), "{}", lifeline_test_utils::output_text(&o));
    let ports: Vec<String> = (1..=3).map(|n| nos.port(n, 0)).collect();
    for p in &ports {
        sim.fault("leaf-a", &format!("port-mtu={p}:1500"));
    }
    let before = left_to_restore(&sim);
    assert!(before.contains("1500") && before.contains("9000"), "the change is seen on the switch: {before}");
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
    let in_words = match nos {
        Nos::Sonic => "Ethernet8, Ethernet16, Ethernet24",
        Nos::Cumulus => "swp1–3",
    };
    assert!(m.contains(&format!("(backup v1 → v2): mtu 9000 → 1500 on {in_words}")), "{m}");
    let ev = shared["detail"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "config-change")
        .unwrap();
    assert_eq!(ev["ports"], serde_json::json!(ports), "{ev:#}");
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
    assert_eq!(config_writes(&sim, "leaf-a"), 0, "nothing written before the approval");
    no_node_power_actions(&sim);

    // The operator approves: the run restores v1 and succeeds on its post-condition, a fresh read of the
    // running config equal to v1.
    let id = runs[0]["run"].as_str().unwrap().to_owned();
    let (st, v) = s.call("POST", &format!("/api/v1/runs/{id}/approve"), None);
    assert_eq!(st, 200, "{v:#}");
    let done = wait_until("the approved restore ends", Duration::from_secs(90), || {
        let (_, r) = s.call("GET", &format!("/api/v1/runs/{id}"), None);
        matches!(r["state"].as_str(), Some("succeeded" | "failed" | "aborted" | "escalated")).then_some(r)
    });
    let steps: Vec<(&str, &str)> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        (done["state"].as_str(), steps.as_slice()),
        (Some("succeeded"), [("restore", "ok"), ("same-as-version", "ok")].as_slice()),
        "{done:#}"
    );
    assert_eq!(config_writes(&sim, "leaf-a"), 1, "one restore: {:#?}", sim.actions("leaf-a"));
    // Read again, apart from the run: the change is gone from the switch.
    let after = left_to_restore(&sim);
    assert!(after.is_empty(), "the MTU change is still on the switch: {after}");

    // The next scheduled backup sees the restore as a change (v3, the same config as v1): no second run is
    // offered (undoing the restore would put the change back). Within the correlation's window this holds
    // even without the engine's own-restore check (evidence on the same ports replaces the held one without
    // a new report), so this guards the outcome, not that check.
    wait_until("the backup after the restore", Duration::from_secs(90), || {
        let o = sim.lifeline(&["backup", "history", "leaf-a", "--json"]);
        let v = lifeline_test_utils::output_json(&o);
        v.as_array().is_some_and(|v| v.iter().any(|x| x["version"] == 3)).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let (_, runs) = s.call("GET", "/api/v1/runs?target=leaf-a", None);
    assert_eq!(runs.as_array().unwrap().len(), 1, "a restore of the restore offered: {runs:#}");
    assert_eq!(config_writes(&sim, "leaf-a"), 1);
    no_node_power_actions(&sim);
}
