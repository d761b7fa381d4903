//! `lifeline inventory verify-cabling` against `lifeline sim`: four leaves of four platforms (SONiC, EOS,
//! Cumulus, IOS) answer their LLDP show commands over SSH from the inventory's cabling; clean cabling
//! reports zero mismatches, the simulator's `miscabled` fault (two cables in each other's ports, or one
//! moved to an empty port) is found and named, raises `cabling` faults on the nodes concerned, and a
//! clean read after `clear` resolves them.

use lifeline_test_utils::{SimProcess, output_json as json, output_text as text, unique_loopback};
use serde_json::Value;

const LEAVES: &[(&str, &str, [&str; 2])] = &[
    ("leaf-sonic", "sonic", ["Ethernet0", "Ethernet8"]),
    ("leaf-eos", "eos", ["Ethernet1/1", "Ethernet2/1"]),
    ("leaf-cumulus", "cumulus", ["swp1", "swp2"]),
    ("leaf-ios", "ios", ["GigabitEthernet1/0/1", "GigabitEthernet1/0/2"]),
];

/// gpu-node-01 and -02, rail N of each cabled to leaf N (a rail-optimised fabric), node n on port n.
fn fleet(offset: u16) -> SimProcess {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n",
    );
    for (leaf, platform, _) in LEAVES {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
             platform = \"{platform}\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
            unique_loopback(),
            22 + offset
        ));
    }
    for n in 0..2usize {
        let rails: String = LEAVES
            .iter()
            .enumerate()
            .map(|(r, (leaf, _, ports))| {
                format!(
                    "  {{ hca = \"mlx5_{r}\", netdev = \"ens{}np0\", leaf = \"{leaf}\", port = \"{}\" }},\n",
                    r + 1,
                    ports[n]
                )
            })
            .collect();
        t.push_str(&format!(
            "\n[[device]]\nname = \"gpu-node-0{}\"\nrole = \"gpu-node\"\nrack = \"r1\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\nrail = [\n{rails}]\n",
            n + 1,
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

fn verify(sim: &SimProcess, code: i32) -> Value {
    let o = sim.lifeline(&["inventory", "verify-cabling", "--json"]);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    json(&o)
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect()
}

/// Open `cabling` fault records, by device.
fn open_cabling_faults(sim: &SimProcess) -> Vec<String> {
    let o = sim.lifeline(&["fault", "list", "--state", "open", "--limit", "1000", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let faults: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut v: Vec<String> = faults
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "cabling")
        .map(|f| f["device"].as_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn clean_cabling_then_a_swap_and_a_moved_cable_are_named_and_raise_cabling_faults() {
    let sim = fleet(27300);

    // Clean: every leaf read over SSH, every rail where the inventory says.
    let v = verify(&sim, 0);
    assert_eq!(
        (v["cables"].as_u64(), v["checked"].as_u64(), v["ok"].as_u64()),
        (Some(8), Some(8), Some(8)),
        "{v}"
    );
    assert_eq!(v["mismatches"].as_array().unwrap().len(), 0, "{v}");
    for s in v["switches"].as_array().unwrap() {
        assert_eq!(s["neighbors"].as_u64(), Some(2), "{s}");
        assert!(s.get("error").is_none(), "{s}");
    }
    assert!(open_cabling_faults(&sim).is_empty());

    // Two cables swapped on the SONiC leaf: one mismatch naming both ports and both nodes.
    sim.fault("leaf-sonic", "miscabled=Ethernet0:Ethernet8");
    let v = verify(&sim, 1);
    let m = v["mismatches"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{v}");
    assert_eq!(m[0]["kind"], "swapped");
    assert_eq!(
        (m[0]["at"]["switch"].as_str(), m[0]["at"]["port"].as_str()),
        (Some("leaf-sonic"), Some("Ethernet0"))
    );
    assert_eq!(m[0]["other"]["port"], "Ethernet8");
    assert_eq!(m[0]["seen"]["device"], "gpu-node-02");
    assert_eq!(strs(&m[0]["devices"]), ["gpu-node-01", "gpu-node-02"]);
    let msg = m[0]["message"].as_str().unwrap();
    assert!(msg.contains("leaf-sonic Ethernet0") && msg.contains("leaf-sonic Ethernet8"), "{msg}");
    assert_eq!(v["ok"].as_u64(), Some(6));
    assert_eq!(strs(&v["faults"]["raised"]), ["gpu-node-01", "gpu-node-02"]);
    assert_eq!(open_cabling_faults(&sim), ["gpu-node-01", "gpu-node-02"]);

    // The text form says the same in words.
    let o = sim.lifeline(&["inventory", "verify-cabling"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("swapped: leaf-sonic Ethernet0 has gpu-node-02 ens1np0"), "{}", text(&o));

    // Back as described: a clean read resolves both faults.
    sim.fault("leaf-sonic", "clear");
    let v = verify(&sim, 0);
    assert_eq!(strs(&v["faults"]["resolved"]), ["gpu-node-01", "gpu-node-02"]);
    assert!(open_cabling_faults(&sim).is_empty());

    // One cable moved to an empty port on the Cumulus leaf (lldpd JSON over SSH): the wrong port, named.
    sim.fault("leaf-cumulus", "miscabled=swp1:swp9");
    let v = verify(&sim, 1);
    let m = v["mismatches"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{v}");
    assert_eq!(m[0]["kind"], "wrong-port");
    assert_eq!(m[0]["expected"]["device"], "gpu-node-01");
    assert_eq!(m[0]["other"]["port"], "swp9");
    assert!(m[0].get("seen").is_none(), "swp1 is empty: {v}");
    assert_eq!(open_cabling_faults(&sim), ["gpu-node-01"]);
}
