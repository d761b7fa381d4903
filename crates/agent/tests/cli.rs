//! Drives the `lifeline-agent` binary the way the jump host does: exit codes 0/1/2, table and JSON.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn agent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lifeline-agent")).args(args).output().unwrap()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{text}\n")).unwrap();
}

const POLICY: &str = r#"
node = "n1"
[gpus]
count = 1
model = "H100"
[[rails]]
hca = "mlx5_0"
netdev = "ens1np0"
ipv4 = "10.1.0.11/24"
rate_gbps = 400
mtu = 9000
link_layer = "ethernet"
[host]
frontend_interface = "eno1"
"#;

/// A one-rail, one-GPU node in the simulator's export layout.
fn tree(dir: &Path) {
    let port = dir.join("sysfs/class/infiniband/mlx5_0/ports/1");
    write(&port.join("state"), "4: ACTIVE");
    write(&port.join("phys_state"), "5: LinkUp");
    write(&port.join("rate"), "400 Gb/sec (4X NDR)");
    write(&port.join("link_layer"), "Ethernet");
    write(&port.join("gids/3"), "0000:0000:0000:0000:0000:ffff:0a01:000b");
    write(&port.join("gid_attrs/types/3"), "RoCE v2");
    write(&port.join("counters/symbol_error"), "0");
    write(&dir.join("sysfs/class/net/ens1np0/mtu"), "9000");
    write(&dir.join("proc/sys/net/ipv4/conf/all/rp_filter"), "0");
    write(&dir.join("proc/sys/net/ipv4/conf/ens1np0/rp_filter"), "2");
    write(
        &dir.join("proc/net/route"),
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
         eno1\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0",
    );
    write(
        &dir.join("gpus.json"),
        r#"{"schema":1,"node":"n1","taken_at":"t","host_up":true,"driver_version":"550","gpus":[
            {"index":0,"name":"NVIDIA H100 80GB HBM3","ecc_volatile_uncorrected":0,"temperature_c":40,
             "xid_events":[],"throttle_reasons":[]}]}"#,
    );
    write(&dir.join("policy.toml"), POLICY);
}

fn args<'a>(dir: &'a str, extra: &[&'a str]) -> Vec<String> {
    let mut v: Vec<String> =
        ["check", "--policy", &format!("{dir}/policy.toml"), "--sysfs-root", &format!("{dir}/sysfs")]
            .iter()
            .map(|s| s.to_string())
            .collect();
    v.extend(["--gpu-snapshot".to_string(), format!("{dir}/gpus.json"), "--interval-ms".into(), "10".into()]);
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(a: &[String]) -> Output {
    agent(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn healthy_exits_0_with_table_and_json() {
    let d = tempfile::tempdir().unwrap();
    tree(d.path());
    let dir = d.path().to_str().unwrap();
    let out = run(&args(dir, &[]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("node n1: PASS") && text.contains("report sha256:"), "{text}");

    let out = run(&args(dir, &["--json"]));
    assert_eq!(out.status.code(), Some(0));
    let report = lifeline_verify::Report::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(report.schema, "lifeline.verify/v1");
    assert!(report.sources.sysfs_root.ends_with("sysfs") && report.sources.proc_root.ends_with("proc"));
    assert_eq!(report.node, "n1", "the policy's node name wins");

    // Without a node name in the policy, a recorded tree DIR/<node>/sysfs names the report.
    let node_dir = d.path().join("gpu-node-07");
    fs::create_dir_all(&node_dir).unwrap();
    fs::rename(d.path().join("sysfs"), node_dir.join("sysfs")).unwrap();
    fs::rename(d.path().join("proc"), node_dir.join("proc")).unwrap();
    write(&d.path().join("policy.toml"), &POLICY.replace("node = \"n1\"", ""));
    let sysfs = node_dir.join("sysfs");
    let mut a = args(dir, &["--json"]);
    a[4] = sysfs.to_str().unwrap().to_owned();
    let out = run(&a);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report = lifeline_verify::Report::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_eq!(report.node, "gpu-node-07");
}

#[test]
fn fault_exits_1_error_exits_2() {
    let d = tempfile::tempdir().unwrap();
    tree(d.path());
    let dir = d.path().to_str().unwrap();
    write(&d.path().join("sysfs/class/net/ens1np0/mtu"), "1500");
    let out = run(&args(dir, &["--json"]));
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["verdict"], "fail");

    write(&d.path().join("sysfs/class/net/ens1np0/mtu"), "9000");
    fs::remove_file(d.path().join("gpus.json")).unwrap();
    let out = run(&args(dir, &[]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot read GPU snapshot"));
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(agent(&["check"]).status.code(), Some(2));
    assert_eq!(agent(&["check", "--inventory", "x.toml"]).status.code(), Some(2));
    assert_eq!(agent(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(agent(&["check", "--policy", "/nonexistent/policy.toml"]).status.code(), Some(2));
    assert_eq!(agent(&["--help"]).status.code(), Some(0));
}

#[test]
fn expectations_from_the_inventory() {
    let inv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../inventory/example-cluster.toml");
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("sysfs/class")).unwrap();
    let sysfs = d.path().join("sysfs");
    let out = agent(&[
        "check",
        "--inventory",
        inv,
        "--node",
        "gpu-node-01",
        "--sysfs-root",
        sysfs.to_str().unwrap(),
        "--gpu-snapshot",
        "/nonexistent.json",
        "--interval-ms",
        "0",
        "--json",
    ]);
    // No /sys/class/infiniband on a node whose inventory entry has 10 rails: fail (not skip, not error).
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["node"], "gpu-node-01");
    let present_fails = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == "rail.present" && c["status"] == "fail")
        .count();
    assert_eq!(present_fails, 10);
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == "gpu.source" && c["message"].as_str().unwrap().contains("expects 8 GPUs"))
    );

    let out = agent(&["check", "--inventory", inv, "--node", "no-such-node"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the inventory"));
}
