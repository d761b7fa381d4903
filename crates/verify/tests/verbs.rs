//! The `verbs` feature on a machine without RDMA hardware: the checks must FAIL cleanly with the errno
//! libibverbs reports (ENOSYS without kernel support, ENODEV when the named HCA is not listed), never pass,
//! never panic. On a recorded tree they are skipped (libibverbs only sees the live /sys).
#![cfg(feature = "verbs")]

use std::time::Duration;

use lifeline_verify::{Options, Policy, Roots, Status, run};

fn policy() -> Policy {
    Policy::from_toml_str(
        r#"
[[rails]]
hca = "mlx5_7"
netdev = "ens7np0"
ipv4 = "10.1.7.11/24"
rate_gbps = 400
mtu = 9000
link_layer = "ethernet"
"#,
        "verbs.toml",
    )
    .unwrap()
}

#[test]
fn verbs_fail_cleanly_without_rdma() {
    if std::path::Path::new("/sys/class/infiniband/mlx5_7").exists() {
        eprintln!("SKIP: this machine has an mlx5_7");
        return;
    }
    let opts = Options { interval: Some(Duration::ZERO), verbs: true, ..Options::default() };
    let r = run(&policy(), &opts);
    for id in ["rail.active_mtu", "rail.loopback"] {
        let c = r.checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(c.status, Status::Fail, "{id}: {}", c.message);
        assert!(c.message.contains("ENOSYS") || c.message.contains("ENODEV"), "{id}: {}", c.message);
    }
}

#[test]
fn verbs_skip_on_recorded_trees() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        roots: Roots::for_tree(dir.path()),
        interval: Some(Duration::ZERO),
        verbs: true,
        ..Options::default()
    };
    let r = run(&policy(), &opts);
    let c = r.checks.iter().find(|c| c.id == "rail.loopback").unwrap();
    assert_eq!(c.status, Status::Skip);
}
