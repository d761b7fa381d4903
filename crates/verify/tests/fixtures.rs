//! Fixture trees for a healthy node and for every fault the issue lists, generated per test in a temp
//! directory in the simulator's export layout (`sysfs/`, `proc/`, `ethtool/`, `gpus.json`). Each fault must
//! produce EXACTLY the expected failing check(s) and nothing else.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lifeline_verify::{GpuSource, Options, Policy, Report, Roots, Status, Verdict, run, run_with_hook};

const POLICY: &str = r#"
node = "gpu-node-01"

[gpus]
count = 8
model = "H100"
pcie_gen = 5
pcie_width = 16
nvlinks = 18
max_temp_c = 85

[[rails]]
hca = "mlx5_0"
netdev = "ens1np0"
ipv4 = "10.1.0.11/24"
rate_gbps = 400
mtu = 9000
link_layer = "ethernet"

[[rails]]
hca = "mlx5_1"
netdev = "ens2np0"
ipv4 = "10.1.1.11/24"
rate_gbps = 400
mtu = 9000
link_layer = "ethernet"

[host]
frontend_interface = "eno1"
rp_filter = [2]
pfc_max_pause_per_sec = 1000

[sampling]
interval_ms = 50
"#;

struct Node {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, format!("{text}\n")).unwrap();
}

fn gid(ip: [u8; 4]) -> String {
    format!("0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}", ip[0], ip[1], ip[2], ip[3])
}

impl Node {
    fn healthy() -> Node {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for (i, (hca, netdev)) in [("mlx5_0", "ens1np0"), ("mlx5_1", "ens2np0")].iter().enumerate() {
            let port = root.join(format!("sysfs/class/infiniband/{hca}/ports/1"));
            write(&port.join("state"), "4: ACTIVE");
            write(&port.join("phys_state"), "5: LinkUp");
            write(&port.join("rate"), "400 Gb/sec (4X NDR)");
            write(&port.join("link_layer"), "Ethernet");
            let ll = "fe80:0000:0000:0000:bace:f6ff:fe01:0203";
            let v4 = gid([10, 1, i as u8, 11]);
            for (n, (g, ty)) in
                [(ll, "IB/RoCE v1"), (ll, "RoCE v2"), (v4.as_str(), "IB/RoCE v1"), (v4.as_str(), "RoCE v2")]
                    .iter()
                    .enumerate()
            {
                write(&port.join(format!("gids/{n}")), g);
                write(&port.join(format!("gid_attrs/types/{n}")), ty);
                write(&port.join(format!("gid_attrs/ndevs/{n}")), netdev);
            }
            for c in ["symbol_error", "link_downed", "port_rcv_errors", "port_xmit_discards", "port_rcv_data"]
            {
                write(&port.join(format!("counters/{c}")), "0");
            }
            write(&root.join(format!("sysfs/class/net/{netdev}/mtu")), "9000");
            write(&root.join(format!("proc/sys/net/ipv4/conf/{netdev}/rp_filter")), "2");
            Node::ethtool(&root, netdev, 100, 40);
        }
        write(&root.join("sysfs/class/net/eno1/mtu"), "1500");
        write(&root.join("proc/sys/net/ipv4/conf/all/rp_filter"), "0");
        write(
            &root.join("proc/net/route"),
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             eno1\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
             eno1\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n\
             ens1np0\t0000010A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
        );
        let node = Node { _dir: dir, root };
        node.set_gpus(|_| {});
        node
    }

    fn ethtool(root: &Path, netdev: &str, rx: u64, tx: u64) {
        write(
            &root.join(format!("ethtool/{netdev}")),
            &format!(
                "NIC statistics:\n     rx_bytes: 123456\n     rx_prio3_pause: {rx}\n     tx_prio3_pause: {tx}\n     \
                 rx_prio3_pause_duration: {}",
                rx * 3
            ),
        );
    }

    /// Writes gpus.json in the simulator's schema 1 (every field it writes), after `edit`.
    fn set_gpus(&self, edit: impl FnOnce(&mut Vec<serde_json::Value>)) {
        let buses = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb];
        let mut gpus: Vec<serde_json::Value> = (0..8)
            .map(|i| {
                serde_json::json!({
                    "index": i, "uuid": format!("GPU-0000000{i}-aaaa-bbbb-cccc-000000000000"),
                    "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": format!("00000000:{:02X}:00.0", buses[i]),
                    "serial": "1650000000000", "ecc_volatile_uncorrected": 0, "ecc_aggregate_uncorrected": 0,
                    "retired_pages_pending": false, "remapped_rows_pending": false, "remapped_rows": 0,
                    "remapped_rows_failure": false, "xid_events": [], "nvlinks_up": 18, "nvlinks_down": 0,
                    "pcie_gen_current": 5, "pcie_gen_max": 5, "pcie_width_current": 16, "pcie_width_max": 16,
                    "temperature_c": 36, "power_w": 75, "throttle_reasons": []
                })
            })
            .collect();
        edit(&mut gpus);
        let snap = serde_json::json!({
            "schema": 1, "node": "gpu-node-01", "taken_at": "2026-11-21T02:00:00Z", "host_up": true,
            "driver_version": "550.90.07", "cuda_version": "12.4", "gpus": gpus
        });
        write(&self.root.join("gpus.json"), &serde_json::to_string_pretty(&snap).unwrap());
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn options(&self) -> Options {
        Options {
            roots: Roots::for_tree(&self.root),
            gpu: GpuSource::Snapshot(self.root.join("gpus.json")),
            interval: Some(Duration::from_millis(20)),
            node: None,
            verbs: false,
        }
    }

    fn check(&self) -> Report {
        run(&policy(), &self.options())
    }
}

fn policy() -> Policy {
    Policy::from_toml_str(POLICY, "fixture").unwrap()
}

/// (id, subject) of every check that is not pass/skip.
fn problems(r: &Report) -> Vec<(String, String, Status)> {
    r.problems().map(|c| (c.id.clone(), c.subject.clone(), c.status)).collect()
}

fn assert_only_fails(r: &Report, expected: &[(&str, &str)]) {
    let got = problems(r);
    let want: Vec<(String, String, Status)> =
        expected.iter().map(|(i, s)| (i.to_string(), s.to_string(), Status::Fail)).collect();
    assert_eq!(got, want, "\n{}", r.render_table());
    assert_eq!(r.verdict, Verdict::Fail);
}

#[test]
fn healthy_node_passes_every_check() {
    let n = Node::healthy();
    let r = n.check();
    assert_eq!(problems(&r), vec![], "\n{}", r.render_table());
    assert_eq!(r.verdict, Verdict::Pass);
    assert_eq!(r.summary.skip, 0, "a fully specified policy skips nothing:\n{}", r.render_table());
    // 2 rails x 7 rail checks, default route + 2 x (rp_filter, pfc), 2 + 8 x 6 GPU checks.
    assert_eq!(r.checks.len(), 14 + 5 + 50);
    let parsed = Report::from_json(&r.to_json_pretty()).unwrap();
    assert_eq!(parsed, r);
}

#[test]
fn rail_down() {
    let n = Node::healthy();
    write(&n.path("sysfs/class/infiniband/mlx5_1/ports/1/state"), "1: DOWN");
    write(&n.path("sysfs/class/infiniband/mlx5_1/ports/1/phys_state"), "3: Disabled");
    // What the kernel (and the simulator) show for a down port's speed.
    write(&n.path("sysfs/class/infiniband/mlx5_1/ports/1/rate"), "0 Gb/sec");
    let r = n.check();
    assert_only_fails(&r, &[("rail.link", "rail mlx5_1")]);
    let rate = r.checks.iter().find(|c| c.id == "rail.rate" && c.subject == "rail mlx5_1").unwrap();
    assert_eq!(rate.status, Status::Skip);
}

#[test]
fn wrong_mtu() {
    let n = Node::healthy();
    write(&n.path("sysfs/class/net/ens1np0/mtu"), "1500");
    let r = n.check();
    assert_only_fails(&r, &[("rail.mtu", "rail mlx5_0")]);
    let c = r.problems().next().unwrap();
    assert_eq!(c.evidence[0].value, "1500");
    assert_eq!(c.evidence[0].source, "/sys/class/net/ens1np0/mtu");
}

#[test]
fn missing_gid() {
    let n = Node::healthy();
    for i in [2, 3] {
        write(
            &n.path(&format!("sysfs/class/infiniband/mlx5_0/ports/1/gids/{i}")),
            &"0000:".repeat(7).add("0000"),
        );
    }
    assert_only_fails(&n.check(), &[("rail.gid", "rail mlx5_0")]);
}

#[test]
fn roce_v1_only_gid_is_not_enough() {
    let n = Node::healthy();
    write(&n.path("sysfs/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3"), "IB/RoCE v1");
    let r = n.check();
    assert_only_fails(&r, &[("rail.gid", "rail mlx5_0")]);
    assert!(r.problems().next().unwrap().message.contains("RoCE v1"));
}

#[test]
fn rising_errors() {
    let n = Node::healthy();
    let counter = n.path("sysfs/class/infiniband/mlx5_1/ports/1/counters/symbol_error");
    let r = run_with_hook(&policy(), &n.options(), || write(&counter, "7"));
    assert_only_fails(&r, &[("rail.counters", "rail mlx5_1")]);
    let c = r.problems().next().unwrap();
    assert!(c.message.contains("symbol_error +7"), "{}", c.message);
    assert!(c.evidence.iter().any(|e| e.key == "symbol_error" && e.value == "0 -> 7"));
}

#[test]
fn missing_hca() {
    let n = Node::healthy();
    fs::remove_dir_all(n.path("sysfs/class/infiniband/mlx5_1")).unwrap();
    let r = n.check();
    assert_only_fails(&r, &[("rail.present", "rail mlx5_1")]);
    let skipped: Vec<&str> =
        r.checks.iter().filter(|c| c.status == Status::Skip).map(|c| c.id.as_str()).collect();
    assert_eq!(skipped, ["rail.link", "rail.rate", "rail.link_layer", "rail.gid", "rail.counters"]);
}

#[test]
fn missing_infiniband_class_is_a_fail_not_a_skip() {
    let n = Node::healthy();
    fs::remove_dir_all(n.path("sysfs/class/infiniband")).unwrap();
    let r = n.check();
    assert_only_fails(&r, &[("rail.present", "rail mlx5_0"), ("rail.present", "rail mlx5_1")]);
    assert!(r.problems().next().unwrap().message.contains("/sys/class/infiniband is missing"));
}

#[test]
fn slow_rail() {
    let n = Node::healthy();
    write(&n.path("sysfs/class/infiniband/mlx5_0/ports/1/rate"), "200 Gb/sec (4X HDR)");
    assert_only_fails(&n.check(), &[("rail.rate", "rail mlx5_0")]);
}

#[test]
fn gpu_missing() {
    let n = Node::healthy();
    n.set_gpus(|g| {
        g.pop();
    });
    assert_only_fails(&n.check(), &[("gpu.count", "gpus")]);
}

#[test]
fn ecc() {
    let n = Node::healthy();
    n.set_gpus(|g| g[3]["ecc_volatile_uncorrected"] = 2.into());
    assert_only_fails(&n.check(), &[("gpu.ecc", "gpu 3")]);
}

#[test]
fn remapped_rows_pending() {
    let n = Node::healthy();
    n.set_gpus(|g| g[1]["remapped_rows_pending"] = true.into());
    assert_only_fails(&n.check(), &[("gpu.retired_pages", "gpu 1")]);
}

#[test]
fn xid() {
    let n = Node::healthy();
    n.set_gpus(|g| {
        g[5]["xid_events"] = serde_json::json!([
            {"code": 13, "at": "2026-11-21T01:00:00Z", "message": "Graphics Exception"},
            {"code": 79, "at": "2026-11-21T01:10:00Z", "message": "GPU has fallen off the bus"}
        ]);
        // A non-critical XID alone does not keep a node out.
        g[6]["xid_events"] = serde_json::json!([{"code": 13, "at": "x", "message": "app fault"}]);
    });
    let r = n.check();
    assert_only_fails(&r, &[("gpu.xid", "gpu 5")]);
    assert_eq!(r.problems().next().unwrap().message, "critical XID 79");
}

#[test]
fn nvlink_down() {
    let n = Node::healthy();
    n.set_gpus(|g| {
        g[2]["nvlinks_up"] = 16.into();
        g[2]["nvlinks_down"] = 2.into();
    });
    assert_only_fails(&n.check(), &[("gpu.nvlink", "gpu 2")]);
}

#[test]
fn pcie_downgrade() {
    let n = Node::healthy();
    n.set_gpus(|g| g[6]["pcie_width_current"] = 8.into());
    assert_only_fails(&n.check(), &[("gpu.pcie", "gpu 6")]);
    // An idle GPU's current generation drops legitimately; only the link maximum counts.
    let n = Node::healthy();
    n.set_gpus(|g| g[6]["pcie_gen_current"] = 1.into());
    assert_eq!(n.check().verdict, Verdict::Pass);
    n.set_gpus(|g| g[6]["pcie_gen_max"] = 4.into());
    assert_only_fails(&n.check(), &[("gpu.pcie", "gpu 6")]);
}

#[test]
fn thermal_throttle() {
    let n = Node::healthy();
    n.set_gpus(|g| g[0]["throttle_reasons"] = serde_json::json!(["gpu_idle", "hw_thermal_slowdown"]));
    assert_only_fails(&n.check(), &[("gpu.thermal", "gpu 0")]);
}

#[test]
fn default_route_on_a_rail() {
    let n = Node::healthy();
    let route = fs::read_to_string(n.path("proc/net/route")).unwrap();
    write(
        &n.path("proc/net/route"),
        &format!("{route}ens2np0\t00000000\t01010A0A\t0003\t0\t0\t50\t00000000\t0\t0\t0"),
    );
    assert_only_fails(&n.check(), &[("host.default_route", "host")]);
}

#[test]
fn strict_rp_filter_via_all() {
    let n = Node::healthy();
    // The kernel uses max(all, if): a strict `all` (1) beats a per-interface 0; the policy wants 2.
    write(&n.path("proc/sys/net/ipv4/conf/all/rp_filter"), "1");
    write(&n.path("proc/sys/net/ipv4/conf/ens1np0/rp_filter"), "0");
    write(&n.path("proc/sys/net/ipv4/conf/ens2np0/rp_filter"), "0");
    let r = n.check();
    assert!(r.problems().all(|c| c.message.starts_with("effective rp_filter 1")));
    assert_only_fails(&r, &[("host.rp_filter", "host ens1np0"), ("host.rp_filter", "host ens2np0")]);
}

#[test]
fn pfc_storm() {
    let n = Node::healthy();
    let root = n.root.clone();
    let r = run_with_hook(&policy(), &n.options(), || Node::ethtool(&root, "ens2np0", 100 + 500_000, 40));
    assert_only_fails(&r, &[("host.pfc", "host ens2np0")]);
}

#[test]
fn pfc_storm_stopped_by_the_nic_earlier() {
    // Counters static between the reads, but mlx5's storm watchdog fired during this driver load.
    let n = Node::healthy();
    let stats = n.path("ethtool/ens1np0");
    let text = fs::read_to_string(&stats).unwrap();
    write(
        &stats,
        &format!("{text}     tx_pause_storm_warning_events: 2\n     tx_pause_storm_error_events: 1"),
    );
    let r = n.check();
    assert_only_fails(&r, &[("host.pfc", "host ens1np0")]);
    assert!(r.problems().next().unwrap().message.contains("stopped 1 pause storm"));
}

#[test]
fn nvml_missing_is_an_error_never_a_pass() {
    let n = Node::healthy();
    let mut opts = n.options();
    opts.gpu = GpuSource::Nvml { kmsg: n.path("no-kmsg") };
    let r = run(&policy(), &opts);
    let p = problems(&r);
    assert_eq!(
        p,
        vec![("gpu.source".to_string(), "gpus".to_string(), Status::Error)],
        "\n{}",
        r.render_table()
    );
    assert_eq!(r.verdict, Verdict::Error);
    assert_eq!(r.verdict.exit_code(), 2);
    let msg = &r.problems().next().unwrap().message;
    assert!(msg.contains("NVML is not available") && msg.contains("expects 8 GPUs"), "{msg}");
}

#[test]
fn snapshot_of_a_host_that_was_down_is_an_error() {
    let n = Node::healthy();
    let text =
        fs::read_to_string(n.path("gpus.json")).unwrap().replace("\"host_up\": true", "\"host_up\": false");
    write(&n.path("gpus.json"), &text);
    let r = n.check();
    assert_eq!(r.verdict, Verdict::Error);
    assert!(r.problems().next().unwrap().message.contains("host was down"));
}

#[test]
fn unreadable_proc_is_an_error() {
    let n = Node::healthy();
    fs::remove_dir_all(n.path("proc")).unwrap();
    let r = n.check();
    assert_eq!(r.verdict, Verdict::Error);
    assert!(r.problems().all(|c| c.status == Status::Error && c.id.starts_with("host.")));
}

#[test]
fn tampered_report_is_rejected() {
    let n = Node::healthy();
    n.set_gpus(|g| g[3]["ecc_volatile_uncorrected"] = 2.into());
    let json = n.check().to_json_pretty();
    let forged = json.replacen("\"verdict\": \"fail\"", "\"verdict\": \"pass\"", 1);
    assert!(matches!(Report::from_json(&forged), Err(lifeline_verify::ReportError::Digest { .. })));
}

#[test]
fn policy_rejects_unknown_keys() {
    let err = Policy::from_toml_str(&POLICY.replace("mtu = 9000", "mut = 9000"), "p.toml").unwrap_err();
    assert!(lifeline_verify::error_chain(&err).contains("mut"), "{err}");
}

fn redacted_settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_redaction(".started_at", "[time]");
    s.add_redaction(".duration_us", "[us]");
    s.add_redaction(".digest", "[digest]");
    s.add_redaction(".sources.*", "[path]");
    s.add_redaction(".checks[].duration_us", "[us]");
    s
}

#[test]
fn snapshot_healthy() {
    let n = Node::healthy();
    let r = n.check();
    insta::assert_snapshot!("healthy_table", r.render_table());
    redacted_settings().bind(|| insta::assert_json_snapshot!("healthy_json", r));
}

#[test]
fn snapshot_faulty() {
    let n = Node::healthy();
    write(&n.path("sysfs/class/infiniband/mlx5_1/ports/1/state"), "1: DOWN");
    write(&n.path("sysfs/class/infiniband/mlx5_1/ports/1/phys_state"), "3: Disabled");
    n.set_gpus(|g| g[3]["ecc_volatile_uncorrected"] = 2.into());
    let r = n.check();
    insta::assert_snapshot!("faulty_table", r.render_table());
    redacted_settings().bind(|| insta::assert_json_snapshot!("faulty_json", r));
}

trait Add {
    fn add(self, s: &str) -> String;
}
impl Add for String {
    fn add(self, s: &str) -> String {
        self + s
    }
}
