//! The verification levels' parsers (dcgmi diag text and JSON, perftest ib_write_bw, nccl-tests) on any
//! bytes. Properties: no input panics; a parse that succeeds is never empty (rows, tests or errors), so
//! no garbage reads as a pass; a judgement of a parse never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_verify::levels::{
    LevelThresholds, judge_dcgm, judge_ib_write_bw, judge_nccl, parse_dcgmi, parse_dcgmi_json, parse_dcgmi_text,
    parse_nccl_perf, parse_perftest_bw,
};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let th = LevelThresholds { ib_min_avg_gbps: 90.0, nccl_min_avg_busbw_gbs: 50.0, nccl_min_peak_busbw_gbs: 0.0 };
    for d in [parse_dcgmi(&s), parse_dcgmi_text(&s), parse_dcgmi_json(&s)].into_iter().flatten() {
        assert!(!d.tests.is_empty() || !d.errors.is_empty(), "an empty DCGM parse: {d:?}");
        let _ = judge_dcgm(&d);
    }
    if let Ok(b) = parse_perftest_bw(&s) {
        assert!(!b.rows.is_empty());
        assert!(b.average_gbps().is_some());
        let _ = judge_ib_write_bw(&b, &th);
    }
    if let Ok(n) = parse_nccl_perf(&s) {
        assert!(!n.rows.is_empty());
        let _ = judge_nccl(&n, &th);
    }
});
