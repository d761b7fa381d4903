//! What proves a recovery: waiting for a boot on in-band evidence (not a power state), and a fault's own
//! rule evaluated again on a fresh observation. A run once went `succeeded` with its switch still looping
//! in its bootloader, and a GPU node was verified while its OS was still booting; these are the checks
//! that make `succeeded` mean the node or switch is back.

use std::time::{Duration, Instant};

use lifeline_engine::Lifeline;
use lifeline_engine::fault_rules::{AGENT_REPORT, Recheck};
use lifeline_engine::ops::readmit::ReportSource;
use lifeline_engine::ops::wait::agent_up;
use serde_json::{Value, json};

use crate::steps::{StepCtx, StepResult, device};

/// The report source a boot wait and `fault-cleared` read, as the `verify` step does.
fn report_source(ctx: &StepCtx<'_>) -> ReportSource {
    ctx.env.reports.clone().unwrap_or(ReportSource::Ssh {
        command: "lifeline-agent check --policy /dev/stdin --json".into(),
        options: Vec::new(),
    })
}

/// Waits until the OS is up, proven in band: the console shows a login prompt (`pattern`), or the agent
/// answers with the host up. The first signal ends the wait and is named in the journal; a BMC's power
/// state or `BootProgress` alone never does (both say "on"/"running" over a hung OS).
pub(crate) async fn wait_boot(
    ctx: &StepCtx<'_>,
    l: &Lifeline,
    pattern: &str,
    interval: Duration,
) -> StepResult {
    let d = match device(ctx) {
        Ok(d) => d,
        Err(e) => return StepResult::error(e),
    };
    let timeout = ctx.step.timeout.saturating_sub(Duration::from_millis(500)).max(Duration::from_millis(100));
    let started = Instant::now();
    let source = report_source(ctx);
    // Servers run an agent; a switch proves its boot on its console only.
    let has_agent = d.role != lifeline_types::Role::Switch;
    let console = l.console_wait(ctx.target, pattern, timeout, ctx.since);
    let agent = async {
        let mut last = String::from("agent: not asked");
        if !has_agent {
            std::future::pending::<()>().await;
        }
        while started.elapsed() + interval < timeout {
            let (up, seen) = agent_up(&d, &source).await;
            last = seen;
            if up {
                return (true, last);
            }
            tokio::time::sleep(interval).await;
        }
        (false, last)
    };
    tokio::pin!(console, agent);
    let (mut console_seen, mut agent_seen): (Option<String>, Option<String>) = (None, None);
    let mut console_done = false;
    let signal = loop {
        tokio::select! {
            c = &mut console, if !console_done => {
                console_done = true;
                match c {
                    Ok(w) if w.reached => break Some(format!("console: login prompt `{}`", w.matched.unwrap_or_default().trim())),
                    Ok(w) => console_seen = Some(format!("console: no login prompt (last line `{}`)", w.last_line.trim())),
                    Err(e) => console_seen = Some(format!("console: {}", e.chain())),
                }
                if !has_agent {
                    break None;
                }
            }
            (up, seen) = &mut agent => {
                if up {
                    break Some(seen);
                }
                agent_seen = Some(seen);
                if console_done {
                    break None;
                }
            }
            _ = tokio::time::sleep(timeout.saturating_sub(started.elapsed())) => break None,
        }
    };
    let waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let seen: Vec<String> = console_seen.into_iter().chain(agent_seen).collect();
    let ev = json!({ "signal": signal, "observed": seen, "waited_ms": waited_ms, "pattern": pattern });
    match signal {
        Some(sig) => StepResult::ok(
            format!("OS up after {:.1} s ({sig})", waited_ms as f64 / 1000.0),
            json!({ "reached": true, "signal": sig }),
            ev,
        ),
        None => StepResult::failed(
            format!("OS not up within {}: {}", humantime::format_duration(timeout), seen.join("; ")),
            json!({ "reached": false }),
            ev,
        ),
    }
}

/// The fault that started the run (or `kind`, or every sweep rule for a run started by hand), evaluated
/// again on a fresh observation of the target; only entries logged since the run began count.
pub(crate) async fn fault_cleared(ctx: &StepCtx<'_>, l: &Lifeline, kind: Option<&str>) -> StepResult {
    let run = l.run_record(ctx.run_id).await.ok().flatten();
    let cause = run
        .as_ref()
        .and_then(|r| r.vars.get("fault-kind").and_then(Value::as_str).map(str::to_owned))
        .filter(|k| !k.is_empty());
    let since = run.as_ref().and_then(|r| chrono::DateTime::from_timestamp_millis(r.created_at_ms));
    let kind = kind.map(str::to_owned).or(cause);
    if kind.as_deref() == Some(AGENT_REPORT) {
        // The agent's report is that rule's observation: it must pass now.
        let r = crate::steps::verify(ctx, l, false).await;
        let message = format!("agent-report: {}", r.message);
        return if r.ok {
            StepResult::ok(format!("cleared: {message}"), json!({ "cleared": true }), r.evidence)
        } else {
            StepResult::failed(format!("still failing: {message}"), json!({ "cleared": false }), r.evidence)
        };
    }
    let kinds: Vec<&str> = kind.as_deref().into_iter().collect();
    match l.fault_recheck(ctx.target, &kinds, since).await {
        Ok(r) => recheck_result(&r),
        Err(e) => StepResult::error(format!("re-observing {}: {}", ctx.target, e.chain())),
    }
}

fn recheck_result(r: &Recheck) -> StepResult {
    let ev = serde_json::to_value(r).unwrap_or_default();
    let what = r.kinds.join(", ");
    if r.cleared {
        StepResult::ok(format!("cleared on a fresh observation: {what}"), json!({ "cleared": true }), ev)
    } else {
        let left = r.remaining.iter().map(|f| format!("{}: {}", f.kind, f.message)).collect::<Vec<_>>();
        StepResult::failed(format!("still there: {}", left.join("; ")), json!({ "cleared": false }), ev)
    }
}
