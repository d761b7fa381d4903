//! A level's result as a report [`Check`]: the judgement's status and reasons, the numbers as evidence
//! (with the command line they came from), and a tool that is missing or printed nothing usable as
//! `Error` — the node is then not proven healthy, never passed.

use super::{
    DcgmDiag, LevelError, LevelThresholds, NcclPerf, PerftestBw, judge_dcgm, judge_ib_write_bw, judge_nccl,
};
use crate::report::{Check, Evidence, Status};

fn finish(id: &str, subject: &str, j: super::Judgement, pass_msg: String, evidence: Vec<Evidence>) -> Check {
    let msg = if j.status == Status::Pass { pass_msg } else { j.reasons.join("; ") };
    Check::new(id, subject, j.status, msg).with_evidence(evidence)
}

fn error(id: &str, subject: &str, e: &LevelError) -> Check {
    Check::new(id, subject, Status::Error, e.to_string())
}

/// `level.dcgm` for `dcgmi diag -r <level>`; `command` is the command line run (the evidence source).
pub fn dcgm_check(level: u8, command: &str, result: &Result<DcgmDiag, LevelError>) -> Check {
    let id = "level.dcgm";
    let d = match result {
        Ok(d) => d,
        Err(e) => return error(id, "gpus", e),
    };
    let mut ev = vec![Evidence::new("level", level.to_string(), command)];
    if let Some(v) = &d.version {
        ev.push(Evidence::new("dcgm_version", v, command));
    }
    for t in &d.tests {
        let key = match &t.gpus {
            Some(g) => format!("{} / {} ({g})", t.category, t.name),
            None => format!("{} / {}", t.category, t.name),
        };
        ev.push(Evidence::new(key, format!("{:?}", t.status).to_lowercase(), command));
    }
    let passed = d.tests.iter().filter(|t| t.status == super::DiagStatus::Pass).count();
    finish(id, "gpus", judge_dcgm(d), format!("DCGM diagnostic level {level}: {passed} tests passed"), ev)
}

/// `level.ib_write_bw` for one rail (`hca`, e.g. `mlx5_3`).
pub fn ib_write_bw_check(
    hca: &str,
    command: &str,
    result: &Result<PerftestBw, LevelError>,
    th: &LevelThresholds,
) -> Check {
    let (id, subject) = ("level.ib_write_bw", format!("rail {hca}"));
    let bw = match result {
        Ok(b) => b,
        Err(e) => return error(id, &subject, e),
    };
    let mut ev = Vec::new();
    if let (Some(row), Some(gbps)) = (bw.largest(), bw.average_gbps()) {
        ev.push(Evidence::new("bytes", row.bytes.to_string(), command));
        ev.push(Evidence::new("bw_average_gbps", format!("{gbps:.2}"), command));
        ev.push(Evidence::new("min_gbps", format!("{:.2}", th.ib_min_avg_gbps), "policy"));
    }
    let msg =
        format!("{:.2} Gb/s average (at least {:.2})", bw.average_gbps().unwrap_or(0.0), th.ib_min_avg_gbps);
    finish(id, &subject, judge_ib_write_bw(bw, th), msg, ev)
}

/// `level.nccl` for a single-node all-reduce.
pub fn nccl_check(command: &str, result: &Result<NcclPerf, LevelError>, th: &LevelThresholds) -> Check {
    let id = "level.nccl";
    let p = match result {
        Ok(p) => p,
        Err(e) => return error(id, "node", e),
    };
    let mut ev = vec![
        Evidence::new("ranks", p.ranks.to_string(), command),
        Evidence::new("wrong_total", p.wrong_total.to_string(), command),
    ];
    if let Some(a) = p.avg_busbw_gbs {
        ev.push(Evidence::new("avg_busbw_gbs", format!("{a:.3}"), command));
    }
    ev.push(Evidence::new("min_avg_busbw_gbs", format!("{:.3}", th.nccl_min_avg_busbw_gbs), "policy"));
    let msg = format!("Avg bus bandwidth {:.3} GB/s, no wrong elements", p.avg_busbw_gbs.unwrap_or(0.0));
    finish(id, "node", judge_nccl(p, th), msg, ev)
}
