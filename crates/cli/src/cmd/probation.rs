//! `lifeline fault lemons`, `fault release-lemon` and `fault probation-check`: probation and lemons
//! (`lifeline_engine::probation`). The rules, the recording and the auditing are the engine's; this module
//! parses and renders.

use clap::Args;
use lifeline_engine::ops::readmit::schedulers;
use lifeline_engine::probation::Standing;

use crate::args::{Global, ReportArgs, SchedulerArgs};
use crate::cmd::verify::{source, spec};
use lifeline_engine::Lifeline;

use crate::cmd::print_json;
use crate::exit::{CmdResult, Exit, verdict};
use crate::outln;

#[derive(Debug, Args)]
pub struct ProbationCheckArgs {
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub sched: SchedulerArgs,
    /// Check every node on probation now, not only those whose check is due (`[probation] check-interval`).
    #[arg(long)]
    pub all: bool,
    /// Record recurrences without draining (no scheduler is asked).
    #[arg(long)]
    pub no_drain: bool,
}

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn render(st: &Standing) -> Result<(), Exit> {
    let state = if st.readmit_refused {
        "LEMON (re-admission refused until a human releases it)"
    } else if st.lemon {
        "LEMON"
    } else {
        "watched"
    };
    outln!("{}: {state}; recurrence score {} of {}", st.node, st.score, st.threshold);
    if let Some(p) = &st.probation {
        outln!(
            "  probation {} since {} until {} ({} check(s))",
            p.state,
            when(p.readmitted_at_ms),
            when(p.until_ms),
            p.checks
        );
    }
    for r in &st.history {
        let msg = r.detail.get("message").and_then(|m| m.as_str()).unwrap_or_default();
        let fault = r.fault.map(|f| format!(" fault #{f}")).unwrap_or_default();
        outln!("  {} {}{fault}: {msg}", when(r.at_ms), r.cause);
    }
    for r in &st.releases {
        let used = r.used_at_ms.map(|u| format!(", used {}", when(u))).unwrap_or_else(|| ", unused".into());
        outln!("  released by {} at {}{used}: {}", r.by, when(r.at_ms), r.reason);
    }
    Ok(())
}

pub async fn lemons(g: &Global, l: &Lifeline, all: bool) -> Result<(), Exit> {
    let list = l.lemons(all).await?;
    if g.json {
        print_json(&list)?;
    } else if list.is_empty() {
        outln!("{}", if all { "no node on probation or with a recurrence" } else { "no lemons" });
    } else {
        for st in &list {
            render(st)?;
        }
    }
    Ok(())
}

pub async fn release(g: &Global, l: &Lifeline, node: &str, reason: &str) -> Result<(), Exit> {
    let node = l.select_gpu_nodes(&[node.to_owned()])?.pop().map(|d| d.name.to_string()).unwrap_or_default();
    let r = l.release_lemon(&node, reason).await?;
    if g.json {
        print_json(&r)?;
    } else {
        outln!("{node}: released by {} ({}); the next re-admission may proceed once", r.by, r.reason);
    }
    Ok(())
}

pub async fn check(g: &Global, l: &Lifeline, a: ProbationCheckArgs) -> CmdResult {
    let scheds = if a.no_drain { None } else { Some(schedulers(&spec(&a.sched)).await?) };
    let rows = l.probation_check(&source(&a.report), scheds.as_ref(), a.all).await?;
    let mut failed = false;
    for r in &rows {
        match &r.result {
            Err(e) => {
                failed = true;
                if !g.json {
                    outln!("{}: ERROR: {}", r.target, e.chain());
                }
            }
            Ok(c) => {
                failed |= c.outcome == "recurred" || c.outcome == "error";
                if !g.json {
                    outln!("{}: {}: {}", c.node, c.outcome, c.message);
                    if let Some(d) = c.recurred.as_ref().and_then(|r| r.drained.as_ref()) {
                        for e in &d.errors {
                            outln!("  drain failed: {e}");
                        }
                    }
                }
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    } else if rows.is_empty() {
        outln!("no probation check due");
    }
    Ok(verdict(failed))
}
