//! `lifeline verify` and `lifeline drain`: the end of the recovery loop. The rules (only Lifeline's drains,
//! only with a passing report, everything audited) are the engine's; this module renders the decisions.

use lifeline_engine::ops::readmit::{ReportSource, SchedulerSpec, outcome_text, schedulers};

use crate::args::{DrainArgs, Global, ReportArgs, SchedulerArgs, VerifyArgs};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, verdict};
use crate::outln;

/// The report source the flags name (the agent over SSH by default).
pub fn source(a: &ReportArgs) -> ReportSource {
    if let Some(dir) = &a.node_state {
        ReportSource::NodeState {
            dir: dir.clone(),
            interval: a.interval_ms.map(std::time::Duration::from_millis),
        }
    } else if let Some(p) = &a.reports {
        ReportSource::Reports(p.clone())
    } else {
        ReportSource::Ssh { command: a.agent_command.clone(), options: a.ssh_option.clone() }
    }
}

pub fn spec(s: &SchedulerArgs) -> SchedulerSpec {
    SchedulerSpec { slurm_conf: s.slurm_conf.clone(), kube_url: s.kube_url.clone(), kube: s.kube }
}

pub async fn verify(g: &Global, a: VerifyArgs) -> CmdResult {
    let l = lifeline(g)?;
    let nodes = l.select_gpu_nodes(&a.targets)?;
    let scheds = if a.readmit { Some(schedulers(&spec(&a.sched)).await?) } else { None };
    let source = source(&a.report);
    let rows = l.verify(&nodes, &source, scheds.as_ref()).await?;
    let mut failed = false;
    for r in &rows {
        match &r.result {
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: ERROR: {}\n  not re-admitted", r.target, e.chain());
                }
            }
            Ok(v) if v.error.is_some() => {
                failed = true;
                if !g.json {
                    outln!(
                        "{}: ERROR: {}\n  not re-admitted",
                        v.node,
                        v.error.as_deref().unwrap_or_default()
                    );
                }
            }
            Ok(v) => {
                failed |= !v.passed() || !v.errors.is_empty();
                if g.json {
                    continue;
                }
                outln!(
                    "{}: {} — {} (report {})",
                    v.node,
                    v.verdict.as_str().to_uppercase(),
                    v.summary,
                    v.digest.as_deref().unwrap_or("-")
                );
                if a.readmit {
                    if !v.passed() {
                        outln!("  not re-admitted: the report did not pass; the node stays out of training");
                    }
                    for dec in &v.decisions {
                        outln!("  {}: {}: {}", dec.backend, outcome_text(&dec.outcome), dec.message);
                    }
                    for e in &v.errors {
                        outln!("  not re-admitted: {e}");
                    }
                }
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}

pub async fn drain(g: &Global, a: DrainArgs) -> CmdResult {
    let l = lifeline(g)?;
    let nodes = l.select_gpu_nodes(&a.targets)?;
    let s = schedulers(&spec(&a.sched)).await?;
    let rows = l.drain(&nodes, &a.reason, &s).await?;
    let mut failed = false;
    for r in &rows {
        match &r.result {
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: drain failed: {}", r.target, e.chain());
                }
            }
            Ok(d) => {
                for e in &d.errors {
                    failed = true;
                    if !g.json {
                        outln!("{}: drain failed: {e}", d.node);
                    }
                }
                for dec in &d.decisions {
                    failed |= matches!(dec.outcome, lifeline_readmit::Outcome::RefusedForeignHold { .. });
                    if !g.json {
                        outln!(
                            "{}: {}: {}: {}",
                            d.node,
                            dec.backend,
                            outcome_text(&dec.outcome),
                            dec.message
                        );
                    }
                }
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}
