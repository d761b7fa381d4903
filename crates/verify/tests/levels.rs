//! The `standard` verification level's parsers on recorded outputs of the real tools
//! (tests/data/levels, sources in its SOURCES.md), and the thresholds applied to them.

use lifeline_verify::levels::{
    BwUnit, DiagStatus, LevelError, LevelThresholds, judge_dcgm, judge_ib_write_bw, judge_nccl, parse_dcgmi,
    parse_dcgmi_json, parse_dcgmi_text, parse_nccl_perf, parse_perftest_bw,
};
use lifeline_verify::report::Status;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/levels").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn thresholds() -> LevelThresholds {
    LevelThresholds { ib_min_avg_gbps: 90.0, nccl_min_avg_busbw_gbs: 50.0, nccl_min_peak_busbw_gbs: 300.0 }
}

#[test]
fn dcgmi_text_h100_failure_is_read_test_by_test_with_wrapped_warnings() {
    let d = parse_dcgmi_text(&fixture("dcgmi_diag_r3_fail_h100.txt")).unwrap();
    assert_eq!(d.version.as_deref(), Some("3.3.8"));
    assert_eq!(d.driver.as_deref(), Some("560.35.03"));
    let names: Vec<(&str, &str)> = d.tests.iter().map(|t| (t.category.as_str(), t.name.as_str())).collect();
    assert_eq!(names.len(), 13, "{names:?}");
    assert_eq!(names[0], ("Deployment", "Denylist"));
    let mem = d.tests.iter().find(|t| t.name == "GPU Memory").unwrap();
    assert_eq!(
        (mem.category.as_str(), &mem.status, mem.gpus.as_deref()),
        ("Hardware", &DiagStatus::Fail, Some("All"))
    );
    assert_eq!(mem.details.len(), 8, "one warning per GPU");
    assert!(mem.details[7].starts_with("GPU 7 Error using CUDA API cuInit"), "{}", mem.details[7]);
    assert!(
        mem.details[0].contains("Unable to initialize CUDA library: 'system not yet initialized'"),
        "{}",
        mem.details[0]
    );
    let pcie = d.tests.iter().find(|t| t.name == "PCIe").unwrap();
    assert_eq!((pcie.category.as_str(), &pcie.status), ("Integration", &DiagStatus::Skip));
    let persist = d.tests.iter().find(|t| t.name == "Persistence Mode").unwrap();
    assert!(persist.details[0].contains("Persistence mode for GPU 4 is disab"), "{:?}", persist.details);
    let j = judge_dcgm(&d);
    assert_eq!(j.status, Status::Fail);
    assert_eq!(j.reasons.len(), 1, "{:?}", j.reasons);
    assert!(
        j.reasons[0].starts_with("Hardware / GPU Memory failed (All): GPU 0 Error using CUDA API cuInit"),
        "{:?}",
        j.reasons
    );
}

#[test]
fn dcgmi_text_error_row_fails_even_without_a_failed_test() {
    let d = parse_dcgmi(&fixture("dcgmi_diag_row_remap_error.txt")).unwrap();
    assert!(d.tests.is_empty());
    assert_eq!(
        d.errors,
        vec!["GPU 3 has uncorrectable memory errors and row remappings are pending".to_owned()]
    );
    let j = judge_dcgm(&d);
    assert_eq!(j.status, Status::Fail);
    assert!(j.reasons[0].contains("row remappings are pending"));
}

#[test]
fn dcgmi_json_from_dcgms_own_tests_passes_with_nulls_and_leading_text() {
    let raw = fixture("dcgmi_diag_json_dcgm_repo.json");
    let d = parse_dcgmi(&raw).unwrap();
    assert_eq!(d, parse_dcgmi_json(&raw).unwrap());
    assert_eq!(d.version.as_deref(), Some("3.1.0"));
    assert_eq!(d.tests.len(), 9 + 8, "9 deployment tests and the software test for each of 8 GPUs");
    assert!(d.tests.iter().all(|t| t.status == DiagStatus::Pass));
    let sw: Vec<&str> =
        d.tests.iter().filter(|t| t.name == "software").filter_map(|t| t.gpus.as_deref()).collect();
    assert_eq!(sw, ["0", "1", "2", "3", "4", "5", "6", "7"]);
    assert_eq!(judge_dcgm(&d).status, Status::Pass);
    // The same document with one GPU failing is a failure naming it.
    let failed = raw.replacen(
        "\"gpu_ids\" : 3,\n\t\t\t\t\t\t\t\t\"status\" : \"PASS\"",
        "\"gpu_ids\" : 3,\n\t\t\t\t\t\t\t\t\"status\" : \"FAIL\"",
        1,
    );
    assert_ne!(failed, raw);
    let j = judge_dcgm(&parse_dcgmi(&failed).unwrap());
    assert_eq!(j.status, Status::Fail);
    assert_eq!(j.reasons, vec!["Custom / software failed (3)".to_owned()]);
}

#[test]
fn ib_write_bw_in_gbits_and_in_mib_per_second() {
    let d = parse_perftest_bw(&fixture("ib_write_bw_duration_gbits.txt")).unwrap();
    assert_eq!((d.unit, d.rows.len()), (BwUnit::GbitPerSec, 1));
    assert_eq!(d.test.as_deref(), Some("RDMA_Write BW Test"));
    assert_eq!(d.device.as_deref(), Some("mlx5_0"));
    assert_eq!(d.link_type.as_deref(), Some("Ethernet"));
    let r = &d.rows[0];
    assert_eq!(
        (r.bytes, r.iterations, r.peak, r.average, r.msg_rate_mpps),
        (65536, 560960, 0.0, 98.03, Some(0.186974))
    );
    assert_eq!(judge_ib_write_bw(&d, &thresholds()).status, Status::Pass);
    let strict = LevelThresholds { ib_min_avg_gbps: 360.0, ..thresholds() };
    let j = judge_ib_write_bw(&d, &strict);
    assert_eq!(j.status, Status::Fail);
    assert_eq!(j.reasons, vec!["mlx5_0 average 98.03 Gb/s at 65536 bytes is below 360.00 Gb/s".to_owned()]);

    let sweep = parse_perftest_bw(&fixture("ib_write_bw_sweep_gbits.txt")).unwrap();
    assert_eq!(sweep.rows.len(), 23);
    assert_eq!(sweep.largest().map(|r| (r.bytes, r.average)), Some((8388608, 92.39)));

    let mib = parse_perftest_bw(&fixture("ib_write_bw_sweep_mbytes_cpufreq.txt")).unwrap();
    assert_eq!((mib.unit, mib.rows.len()), (BwUnit::MibPerSec, 23), "CPU-frequency warnings are skipped");
    let gbps = mib.average_gbps().unwrap();
    // 10787.86 MiB/s = 10787.86 * 2^20 * 8 / 1e9 Gb/s.
    assert!((gbps - 90.493).abs() < 0.01, "{gbps}");
    assert_eq!(judge_ib_write_bw(&mib, &thresholds()).status, Status::Pass);
}

#[test]
fn ib_write_bw_without_a_table_is_an_error_never_a_pass() {
    let e = parse_perftest_bw(&fixture("ib_write_bw_waiting_no_table.txt")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ib_write_bw: the output has no bandwidth table (the server never saw a client)"
    );
    assert_eq!(parse_perftest_bw("").unwrap_err(), LevelError::Empty { tool: "ib_write_bw" });
}

#[test]
fn all_reduce_perf_h100_table_avg_bus_bandwidth_and_wrong_counts() {
    let raw = fixture("all_reduce_perf_h100_16ranks.txt");
    let p = parse_nccl_perf(&raw).unwrap();
    assert_eq!(p.rows.len(), 31);
    assert_eq!(p.ranks, 16);
    assert_eq!(p.avg_busbw_gbs, Some(70.742));
    assert_eq!((p.out_of_bounds, p.wrong_total), (Some(0), 0));
    let last = p.rows.last().unwrap();
    assert_eq!(
        (last.bytes, last.count, last.dtype.as_str(), last.redop.as_str()),
        (8589934592, 2147483648, "float", "sum")
    );
    assert_eq!(
        (last.out_of_place.time_us, last.out_of_place.busbw_gbs, last.in_place.busbw_gbs),
        (47535.0, 338.82, 337.35)
    );
    assert_eq!(judge_nccl(&p, &thresholds()).status, Status::Pass);
    let j = judge_nccl(
        &p,
        &LevelThresholds { nccl_min_avg_busbw_gbs: 100.0, nccl_min_peak_busbw_gbs: 350.0, ..thresholds() },
    );
    assert_eq!(
        j.reasons,
        vec![
            "Avg bus bandwidth 70.742 GB/s is below 100.000 GB/s".to_owned(),
            "bus bandwidth 338.82 GB/s at 8589934592 bytes is below 350.00 GB/s".to_owned()
        ]
    );
    // A row with wrong elements (the column nccl-tests fills when validation fails) fails the run.
    let bad = raw.replacen("47535  180.71  338.82      0", "47535  180.71  338.82     12", 1);
    let p = parse_nccl_perf(&bad).unwrap();
    assert_eq!(p.wrong_total, 12);
    assert_eq!(
        judge_nccl(&p, &thresholds()).reasons,
        vec!["12 wrong elements across the table (#wrong)".to_owned()]
    );
    // Cut before the summary: no Avg bus bandwidth is not a pass.
    let cut: String = raw.lines().take(30).map(|l| format!("{l}\n")).collect();
    let j = judge_nccl(&parse_nccl_perf(&cut).unwrap(), &thresholds());
    assert_eq!(j.status, Status::Fail);
    assert!(j.reasons.iter().any(|r| r.contains("no Avg bus bandwidth")), "{:?}", j.reasons);
}

#[test]
fn all_reduce_perf_cuda_failure_is_a_tool_failure() {
    let e = parse_nccl_perf(&fixture("all_reduce_perf_not_initialized.txt")).unwrap_err();
    assert_eq!(
        e,
        LevelError::ToolFailed {
            tool: "nccl-tests",
            message: "test: Test CUDA failure common.cu:941 'system not yet initialized'; .. test pid 54340: Test failure common.cu:891"
                .into()
        }
    );
}

#[test]
fn unrelated_output_is_unparseable_for_every_parser() {
    let other = fixture("all_reduce_perf_h100_16ranks.txt");
    assert!(matches!(parse_dcgmi(&other), Err(LevelError::Unparseable { .. })));
    assert!(matches!(parse_perftest_bw(&other), Err(LevelError::Unparseable { .. })));
    let dcgm = fixture("dcgmi_diag_r3_fail_h100.txt");
    assert!(matches!(parse_nccl_perf(&dcgm), Err(LevelError::Unparseable { .. })));
    assert!(matches!(
        parse_dcgmi_json("{\"DCGM GPU Diagnostic\": {\"version\": \"4.2.3\"}}"),
        Err(LevelError::Unparseable { .. })
    ));
}

#[test]
fn level_results_become_report_checks_and_a_missing_tool_is_an_error() {
    use lifeline_verify::levels::{dcgm_check, ib_write_bw_check, locate_tool, nccl_check};
    let th = thresholds();
    let c = dcgm_check(3, "dcgmi diag -r 3", &parse_dcgmi(&fixture("dcgmi_diag_r3_fail_h100.txt")));
    assert_eq!((c.id.as_str(), c.status), ("level.dcgm", Status::Fail));
    assert!(
        c.evidence.iter().any(|e| e.key == "Hardware / GPU Memory (All)" && e.value == "fail"),
        "{:?}",
        c.evidence
    );
    let c = ib_write_bw_check(
        "mlx5_0",
        "ib_write_bw -d mlx5_0 -F --report_gbits peer",
        &parse_perftest_bw(&fixture("ib_write_bw_duration_gbits.txt")),
        &th,
    );
    assert_eq!(
        (c.subject.as_str(), c.status, c.message.as_str()),
        ("rail mlx5_0", Status::Pass, "98.03 Gb/s average (at least 90.00)")
    );
    let c = nccl_check(
        "all_reduce_perf -b 8 -e 8G -f 2 -g 1",
        &parse_nccl_perf(&fixture("all_reduce_perf_not_initialized.txt")),
        &th,
    );
    assert_eq!(c.status, Status::Error);
    assert!(c.message.contains("system not yet initialized"), "{}", c.message);
    let missing = locate_tool("dcgmi", "/usr/bin", |_| false).map(|_| unreachable!("not found"));
    let c = dcgm_check(2, "dcgmi diag -r 2", &missing);
    assert_eq!(
        (c.status, c.message.as_str()),
        (Status::Error, "dcgmi is not installed on this node (searched /usr/bin)")
    );
}
