//! Both ends of the cables under `lifeline serve`: the agent on gpu-node-01 posts its report with what
//! lldpd hears on its NICs (the lldpd 1.0.16 output recorded on a node, crates/netcfg/src/lldp/testdata),
//! the server checks the cabling on its own schedule (`cabling-interval`), and `verify-cabling` reads the
//! leaf (a simulated SONiC switch over SSH) and the node's report alike. A `miscabled` swap on the leaf
//! that the node's end does not hear is a swap on the switch side and a disagreement of the two ends; the
//! scheduled check raises the `cabling` fault and resolves it once the leaf is clean again.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Server, add_user, token};
use lifeline_test_utils::{SimProcess, agent_bin, output_json, output_text, unique_loopback, workspace_root};
use serde_json::Value;

/// leaf1 (SONiC) and gpu-node-01 with its two rails on Ethernet0 and Ethernet8: the names of the recording.
fn fleet(offset: u16) -> SimProcess {
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf1\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n\n\
         [[device]]\nname = \"gpu-node-01\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\" }}\n\
         gpus = {{ count = 2, model = \"NVIDIA H100 80GB HBM3\" }}\nrail = [\n\
         {{ hca = \"mlx5_0\", netdev = \"ens1np0\", leaf = \"leaf1\", port = \"Ethernet0\", subnet = \"127.100.0.0/24\", address = \"127.100.0.1\", rate-gbps = 400, mtu = 9000 }},\n\
         {{ hca = \"mlx5_1\", netdev = \"ens2np0\", leaf = \"leaf1\", port = \"Ethernet8\", subnet = \"127.100.1.0/24\", address = \"127.100.1.1\", rate-gbps = 400, mtu = 9000 }},\n]\n",
        unique_loopback(),
        22 + offset,
        unique_loopback(),
        443 + offset,
    );
    SimProcess::start(&inv, offset, common::ENV)
}

/// The agent on gpu-node-01 posts one report, its LLDP read from the node-side recording.
fn agent_posts(sim: &SimProcess, url: &str, token: &str) -> Output {
    let tree = sim.node_state.join("gpu-node-01");
    let rec = workspace_root().join("crates/netcfg/src/lldp/testdata/lldpd-node.json");
    Command::new(agent_bin())
        .args(["watch", "--server", url, "--interval", "1s", "--count", "1", "--inventory"])
        .arg(&sim.inventory)
        .args(["--node", "gpu-node-01", "--interval-ms", "20", "--sysfs-root"])
        .arg(tree.join("sysfs"))
        .arg("--gpu-snapshot")
        .arg(tree.join("gpus.json"))
        .arg("--lldp-json")
        .arg(rec)
        .env("LIFELINE_TOKEN", token)
        .env_remove("LIFELINE_TOKEN_FILE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn verify(sim: &SimProcess, code: i32) -> Value {
    let o = sim.lifeline(&["inventory", "verify-cabling", "--json"]);
    assert_eq!(o.status.code(), Some(code), "{}", output_text(&o));
    output_json(&o)
}

fn cabling_faults(sim: &SimProcess, state: &str) -> Vec<Value> {
    let o = sim.lifeline(&["fault", "list", "--state", state, "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().iter().filter(|f| f["kind"] == "cabling").cloned().collect()
}

/// Polls until `done` holds of the `state` cabling faults (the scheduled check runs every second).
fn until(sim: &SimProcess, state: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let f = cabling_faults(sim, state);
        if done(&f) {
            return f;
        }
        assert!(start.elapsed() < Duration::from_secs(90), "{what}: {f:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_node_end_is_compared_and_the_scheduled_check_raises_and_resolves_cabling_faults() {
    let sim = fleet(36200);
    add_user(&sim, "bot", "operator", "agent password 1");
    let tok = token(&sim, "bot");
    let srv = Server::start_with(
        &sim,
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\ncabling-interval = \"1s\"\n",
    );
    let url = format!("http://{}", srv.addr);

    let o = agent_posts(&sim, &url, &tok);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("posted"), "{}", output_text(&o));

    // Clean: the leaf and the node's report agree with the inventory, cable by cable.
    let v = verify(&sim, 0);
    assert_eq!((v["checked"].as_u64(), v["ok"].as_u64()), (Some(2), Some(2)), "{v}");
    let n = &v["nodes"];
    assert_eq!(n["reports"][0]["device"], "gpu-node-01", "{v}");
    assert_eq!(n["reports"][0]["neighbors"], 2, "{v}");
    assert!(n["reports"][0]["source"].as_str().unwrap().ends_with("lldpd-node.json"), "{v}");
    assert_eq!((n["checked"].as_u64(), n["ok"].as_u64()), (Some(2), Some(2)), "{v}");
    assert_eq!(n["findings"].as_array().unwrap().len(), 0, "{v}");
    assert!(cabling_faults(&sim, "open").is_empty());

    // The leaf's two cables crossed; the node's NICs still hear the inventory's ports.
    sim.fault("leaf1", "miscabled=Ethernet0:Ethernet8");
    let open = until(&sim, "open", "the scheduled check raises the swap", |f| f.len() == 1);
    assert_eq!(open[0]["device"], "gpu-node-01");
    let msg = open[0]["message"].as_str().unwrap();
    assert!(msg.contains("leaf1 Ethernet0") && msg.contains("the node hears"), "{msg}");
    // A fault the scheduled check opened goes through the fault policy like any other: its decision is
    // recorded beside it, once.
    let addr = srv.addr.to_string();
    let api = common::login(&addr, "bot", "agent password 1");
    let decided = || {
        let (_, events) = api.call("GET", "/api/v1/events?limit=1000", None);
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["source"] == "policy" && e["data"]["fault"] == open[0]["id"])
            .count()
    };
    let t0 = Instant::now();
    while decided() == 0 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(decided(), 1, "one policy decision for fault {}", open[0]["id"]);
    let v = verify(&sim, 1);
    let m = v["mismatches"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{v}");
    assert_eq!(m[0]["kind"], "swapped");
    let f = v["nodes"]["findings"].as_array().unwrap();
    assert_eq!(f.len(), 2, "{v}");
    assert!(f.iter().all(|x| x["kind"] == "sides-disagree"), "{v}");
    assert_eq!(
        (f[0]["switch_view"]["port"].as_str(), f[0]["node_view"]["port"].as_str()),
        (Some("Ethernet8"), Some("Ethernet0"))
    );
    let o = sim.lifeline(&["inventory", "verify-cabling"]);
    let t = output_text(&o);
    assert!(t.contains("gpu-node-01 (agent): 2 LLDP neighbour(s) heard"), "{t}");
    assert!(t.contains("sides-disagree: gpu-node-01 ens1np0: the switches see it on leaf1 Ethernet8"), "{t}");

    // Cabled as described again: the next scheduled check resolves the fault.
    sim.fault("leaf1", "clear");
    until(&sim, "open", "the scheduled check resolves it", <[Value]>::is_empty);
    assert_eq!(cabling_faults(&sim, "resolved").len(), 1);
    drop(srv);
}
