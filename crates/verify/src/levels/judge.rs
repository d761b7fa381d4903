//! Thresholds over parsed results: pure functions from a typed result and a policy to a verdict with
//! its reasons, so what a tool measured and what Lifeline requires of it stay apart (and a threshold can
//! change without touching a parser).

use super::{DcgmDiag, DiagStatus, NcclPerf, PerftestBw};
use crate::report::Status;

/// What the `standard` level requires.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LevelThresholds {
    /// Minimum `ib_write_bw` average at the largest message size, Gb/s (e.g. 360 on a 400G NDR rail).
    pub ib_min_avg_gbps: f64,
    /// Minimum nccl-tests `Avg bus bandwidth`, GB/s.
    pub nccl_min_avg_busbw_gbs: f64,
    /// Minimum bus bandwidth of the largest size measured (out-of-place), GB/s; 0 disables.
    pub nccl_min_peak_busbw_gbs: f64,
}

/// A verdict and every reason for it (empty when it passed).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Judgement {
    pub status: Status,
    pub reasons: Vec<String>,
}

impl Judgement {
    fn from_reasons(reasons: Vec<String>) -> Judgement {
        Judgement { status: if reasons.is_empty() { Status::Pass } else { Status::Fail }, reasons }
    }
}

/// Fails on any Fail, Warn or unknown status and on any Error row; a run where nothing passed (all
/// skipped or not run) is not a pass either.
pub fn judge_dcgm(d: &DcgmDiag) -> Judgement {
    let mut reasons: Vec<String> = d.errors.iter().map(|e| format!("DCGM error: {e}")).collect();
    for t in &d.tests {
        let on = t.gpus.as_deref().map(|g| format!(" ({g})")).unwrap_or_default();
        let why = t.details.first().map(|w| format!(": {w}")).unwrap_or_default();
        match &t.status {
            DiagStatus::Pass | DiagStatus::Skip | DiagStatus::NotRun => {}
            DiagStatus::Fail => reasons.push(format!("{} / {} failed{on}{why}", t.category, t.name)),
            DiagStatus::Warn => reasons.push(format!("{} / {} warned{on}{why}", t.category, t.name)),
            DiagStatus::Other(s) => {
                reasons.push(format!("{} / {}: unknown status {s:?}{on}", t.category, t.name))
            }
        }
    }
    if !d.tests.iter().any(|t| t.status == DiagStatus::Pass) && reasons.is_empty() {
        reasons.push("no DCGM test passed (all skipped or not run)".into());
    }
    Judgement::from_reasons(reasons)
}

pub fn judge_ib_write_bw(bw: &PerftestBw, th: &LevelThresholds) -> Judgement {
    let mut reasons = Vec::new();
    match (bw.largest(), bw.average_gbps()) {
        (Some(_), Some(gbps)) if gbps >= th.ib_min_avg_gbps => {}
        (Some(row), Some(gbps)) => reasons.push(format!(
            "{} average {gbps:.2} Gb/s at {} bytes is below {:.2} Gb/s",
            bw.device.as_deref().unwrap_or("the HCA"),
            row.bytes,
            th.ib_min_avg_gbps
        )),
        _ => reasons.push("no bandwidth row".into()),
    }
    Judgement::from_reasons(reasons)
}

pub fn judge_nccl(p: &NcclPerf, th: &LevelThresholds) -> Judgement {
    let mut reasons: Vec<String> = p.failures.iter().map(|f| format!("nccl-tests: {f}")).collect();
    if p.wrong_total > 0 {
        reasons.push(format!("{} wrong elements across the table (#wrong)", p.wrong_total));
    }
    if let Some(n) = p.out_of_bounds.filter(|n| *n > 0) {
        reasons.push(format!("{n} out-of-bounds values"));
    }
    match p.avg_busbw_gbs {
        Some(avg) if avg < th.nccl_min_avg_busbw_gbs => reasons
            .push(format!("Avg bus bandwidth {avg:.3} GB/s is below {:.3} GB/s", th.nccl_min_avg_busbw_gbs)),
        Some(_) => {}
        None => reasons.push("no Avg bus bandwidth line (the run did not finish)".into()),
    }
    if th.nccl_min_peak_busbw_gbs > 0.0
        && let Some(r) = p.rows.iter().max_by_key(|r| r.bytes)
        && r.out_of_place.busbw_gbs < th.nccl_min_peak_busbw_gbs
    {
        reasons.push(format!(
            "bus bandwidth {:.2} GB/s at {} bytes is below {:.2} GB/s",
            r.out_of_place.busbw_gbs, r.bytes, th.nccl_min_peak_busbw_gbs
        ));
    }
    Judgement::from_reasons(reasons)
}
