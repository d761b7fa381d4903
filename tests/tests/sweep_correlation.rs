//! Sweep faults blamed on the part the BMCs share, end to end: `lifeline serve` sweeps a `lifeline sim`
//! fleet every few seconds, with a fault policy that answers any `bmc-unreachable` (or any fault at all,
//! through `*`) with the `bmc-unreachable` runbook automatically.
//!
//! - every BMC cabled to one OOB switch stops answering (the simulator's `bmc-unresponsive` on each: what
//!   the loss of their switch looks like from the jump host): ONE open fault on the OOB switch listing
//!   the members, no member fault, no run and no action on any member; when they answer again, the
//!   shared fault is resolved by the sweep that reads them all clear;
//! - one BMC behind the other switch alone: that node's own `bmc-unreachable` and the policy's run of the
//!   `bmc-unreachable` runbook on it.

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, unique_loopback, wait_until};
use serde_json::Value;

const PASSWORD: &str = "correct horse battery";

/// node-1, node-2 cabled to oob-a; node-3..node-5 to oob-b; all in rack r1 on one PDU.
fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(common::ONE_RACK_INVENTORY);
    for sw in ["oob-a", "oob-b"] {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{sw}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"oob\"\nplatform = \"sonic\"\n\
             management = {{ address = \"{}\", port = {} }}\n",
            unique_loopback(),
            22 + offset
        ));
    }
    for n in 1..=5u16 {
        let sw = if n <= 2 { "oob-a" } else { "oob-b" };
        t.push_str(&format!(
            "\n[[device]]\nname = \"node-{n}\"\nrole = \"head-node\"\nrack = \"r1\"\npdus = [\"pdu-r1\"]\n\
             oob-switch = \"{sw}\"\noob-port = \"Gi1/0/{n}\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n",
            unique_loopback(),
            623 + offset,
        ));
    }
    SimProcess::start(
        &t,
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

/// Sweeps every 3 s; a node's unreachable BMC is answered by its runbook at once, and `*` would answer
/// anything else the same way (it must not answer a shared fault).
const CONFIG: &str = "[server]\nsweep-interval = \"3s\"\n\n\
    [[fault-policy]]\nkind = \"bmc-unreachable\"\nrunbook = \"bmc-unreachable\"\nmode = \"auto\"\n\n\
    [[fault-policy]]\nkind = \"*\"\nrunbook = \"bmc-unreachable\"\nmode = \"auto\"\n";

fn serve(sim: &SimProcess) -> ServeProcess {
    let rb = lifeline_test_utils::workspace_root().join("runbooks");
    ServeProcess::start_with(sim, &format!("[runbooks]\ndir = \"{}\"\n\n{CONFIG}", rb.display()))
}

fn runs(s: &common::Session<'_>, target: &str) -> Vec<Value> {
    let (st, v) = s.call("GET", &format!("/api/v1/runs?target={target}"), None);
    assert_eq!(st, 200, "{v}");
    v.as_array().unwrap().clone()
}

fn policy_events(s: &common::Session<'_>, device: &str) -> Vec<Value> {
    let (st, v) = s.call("GET", "/api/v1/events?limit=1000", None);
    assert_eq!(st, 200, "{v}");
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "policy" && e["device"] == device)
        .cloned()
        .collect()
}

#[test]
fn every_bmc_behind_one_oob_switch_is_one_switch_fault_and_one_bmc_alone_is_the_nodes_own() {
    let sim = fleet(26800);
    add_user(&sim, "ann", "operator", PASSWORD);
    let srv = serve(&sim);
    let s = login(&srv.addr, "ann", PASSWORD);
    // A clean sweep first: every BMC answers, nothing is open.
    std::thread::sleep(Duration::from_secs(4));
    assert!(s.open_faults().is_empty(), "{:#?}", s.open_faults());

    // At once, as their switch's loss strikes them (a sweep round may still straddle the moment).
    sim.fault("node-1,node-2", "bmc-unresponsive");
    let f = wait_until("one fault on oob-a", Duration::from_secs(120), || {
        s.open_faults().into_iter().find(|f| f["device"] == "oob-a" && f["kind"] == "shared-bmc-unreachable")
    });
    let members: Vec<&str> =
        f["detail"]["members"].as_array().unwrap().iter().map(|m| m["device"].as_str().unwrap()).collect();
    assert_eq!(members, ["node-1", "node-2"], "{f:#}");
    assert_eq!(f["detail"]["component"]["kind"], "oob-switch", "{f:#}");
    assert_eq!(f["detail"]["score"]["fraction"], 1.0, "2 of oob-a's 2, beside 2 of the rack's 5: {f:#}");
    assert!(f["message"].as_str().unwrap().contains("node-1, node-2"), "{f:#}");
    // Several sweeps later: still one fault, no member fault, no run, nothing done to a member; the
    // policy's decision on the switch fault calls a human and says why.
    std::thread::sleep(Duration::from_secs(10));
    let open = s.open_faults();
    assert_eq!(open.len(), 1, "{open:#?}");
    for n in ["node-1", "node-2"] {
        assert!(runs(&s, n).is_empty(), "{n}: {:#?}", runs(&s, n));
        assert!(sim.actions(n).is_empty(), "{n}: {:#?}", sim.actions(n));
    }
    assert!(runs(&s, "oob-a").is_empty(), "a node runbook is never run on the switch");
    let decisions = policy_events(&s, "oob-a");
    assert_eq!(decisions.len(), 1, "{decisions:#?}");
    let m = decisions[0]["message"].as_str().unwrap();
    assert!(
        m.contains(
            "notify: escalated to a human: no [[fault-policy]] runbook for shared-bmc-unreachable on oob-a"
        ),
        "{m}"
    );

    // They answer again: the sweep that reads both clear resolves the switch fault.
    for n in ["node-1", "node-2"] {
        sim.fault(n, "clear");
    }
    wait_until("oob-a's fault resolved", Duration::from_secs(90), || {
        s.open_faults().is_empty().then_some(())
    });
    let (_, resolved) = s.call("GET", "/api/v1/faults?state=resolved", None);
    assert!(
        resolved.as_array().unwrap().iter().any(|f| f["device"] == "oob-a"),
        "the switch fault is resolved, not dropped: {resolved:#}"
    );

    // One BMC behind oob-b alone (1 of its 3): that node's own fault and the policy's runbook for it.
    sim.fault("node-4", "bmc-unresponsive");
    let own = wait_until("node-4's own fault", Duration::from_secs(120), || {
        s.open_faults().into_iter().find(|f| f["device"] == "node-4" && f["kind"] == "bmc-unreachable")
    });
    assert_eq!(own["severity"], "critical", "{own:#}");
    let run = wait_until("the policy's run on node-4", Duration::from_secs(30), || {
        runs(&s, "node-4").into_iter().next()
    });
    assert_eq!(
        (run["runbook"].as_str(), run["actor"].as_str()),
        (Some("bmc-unreachable"), Some("fault-policy")),
        "{run:#}"
    );
    assert!(!s.open_faults().iter().any(|f| f["device"] == "oob-b"), "no shared fault for one BMC");
}
