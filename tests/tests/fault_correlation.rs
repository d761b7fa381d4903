//! Fault correlation and the console as a sensor, end to end: `lifeline serve` logs every console of a
//! `lifeline sim` fleet, with a fault policy that would recover any node with a rail down automatically.
//!
//! - `rail-down=mlx5_1` on every node cabled to one leaf's rail-1 ports: the consoles print the link going
//!   down, and the result is ONE open fault on the leaf listing the member nodes, no node fault, no run and
//!   no power action on any member.
//! - the same fault on a node alone (the only one on its leaf's port group): the node's own `rail-down`
//!   fault, and the policy starts its runbook.
//! - a GPU node in a boot loop: its console prints a kernel panic, and a `console-kernel-panic` fault is
//!   raised on it from the console.
//! - the leaf's shared fault is resolved by its members' own evidence: with the rail seen up on two of
//!   the three members' consoles it stays open; with the third it is resolved, the three link-up lines
//!   named.

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, unique_loopback, wait_until};
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";

/// gpu-node-01..03 cabled to leaf-a (rails mlx5_0, mlx5_1), gpu-node-04 and -05 to leaf-b; IPMI BMCs, so
/// every node has a serial-over-LAN console.
fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for leaf in ["leaf-a", "leaf-b"] {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
             platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
            unique_loopback(),
            22 + offset
        ));
    }
    for n in 1..=5u16 {
        let leaf = if n <= 3 { "leaf-a" } else { "leaf-b" };
        let sub = 200 + n;
        t.push_str(&format!(
            "\n[[device]]\nname = \"gpu-node-0{n}\"\nrole = \"gpu-node\"\nrack = \"r1\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\", flavor = \"openbmc-like\" }}\n\
             gpus = {{ count = 2, model = \"NVIDIA H100 80GB HBM3\" }}\nrail = [\n\
             {{ hca = \"mlx5_0\", netdev = \"rdma0\", subnet = \"127.{sub}.0.0/24\", address = \"127.{sub}.0.1\", mtu = 9000, leaf = \"{leaf}\", port = \"Ethernet{}\" }},\n\
             {{ hca = \"mlx5_1\", netdev = \"rdma1\", subnet = \"127.{sub}.1.0/24\", address = \"127.{sub}.1.1\", mtu = 9000, leaf = \"{leaf}\", port = \"Ethernet{}\" }},\n]\n",
            unique_loopback(),
            623 + offset,
            n * 8,
            n * 8 + 4,
        ));
    }
    SimProcess::start(
        &t,
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

/// A policy that recovers any node with a rail down (or a console panic) at once, with a power cycle.
const CONFIG: &str = "[server]\nsweep-interval = \"0s\"\n\n[correlation]\nhold = \"3s\"\n\n\
    [[fault-policy]]\nkind = \"rail-down\"\nrunbook = \"gpu-node-recover\"\nmode = \"auto\"\n\n\
    [[fault-policy]]\nkind = \"console-kernel-panic\"\nrunbook = \"gpu-node-recover\"\nmode = \"approve\"\n";

fn nodes() -> Vec<String> {
    (1..=5).map(|n| format!("gpu-node-0{n}")).collect()
}

fn serve(sim: &SimProcess) -> ServeProcess {
    let rb = lifeline_test_utils::workspace_root().join("runbooks");
    let config = format!("[runbooks]\ndir = \"{}\"\n\n{CONFIG}", rb.display());
    ServeProcess::start_with(sim, &config)
}

fn faults(s: &common::Session<'_>) -> Vec<Value> {
    s.open_faults()
}

/// Waits until every node's console is logged (a line printed before would not be seen).
fn consoles_connected(s: &common::Session<'_>) {
    let nodes = nodes();
    s.consoles_connected(&nodes.iter().map(String::as_str).collect::<Vec<_>>());
}

fn power_actions(sim: &SimProcess, device: &str) -> Vec<Value> {
    sim.actions(device)
        .into_iter()
        .filter(|a| a["action"].as_str().is_some_and(|x| x.starts_with("power")))
        .collect()
}

fn runs(s: &common::Session<'_>, target: &str) -> Vec<Value> {
    let (st, v) = s.call("GET", &format!("/api/v1/runs?target={target}"), None);
    assert_eq!(st, 200, "{v}");
    v.as_array().unwrap().clone()
}

#[test]
fn a_rail_down_on_every_node_of_a_leaf_is_one_leaf_fault_and_on_one_node_the_nodes_own() {
    let sim = fleet(26300);
    add_user(&sim, "ann", "operator", PASSWORD);
    let srv = serve(&sim);
    let s = login(&srv.addr, "ann", PASSWORD);
    consoles_connected(&s);

    // Every dependent of leaf-a's rail-1 port group.
    for n in ["gpu-node-01", "gpu-node-02", "gpu-node-03"] {
        sim.fault(n, "rail-down=mlx5_1");
    }
    let leaf = wait_until("one fault on leaf-a", Duration::from_secs(60), || {
        faults(&s).into_iter().find(|f| f["device"] == "leaf-a" && f["kind"] == "shared-rail-down")
    });
    let members: Vec<&str> =
        leaf["detail"]["members"].as_array().unwrap().iter().map(|m| m["device"].as_str().unwrap()).collect();
    assert_eq!(members, ["gpu-node-01", "gpu-node-02", "gpu-node-03"], "{leaf:#}");
    assert!(leaf["detail"]["members"].as_array().unwrap().iter().all(|m| m["rail"] == "mlx5_1"), "{leaf:#}");
    assert_eq!(leaf["detail"]["component"]["kind"], "leaf-port-group", "{leaf:#}");
    assert_eq!(leaf["detail"]["score"]["fraction"], 1.0, "{leaf:#}");
    assert!(leaf["message"].as_str().unwrap().contains("gpu-node-02 (Ethernet20)"), "{leaf:#}");
    // Nothing on the members: no fault of their own, no run, no power action — past the hold, and past
    // the time a started run would have needed to reach its power step.
    std::thread::sleep(Duration::from_secs(6));
    let open = faults(&s);
    assert_eq!(open.iter().filter(|f| f["kind"] == "shared-rail-down").count(), 1, "{open:#?}");
    assert!(!open.iter().any(|f| f["kind"] == "rail-down"), "{open:#?}");
    for n in ["gpu-node-01", "gpu-node-02", "gpu-node-03"] {
        assert!(runs(&s, n).is_empty(), "{n}: {:#?}", runs(&s, n));
        assert!(power_actions(&sim, n).is_empty(), "{n}: {:#?}", power_actions(&sim, n));
    }
    let (_, events) = s.call("GET", "/api/v1/events?limit=1000", None);
    let linked = events.as_array().unwrap().iter().filter(|e| e["source"] == "correlation").count();
    assert_eq!(linked, 3, "one member event per node: {events:#}");

    // The same fault on one node alone (gpu-node-04 is one of leaf-b's two rail-0 ports): its own fault,
    // raised from the console, and the policy's runbook for it.
    sim.fault("gpu-node-04", "rail-down=mlx5_0");
    let own = wait_until("gpu-node-04's own fault", Duration::from_secs(60), || {
        faults(&s).into_iter().find(|f| f["device"] == "gpu-node-04" && f["kind"] == "rail-down")
    });
    assert!(
        own["message"].as_str().unwrap().starts_with("rail mlx5_0 (rdma0) link down, seen on the console"),
        "{own:#}"
    );
    assert_eq!(own["detail"]["source"], "console");
    let run = wait_until("the policy's run on gpu-node-04", Duration::from_secs(30), || {
        runs(&s, "gpu-node-04").into_iter().next()
    });
    assert_eq!(
        (run["runbook"].as_str(), run["actor"].as_str()),
        (Some("gpu-node-recover"), Some("fault-policy")),
        "{run:#}"
    );
    assert!(!faults(&s).iter().any(|f| f["device"] == "leaf-b"), "no shared fault for one node");
}

#[test]
fn a_kernel_panic_on_a_gpu_nodes_console_is_a_fault_from_the_console() {
    let sim = fleet(26400);
    add_user(&sim, "ann", "operator", PASSWORD);
    let srv = serve(&sim);
    let s = login(&srv.addr, "ann", PASSWORD);
    consoles_connected(&s);
    sim.fault("gpu-node-05", "boot-loop");
    let f = wait_until("a console fault on gpu-node-05", Duration::from_secs(90), || {
        faults(&s).into_iter().find(|f| f["device"] == "gpu-node-05" && f["kind"] == "console-kernel-panic")
    });
    assert_eq!(f["severity"], "critical");
    assert!(f["message"].as_str().unwrap().starts_with("console: "), "{f:#}");
    assert!(f["message"].as_str().unwrap().contains("Kernel panic - not syncing: Fatal exception"), "{f:#}");
    assert_eq!(f["detail"]["source"], "console");
    assert_eq!(f["detail"]["rule"], "kernel-panic");
    // The policy's answer is recorded against it (the runbook awaits approval).
    let run = wait_until("the run awaiting approval", Duration::from_secs(30), || {
        runs(&s, "gpu-node-05").into_iter().next()
    });
    assert_eq!(run["state"], "waiting-approval", "{run:#}");
}

fn events(s: &common::Session<'_>) -> Vec<Value> {
    let (st, v) = s.call("GET", "/api/v1/events?limit=1000", None);
    assert_eq!(st, 200, "{v}");
    v.as_array().unwrap().clone()
}

#[test]
fn a_shared_rail_fault_is_resolved_only_when_every_members_link_is_seen_up() {
    let sim = fleet(27700);
    add_user(&sim, "ann", "operator", PASSWORD);
    let srv = serve(&sim);
    let s = login(&srv.addr, "ann", PASSWORD);
    consoles_connected(&s);
    let members = ["gpu-node-01", "gpu-node-02", "gpu-node-03"];
    for n in members {
        sim.fault(n, "rail-down=mlx5_1");
    }
    let leaf = wait_until("one fault on leaf-a", Duration::from_secs(60), || {
        faults(&s).into_iter().find(|f| f["device"] == "leaf-a" && f["kind"] == "shared-rail-down")
    });
    let id = leaf["id"].as_i64().unwrap();
    assert_eq!(leaf["detail"]["members"].as_array().unwrap().len(), 3, "{leaf:#}");

    // Two of the three come back: their consoles print the rail's link up (the simulator's `clear`).
    for n in &members[..2] {
        sim.fault(n, "clear");
    }
    let progress = |n: &str| {
        events(&s).into_iter().find(|e| {
            e["device"] == n && e["source"] == "correlation" && e["data"]["member"]["by"] == "link-up"
        })
    };
    for n in &members[..2] {
        let e = wait_until("the member's link up, recorded", Duration::from_secs(30), || progress(n));
        assert_eq!(e["data"]["fault"], id, "{e:#}");
        assert!(e["message"].as_str().unwrap().contains("Link up"), "{e:#}");
    }
    let e = progress("gpu-node-02").unwrap();
    assert!(e["message"].as_str().unwrap().contains("2 of 3 members clear, the fault stays open"), "{e:#}");
    // Two of three is not the part's evidence gone: still open, past the hold.
    std::thread::sleep(Duration::from_secs(4));
    let (st, f) = s.call("GET", &format!("/api/v1/faults/{id}"), None);
    assert_eq!((st, f["state"].as_str()), (200, Some("open")), "{f:#}");

    // The last member's rail comes up: the leaf's fault is resolved, each member's line named.
    sim.fault("gpu-node-03", "clear");
    let f = wait_until("the shared fault resolved", Duration::from_secs(30), || {
        let (_, f) = s.call("GET", &format!("/api/v1/faults/{id}"), None);
        (f["state"] == "resolved").then_some(f)
    });
    assert_eq!(f["kind"], "shared-rail-down");
    let resolved = events(&s)
        .into_iter()
        .find(|e| {
            e["source"] == "correlation" && e["data"]["fault"] == id && e["data"]["cleared_by"].is_array()
        })
        .expect("the resolution's event");
    let by = resolved["data"]["cleared_by"].as_array().unwrap();
    let devices: Vec<&str> = by.iter().map(|m| m["device"].as_str().unwrap()).collect();
    assert_eq!(devices, members, "{resolved:#}");
    assert!(by.iter().all(|m| m["by"] == "link-up" && m["rail"] == "mlx5_1"), "{resolved:#}");
    assert!(by.iter().all(|m| m["evidence"].as_str().unwrap().contains("rdma1: Link up")), "{resolved:#}");
    assert!(
        resolved["message"].as_str().unwrap().contains("every member's own evidence is gone (3 of 3)"),
        "{resolved:#}"
    );
    assert!(!faults(&s).iter().any(|f| f["kind"] == "rail-down"), "no member fault raised on the way");
}
