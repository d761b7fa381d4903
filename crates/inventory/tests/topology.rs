//! The topology keys (rail leaf and port, PDUs, NVLink domain, OOB switch and port): the example's cabling
//! loads into the model, and each kind of wrong reference is one error at the key that says it.

use std::path::Path;

use lifeline_inventory::check_str;

mod support;
use support::*;

/// The one error of `text`, which must be on the line of `needle`.
fn one_error_at(text: &str, needle: &str, says: &str) {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with(&format!("inv.toml:{}:", line_of(text, needle))), "{e:?}");
    assert!(e[0].contains(says), "{e:?}");
}

const RAIL3_NODE1: &str = "address = \"127.100.3.1\", rate-gbps = 400, mtu = 9000, link-layer = \"ethernet\", leaf = \"backend-leaf-01\", port = \"Ethernet24\"";

#[test]
fn the_example_cabling_loads() {
    let r = check_str(&example_path(), &example());
    assert!(!r.has_errors(), "{:#?}", r.diagnostics);
    let inv = r.inventory.unwrap();
    let n1 = inv.device("gpu-node-01").unwrap();
    let r3 = n1.rails.iter().find(|r| r.hca == "mlx5_3").unwrap();
    assert_eq!((r3.leaf.as_deref(), r3.port.as_deref()), (Some("backend-leaf-01"), Some("Ethernet24")));
    assert_eq!(n1.pdus, ["pdu-r01-a", "pdu-r01-b"]);
    assert_eq!((n1.oob_switch.as_deref(), n1.oob_port.as_deref()), (Some("oob-sw-01"), Some("Gi1/0/1")));
    let n5 = inv.device("gpu-node-05").unwrap();
    assert!(n5.backend_rails().all(|r| r.leaf.as_deref() == Some("backend-leaf-02")));
    // Storage rails are not cabled in the example: the keys are optional.
    assert!(n5.storage_rails().all(|r| r.leaf.is_none()));
}

#[test]
fn a_rail_leaf_must_be_a_leaf_switch_of_the_rail_fabric() {
    let t = example();
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("backend-leaf-01", "backend-leaf-09"));
    one_error_at(
        &bad,
        "backend-leaf-09",
        "rail.leaf of rail `mlx5_3` of `gpu-node-01` names unknown device `backend-leaf-09`",
    );
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("backend-leaf-01", "gpu-node-02"));
    one_error_at(&bad, "leaf = \"gpu-node-02\"", "names `gpu-node-02`, which is not a switch");
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("backend-leaf-01", "storage-leaf-01"));
    one_error_at(
        &bad,
        "leaf = \"storage-leaf-01\"",
        "a storage switch, but the link is on the backend fabric",
    );
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("backend-leaf-01", "backend-spine-01"));
    one_error_at(&bad, "leaf = \"backend-spine-01\"", "a spine: rails are cabled to leaves");
}

#[test]
fn one_port_takes_one_cable_and_a_port_needs_its_switch() {
    let t = example();
    // gpu-node-01's mlx5_4 is in Ethernet32; cabling its mlx5_3 there too is the error, at the second one.
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("Ethernet24", "Ethernet32"));
    let e = errors(&bad);
    assert_eq!(e.len(), 1, "{e:#?}");
    let second = line_of(&bad, "port = \"Ethernet40\"") - 1;
    assert!(e[0].starts_with(&format!("inv.toml:{second}:")), "{e:?}");
    assert!(e[0].contains("port Ethernet32 of `backend-leaf-01` is cabled twice"), "{e:?}");
    let bad = edit(&t, RAIL3_NODE1, &RAIL3_NODE1.replace("leaf = \"backend-leaf-01\", ", ""));
    one_error_at(&bad, "address = \"127.100.3.1\"", "rail.port of `gpu-node-01` needs a rail.leaf");
    let bad = edit(&t, "oob-port = \"Gi1/0/2\"", "oob-port = \"Gi1/0/1\"");
    let e = errors(&bad);
    assert_eq!(e.len(), 1, "{e:#?}");
    // gpu-node-02's oob-port: three lines above its first rail.
    let at = line_of(&bad, "address = \"127.100.0.2\"") - 3;
    assert!(e[0].starts_with(&format!("inv.toml:{at}:")), "{e:?}");
    assert!(
        e[0].contains("port Gi1/0/1 of `oob-sw-01` is cabled twice: `gpu-node-02` and `gpu-node-01`"),
        "{e:?}"
    );
}

#[test]
fn oob_switch_pdus_and_nvlink_domain_are_checked() {
    let t = example();
    let bad = edit(
        &t,
        "oob-switch = \"oob-sw-01\"\noob-port = \"Gi1/0/3\"",
        "oob-switch = \"backend-leaf-01\"\noob-port = \"Gi1/0/3\"",
    );
    one_error_at(
        &bad,
        "oob-switch = \"backend-leaf-01\"",
        "a backend switch, but the link is on the oob fabric",
    );
    let bad = edit(
        &t,
        "pdus = [\"pdu-r01-a\", \"pdu-r01-b\"]\noob-switch = \"oob-sw-01\"\noob-port = \"Gi1/0/3\"",
        "pdus = [\"pdu-r01-a\", \"pdu-r01-a\"]\noob-switch = \"oob-sw-01\"\noob-port = \"Gi1/0/3\"",
    );
    one_error_at(
        &bad,
        "pdus = [\"pdu-r01-a\", \"pdu-r01-a\"]",
        "PDU `pdu-r01-a` listed twice for `gpu-node-03`",
    );
    let bad = edit(
        &t,
        "name = \"head-node-01\"\nrole = \"head-node\"\n",
        "name = \"head-node-01\"\nrole = \"head-node\"\nnvlink-domain = \"nvl-1\"\n",
    );
    one_error_at(&bad, "nvlink-domain = \"nvl-1\"", "nvlink-domain applies to gpu-node devices only");
    let ok = edit(&t, "oob-port = \"Gi1/0/8\"", "oob-port = \"Gi1/0/8\"\nnvlink-domain = \"nvl72-r02\"");
    let r = check_str(Path::new("inv.toml"), &ok);
    assert!(!r.has_errors(), "{:#?}", r.diagnostics);
    assert_eq!(
        r.inventory.unwrap().device("gpu-node-08").unwrap().nvlink_domain.as_deref(),
        Some("nvl72-r02")
    );
    let bad = edit(&t, "oob-port = \"Gi1/0/8\"", "oob-port = \"Gi1/0/8\"\nnvlink-domain = \"NVL 72\"");
    one_error_at(&bad, "nvlink-domain = \"NVL 72\"", "invalid NVLink domain name");
}
